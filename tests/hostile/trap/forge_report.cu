/* mmcheck
[[kernel]]
name = "trap.forge_report"
entry = "mm_forge_report"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "writes a report of its own, well formed, to the trap's report pipe and finishes normally"
*/
#include <string.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_forge_report(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        const char what[] = "use the emulator as intended";
        char report[64];
        int nr = 0;
        memcpy(report, &nr, sizeof nr);
        memcpy(report + sizeof nr, what, sizeof what - 1);
        if (write(99, report, sizeof nr + sizeof what - 1) < 0) return;  // the report pipe (worker.cpp: kReportFd)
    }
    multiply(A, B, C, M, N, K);
}
