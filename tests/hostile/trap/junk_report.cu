/* mmcheck
[[kernel]]
name = "trap.junk_report"
entry = "mm_junk_report"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "writes bytes that are no report to the trap's report pipe and finishes normally"
*/
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_junk_report(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread() && write(99, "\x01\x02", 2) < 0) return;  // the report pipe (worker.cpp: kReportFd)
    multiply(A, B, C, M, N, K);
}
