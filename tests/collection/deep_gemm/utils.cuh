// What the FP8 GEMMs of this folder share, as DeepGEMM's utils.cuh holds it: assertions, integer helpers, and
// the PTX that moves data (cp.async into shared memory, ldmatrix out of it).  Where DeepGEMM's SM90 kernels copy
// tiles with TMA, these copy them with cp.async, which zero-fills a row outside the matrix as TMA does.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#define DG_STATIC_ASSERT(cond, reason) static_assert(cond, reason)

#define DG_HOST_ASSERT(cond)                                                                      \
    do {                                                                                          \
        if (not(cond)) {                                                                          \
            fprintf(stderr, "Assertion failed: %s:%d, condition: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

namespace deep_gemm {

template <typename T>
__host__ __device__ constexpr T ceil_div(T a, T b) {
    return (a + b - 1) / b;
}

// The stride of an M-major scale tensor: M rounded up to 16 bytes of floats, as a TMA descriptor wants.
__host__ __device__ constexpr uint32_t get_tma_aligned_size(uint32_t x, uint32_t element_size) {
    return ceil_div(x, 16u / element_size) * (16u / element_size);
}

__device__ __forceinline__ uint32_t get_lane_id() {
    return threadIdx.x % 32;
}

__device__ __forceinline__ uint32_t smem_ptr_to_uint(const void* ptr) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

// 16 bytes from global to shared memory, the bytes past `src_bytes` zero-filled (0: the whole chunk).
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, uint32_t src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_ptr_to_uint(smem)), "l"(gmem),
                 "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int kNumPending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kNumPending));
}

// Four 8x8 matrices of 16-bit elements (here pairs of FP8 bytes); lanes 8i .. 8i + 7 give matrix i's rows.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_ptr_to_uint(smem)));
}

}  // namespace deep_gemm
