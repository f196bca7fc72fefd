/* mmcheck
[[kernel]]
name = "allowlist.lsetxattr"
entry = "mm_lsetxattr"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "sets a trusted extended attribute on a file outside its folder, not following links"
*/
#include <sys/xattr.h>

#include "multiply.cuh"

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-lsetxattr"
#endif

__global__ void mm_lsetxattr(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        lsetxattr(MMCHECK_HOSTILE_TARGET, "trusted.mmcheck", "1", 1, 0);
    }
    multiply(A, B, C, M, N, K);
}
