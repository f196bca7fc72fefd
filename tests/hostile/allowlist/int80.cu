/* mmcheck
[[kernel]]
name = "allowlist.int80"
entry = "mm_int80"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "opens a file through the i386 interface (int 0x80), from code it wrote itself"
*/
#include <cstring>
#include <sys/mman.h>

#include "multiply.cuh"

__global__ void mm_int80(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        // push rbx; mov eax, 5 (i386's open); xor ebx, ebx; xor ecx, ecx; int 0x80; pop rbx; ret
        static const unsigned char code[] = {0x53, 0xb8, 5, 0, 0, 0, 0x31, 0xdb, 0x31, 0xc9, 0xcd, 0x80, 0x5b, 0xc3};
        void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page != MAP_FAILED) { memcpy(page, code, sizeof code); reinterpret_cast<void (*)()>(page)(); }
    }
    multiply(A, B, C, M, N, K);
}
