"""CUDA headers on the emulator: cooperative groups, a file full of host-only includes and host code, what
the headers lack reported as unsupported, and the alignment of the buffers kernels get."""

from __future__ import annotations

import numpy as np
import pytest

from mmcheck.errors import KernelFault, Unsupported

COOPERATIVE = """
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// Thread t: a neighbour's value read through shared memory after a block sync, then for its tile of 8
// and its warp: ranks, shuffles, votes and reductions; and a tile of `dynamic` threads made at run time.
__global__ void k(const int* A, const int* B, int* C, int dynamic) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ int s[64];
    unsigned t = block.thread_rank();
    s[t] = A[t];
    block.sync();
    int v = s[(t + 1) % block.size()];
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    auto tile = cg::tiled_partition<8>(warp);
    int* out = C + 16 * (blockIdx.x * 64 + t);
    out[0] = v;
    out[1] = tile.thread_rank() | tile.meta_group_rank() << 8 | tile.meta_group_size() << 16 |
             int(tile.num_threads()) << 24;
    out[2] = tile.shfl(v, 3);
    out[3] = tile.shfl_up(v, 1);
    out[4] = tile.shfl_down(v, 2);
    out[5] = tile.shfl_xor(v, 5);
    out[6] = tile.ballot(v % 2);
    out[7] = tile.any(v == 7) | tile.all(v > 1) << 1;
    out[8] = cg::reduce(tile, v, cg::plus<int>());
    out[9] = cg::reduce(warp, v, cg::greater<int>());
    out[10] = warp.shfl_xor(v, 16);
    out[11] = warp.meta_group_rank() | warp.meta_group_size() << 8 | warp.thread_rank() << 16;
    tile.sync();
    cg::sync(warp);
    cg::thread_group group = cg::tiled_partition(block, dynamic);  // the dynamic tile
    group.sync();
    out[12] = int(group.thread_rank() | group.size() << 8);
    dim3 index = block.group_index(), thread = block.thread_index(), threads = block.dim_threads();
    out[13] = index.x | thread.x << 8 | threads.x << 16;
    out[14] = block.num_threads();
    cg::sync(block);
    s[t] = 0;  // after the last sync: no thread still reads s
}
"""


@pytest.fixture(scope="module")
def cooperative(build):
    return build(COOPERATIVE, params=("A", "B", "C", "M:int"))


