/* mmcheck
[[kernel]]
name = "allowlist.keyctl"
entry = "mm_keyctl"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "uses the kernel's key store"
*/
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_keyctl(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0);
    }
    multiply(A, B, C, M, N, K);
}
