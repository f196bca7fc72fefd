/* mmcheck
[[kernel]]
name = "round2.arch_prctl"
entry = "mm_arch_prctl"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "asks the CPU's cpuid setting of itself (arch_prctl ARCH_GET_CPUID)"
*/
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "multiply.cuh"

__global__ void mm_arch_prctl(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        syscall(SYS_arch_prctl, ARCH_GET_CPUID, 0);
    }
    multiply(A, B, C, M, N, K);
}