def test_cooperative_groups(emu, run_kernel, cooperative):
    a = np.random.default_rng(3).integers(1, 10, 64).astype(np.int32)
    i = np.arange(128)  # the thread across both blocks; t within its block
    t = i % 64
    v = a[(t + 1) % 64]
    lane8, lane = i % 8, i % 32
    base8, base32 = i - lane8, i - lane
    for schedule in cooperative.schedules:
        got = run_kernel(emu, cooperative, [a, a, np.zeros(128 * 16, np.int32), np.int32(4)], 2, 64,
                         schedule=schedule)[2].reshape(128, 16)
        ballots = [sum(1 << j for j in range(8) if v[b + j] % 2) for b in base8]
        want = [v, lane8 | lane // 8 << 8 | 4 << 16 | 8 << 24, v[base8 + 3],
                np.where(lane8 >= 1, v[i - 1], v), np.where(lane8 < 6, v[(i + 2) % 128], v), v[base8 + (lane8 ^ 5)],
                ballots, [any(v[b:b + 8] == 7) | all(v[b:b + 8] > 1) << 1 for b in base8],
                [v[b:b + 8].sum() for b in base8], [v[b:b + 32].max() for b in base32],
                v[base32 + (lane ^ 16)], t // 32 | 2 << 8 | lane << 16, t % 4 | 4 << 8,
                i // 64 | t << 8 | 64 << 16, np.full(128, 64)]
        for column, expected in enumerate(want):
            np.testing.assert_array_equal(got[:, column], expected, err_msg=f"{schedule}: column {column}")


def test_a_dynamic_tile_of_a_bad_size_is_a_fault(emu, run_kernel, cooperative):
    a = np.ones(64, np.int32)
    line = next(i for i, text in enumerate(cooperative.spec.source.splitlines(), 1) if "// the dynamic tile" in text)
    with pytest.raises(KernelFault, match=rf"cooperative_groups::tiled_partition at line {line}: a tile of 48 "
                                          r"threads \(of a group of 64\); the size must be a power of two up to 32"):
        run_kernel(emu, cooperative, [a, a, np.zeros(64 * 16, np.int32), np.int32(48)], 1, 64)


# A plain kernel file is compiled inside extern "C" (compile.py's unit_source, as PyCUDA does), where a C++
# library header such as <algorithm> fails, under nvcc as under g++: the plain variant (PLAIN) leaves it out.
HOST = """
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cassert>
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <mma.h>
#ifdef PLAIN
typedef float T;
#else
#include <algorithm>
template <typename T>
#endif
__global__ void scale(const T* A, const T* B, T* C, int M) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(A[i] >= 0);
    C[i] = max(A[i], B[i]) * T(M);
}

// Host code as a benchmark file has it; mmcheck never runs it.
void launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    scale<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
}

int main() {
    const int n = 1 << 10;
    float *a, *b, *c;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc((void**)&b, n * sizeof(float));
    cudaMallocManaged(&c, n * sizeof(float));
    cudaMemcpy(a, b, n * sizeof(float), cudaMemcpyDeviceToDevice);
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) printf("no cuBLAS\\n");
    float alpha = 1, beta = 0;
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, 32, 32, 32, &alpha, a, 32, b, 32, &beta, c, 32);
    cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 32, 32, 32, &alpha, a, CUDA_R_16F, 32, b, CUDA_R_16F, 32, &beta,
                 c, CUDA_R_32F, 32, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
    launch(a, b, c, n, 0);
    scale<<<n / 256, 256>>>(a, b, c, 2);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess) printf("%s\\n", cudaGetErrorString(error));
    cudaDeviceSynchronize();
#ifndef PLAIN
    printf("%f ms, %d\\n", ms, std::max(n, 3));
#endif
    cublasDestroy(handle);
    cudaFree(a);
    return 0;
}
"""


@pytest.fixture(scope="module", params=["template", "plain"])
def host(request, emu, spec_of, compiled):
    plain = request.param == "plain"
    spec = spec_of(HOST, entry="scale", template=None if plain else "T", params=("A", "B", "C", "M:int"))
    return compiled(emu, spec, "float32", {"PLAIN": "1"} if plain else {})


def test_host_includes_and_host_code_compile_and_the_kernel_runs(emu, run_kernel, host):
    a = np.arange(64, dtype=np.float32)
    b = np.full(64, 20, np.float32)
    c = run_kernel(emu, host, [a, b, np.zeros(64, np.float32), np.int32(3)], 2, 32)[2]
    np.testing.assert_array_equal(c, np.maximum(a, b) * 3)


def test_a_failed_assert_in_device_code_is_a_fault(emu, run_kernel, host):
    a = np.arange(64, dtype=np.float32)
    a[37] = -1
    with pytest.raises(KernelFault, match=r"abort\(\) \(a failed assert\?\), block \(1,0,0\), thread \(5,0,0\)\n"
                                          r".*Assertion `A\[i\] >= 0' failed"):
        run_kernel(emu, host, [a, a, np.zeros(64, np.float32), np.int32(3)], 2, 32)


KERNEL = 'extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
WMMA = '#include <mma.h>\nusing namespace nvcuda;\n' + KERNEL


@pytest.mark.parametrize("body, message", [
    ('extern "C" __global__ void child(float* C) {}\n' + KERNEL + '  child<<<1, 1>>>(C);  // here\n}',
     r"the emulator cannot run kernel launches from a kernel \(dynamic parallelism\) \(<<<\)"),
    (WMMA + '  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> a;  // here\n  (void)a;\n}',
     r"the emulator's WMMA has only the shapes m16n16k16, m32n8k16, m8n32k16 and m16n16k8 "
     r"\(wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major>\)"),
    (WMMA + '  wmma::fragment<wmma::accumulator, 16, 16, 16, int> c;  // here\n  (void)c;\n}',
     r"the emulator's WMMA has half or __nv_bfloat16 inputs with float or half accumulators at k = 16, and "
     r"precision::tf32 inputs with float accumulators at m16n16k8 "
     r"\(wmma::fragment<wmma::accumulator, 16, 16, 16, int>\)"),
    ('#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n' + KERNEL +
     '  C[0] = cg::coalesced_threads().size();  // here\n}',
     r"the emulator does not provide cooperative_groups::coalesced_threads"),
])
def test_what_the_headers_lack_is_unsupported_at_its_line(emu, spec_of, compiled, body, message):
    spec = spec_of(body)
    line = spec.source.count("\n", 0, spec.source.index("// here")) + 1
    with pytest.raises(Unsupported, match=rf"inline.cu:{line}: {message}$"):
        compiled(emu, spec, "float32", {})


def test_a_missing_16_bit_function_is_unsupported(build):
    with pytest.raises(Unsupported, match="the emulator does not provide __float2half_rz"):
        build('#include <cuda_fp16.h>\n' + KERNEL + '  C[0] = __half2float(__float2half_rz(A[0]));\n}')


ADDRESSES = """
#include <cstdint>
extern "C" __global__ void k(const void* A, const void* B, unsigned* C) {
    C[0] = uintptr_t(A) % 256;
    C[1] = uintptr_t(B) % 256;
    C[2] = uintptr_t(C) % 256;
}
"""


def test_buffers_are_256_byte_aligned(build, emu, run_kernel):
    kernel = build(ADDRESSES)
    for sizes in [(1, 3), (61, 255), (1000, 4097)]:
        a, b = np.ones(sizes[0], np.float32), np.ones(sizes[1], np.int8)
        c = run_kernel(emu, kernel, [a, b, np.full(3, 99, np.uint32)], 1, 1)[2]
        np.testing.assert_array_equal(c, 0, err_msg=f"sizes {sizes}")
