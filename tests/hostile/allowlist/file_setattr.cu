/* mmcheck
[[kernel]]
name = "allowlist.file_setattr"
entry = "mm_file_setattr"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "changes a file's attributes with file_setattr (Linux 6.17), newer than libseccomp's tables"
*/
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-file_setattr"
#endif

__global__ void mm_file_setattr(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        unsigned long long attr[4] = {};
        syscall(469 /* file_setattr */, AT_FDCWD, MMCHECK_HOSTILE_TARGET, attr, sizeof attr, 0);
    }
    multiply(A, B, C, M, N, K);
}
