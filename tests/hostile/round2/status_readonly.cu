/* mmcheck
[[kernel]]
name = "round2.status_readonly"
entry = "mm_status_readonly"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "writes a file with the status page read-only, so that the trap's report of it faults"
*/
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "multiply.cuh"
#include "status_page.cuh"

__global__ void mm_status_readonly(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        size_t size = 0;
        if (void* page = status_page(&size)) mprotect(page, size, PROT_READ);
        int fd = open("/tmp/mmcheck-hostile-status_readonly", O_WRONLY | O_CREAT, 0600);
        if (fd >= 0) close(fd);
    }
    multiply(A, B, C, M, N, K);
}
