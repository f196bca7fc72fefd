/* mmcheck
[[kernel]]
name = "round2.jit_syscall"
entry = "mm_jit_syscall"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "makes a folder by a syscall instruction in a page it wrote and made executable"
*/
#include <string.h>
#include <sys/mman.h>
#include "multiply.cuh"

__global__ void mm_jit_syscall(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        // mov eax, 83 (mkdir); mov esi, 0700; syscall; ret: the path in rdi, as the caller passes it
        static const unsigned char code[] = {0xb8, 0x53, 0, 0, 0, 0xbe, 0xc0, 0x01, 0, 0, 0x0f, 0x05, 0xc3};
        void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page != MAP_FAILED) {
            memcpy(page, code, sizeof code);
            reinterpret_cast<long (*)(const char*)>(page)("/tmp/mmcheck-hostile-jit_syscall");
        }
    }
    multiply(A, B, C, M, N, K);
}
