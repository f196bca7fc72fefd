/* mmcheck
[[kernel]]
name = "allowlist.fchmodat2"
entry = "mm_fchmodat2"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "makes a file outside its folder world-writable with fchmodat2, which older deny-lists did not know"
*/
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-fchmodat2"
#endif

__global__ void mm_fchmodat2(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        syscall(452 /* fchmodat2 */, AT_FDCWD, MMCHECK_HOSTILE_TARGET, 0777, 0);
    }
    multiply(A, B, C, M, N, K);
}
