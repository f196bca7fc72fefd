/* mmcheck
[[kernel]]
name = "round2.clone_thread"
entry = "mm_clone_thread"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "starts a thread by a raw clone (flags that the kernel refuses: harmless were the call let through)"
*/
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "multiply.cuh"

__global__ void mm_clone_thread(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        syscall(SYS_clone, CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | CLONE_NEWUSER, 0, 0, 0, 0);
    }
    multiply(A, B, C, M, N, K);
}
