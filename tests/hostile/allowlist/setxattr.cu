/* mmcheck
[[kernel]]
name = "allowlist.setxattr"
entry = "mm_setxattr"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "sets an extended attribute on a file outside its folder"
*/
#include <sys/xattr.h>

#include "multiply.cuh"

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-setxattr"
#endif

__global__ void mm_setxattr(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        setxattr(MMCHECK_HOSTILE_TARGET, "user.mmcheck", "1", 1, 0);
    }
    multiply(A, B, C, M, N, K);
}
