/* mmcheck
[[kernel]]
name = "allowlist.process_vm_readv"
entry = "mm_process_vm_readv"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "reads its parent's memory"
*/
#include <sys/uio.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_process_vm_readv(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        char b[8];
        iovec l{b, 8}, r{(void*)0x400000, 8};
        process_vm_readv(getppid(), &l, 1, &r, 1, 0);
    }
    multiply(A, B, C, M, N, K);
}
