/* mmcheck
[[kernel]]
name = "round2.sendfile"
entry = "mm_sendfile"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "copies its own source to its stdout inside the kernel (sendfile)"
*/
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>
#include "multiply.cuh"

__global__ void mm_sendfile(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        int fd = open(__FILE__, O_RDONLY);
        sendfile(1, fd, nullptr, 64);
        close(fd);
    }
    multiply(A, B, C, M, N, K);
}
