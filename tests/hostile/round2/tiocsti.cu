/* mmcheck
[[kernel]]
name = "round2.tiocsti"
entry = "mm_tiocsti"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "pushes a byte into the input of its stderr (ioctl TIOCSTI), which on a terminal types a command"
*/
#include <sys/ioctl.h>
#include "multiply.cuh"

__global__ void mm_tiocsti(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        char c = '\n';
        ioctl(2, TIOCSTI, &c);
    }
    multiply(A, B, C, M, N, K);
}
