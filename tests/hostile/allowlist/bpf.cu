/* mmcheck
[[kernel]]
name = "allowlist.bpf"
entry = "mm_bpf"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "loads a BPF program"
*/
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_bpf(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        char attr[128] = {};
        syscall(SYS_bpf, 5, attr, sizeof attr);
    }
    multiply(A, B, C, M, N, K);
}
