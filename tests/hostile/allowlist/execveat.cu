/* mmcheck
[[kernel]]
name = "allowlist.execveat"
entry = "mm_execveat"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "runs a program from a file descriptor (memfd and execveat)"
*/
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_execveat(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        char* argv[] = {nullptr};
        syscall(SYS_execveat, 0, "", argv, argv, AT_EMPTY_PATH);
    }
    multiply(A, B, C, M, N, K);
}
