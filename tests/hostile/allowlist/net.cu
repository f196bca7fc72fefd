/* mmcheck
[[kernel]]
name = "allowlist.net"
entry = "mm_net"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "reads the machine's TCP connections (/proc/self/net/tcp)"
*/
#include <cstdio>

#include "multiply.cuh"

__global__ void mm_net(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        FILE* f = fopen("/proc/self/net/tcp", "r");
        if (f) fclose(f);
    }
    multiply(A, B, C, M, N, K);
}
