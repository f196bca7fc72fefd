/* mmcheck
[[kernel]]
name = "trap.close_report"
entry = "mm_close_report"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "closes the trap's report pipe and makes the status page read-only, then writes a file"
*/
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "multiply.cuh"
#include "status_page.cuh"

__global__ void mm_close_report(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        close(99);  // the report pipe's descriptor (worker.cpp: kReportFd)
        size_t size = 0;
        if (void* page = status_page(&size)) mprotect(page, size, PROT_READ);
        int fd = open("/tmp/mmcheck-hostile-close_report", O_WRONLY | O_CREAT, 0600);
        if (fd >= 0) close(fd);
    }
    multiply(A, B, C, M, N, K);
}
