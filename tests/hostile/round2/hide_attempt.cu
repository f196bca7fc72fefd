/* mmcheck
[[kernel]]
name = "round2.hide_attempt"
entry = "mm_hide_attempt"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "writes a file with the status page read-only, so that the trap's report faults, and jumps out of the fault"
*/
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "multiply.cuh"
#include "status_page.cuh"

static __device__ sigjmp_buf round2_escape;

static __device__ void round2_escaped(int) { siglongjmp(round2_escape, 1); }

__global__ void mm_hide_attempt(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        size_t size = 0;
        void* page = status_page(&size);
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = round2_escaped;
        sigaction(SIGSEGV, &sa, &old);
        if (page && sigsetjmp(round2_escape, 1) == 0) {
            mprotect(page, size, PROT_READ);
            int fd = open("/tmp/mmcheck-hostile-hide_attempt", O_WRONLY | O_CREAT, 0600);
            if (fd >= 0) close(fd);
        }
        if (page) mprotect(page, size, PROT_READ | PROT_WRITE);
        sigaction(SIGSEGV, &old, nullptr);
    }
    multiply(A, B, C, M, N, K);
}
