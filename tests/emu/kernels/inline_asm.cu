/* mmcheck
[[kernel]]
name = "emu.asm_unreached"
entry = "mm_plain"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["cdiv(M, 16) <= 65535"]
about = "a plain kernel, in a file whose other kernel and an unused macro hold PTX"

[[kernel]]
name = "emu.asm_reached"
entry = "mm_ptx_loads"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["cdiv(M, 16) <= 65535"]
about = "loads through inline PTX, which the emulator cannot run"
*/

// Never expanded: a warp's 16x8x8 multiply-accumulate on half-precision pairs.
#define MMA_16x8x8(d, a, b, c)                                                   \
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "           \
                 "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"              \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                \
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]),                              \
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]))

__global__ void mm_plain(const float* A, const float* B, float* C, int M, int N, int K) {
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

__global__ void mm_ptx_loads(const float* A, const float* B, float* C, int M, int N, int K) {
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        float a, b;
        asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(a) : "l"(A + row * K + k));
        asm volatile("ld.global.nc.f32 %0, [%1];"
                     : "=f"(b)
                     : "l"(B + k * N + col));
        acc += a * b;
    }
    C[row * N + col] = acc;
}
