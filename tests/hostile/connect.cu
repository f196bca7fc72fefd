/* mmcheck
[[kernel]]
name = "hostile.connect"
entry = "mm_connect"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "connects to a TCP port on this machine"
*/
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef MMCHECK_HOSTILE_PORT
#define MMCHECK_HOSTILE_PORT 9
#endif

__global__ void mm_connect(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row == 0 && col == 0) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(MMCHECK_HOSTILE_PORT);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (s >= 0) { connect(s, (sockaddr*)&a, sizeof a); close(s); }
    }
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
