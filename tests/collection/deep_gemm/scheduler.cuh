// The block scheduler of this folder's kernels, as DeepGEMM's scheduler.cuh writes it: a persistent grid (one
// block per SM) walks the output's blocks, and for a grouped GEMM finds the group whose weights a block uses.
#pragma once

#include "utils.cuh"

namespace deep_gemm {

enum class GemmType {
    Normal,
    // The groups' rows of A one after another, each group's count a multiple of BLOCK_M; grouped_layout[m] is
    // the group of row m, whose N x K weights (and their scales) the row is multiplied by.
    GroupedContiguous
};

template <GemmType kGemmType, uint32_t BLOCK_M, uint32_t BLOCK_N, uint32_t kNumNBlocksPerBand = 16>
struct Scheduler {
    int current_iter = -1;
    uint32_t num_m_blocks, num_n_blocks, num_blocks;
    const int* grouped_layout;

    __device__ __forceinline__ Scheduler(uint32_t shape_m, uint32_t shape_n, const int* grouped_layout)
        : num_m_blocks(ceil_div(shape_m, BLOCK_M)), num_n_blocks(ceil_div(shape_n, BLOCK_N)),
          num_blocks(num_m_blocks * num_n_blocks), grouped_layout(grouped_layout) {}

    // Blocks that run together share B's columns: the n-blocks come in bands of kNumNBlocksPerBand, and a band's
    // blocks run across its n-blocks first, then down the m-blocks.
    __device__ __forceinline__ void get_swizzled_block_idx(uint32_t block_idx, uint32_t& m_block_idx,
                                                           uint32_t& n_block_idx) const {
        const uint32_t blocks_per_band = kNumNBlocksPerBand * num_m_blocks;
        const uint32_t band = block_idx / blocks_per_band, first_n_block_idx = band * kNumNBlocksPerBand;
        const uint32_t band_width = min(kNumNBlocksPerBand, num_n_blocks - first_n_block_idx);
        const uint32_t in_band = block_idx - band * blocks_per_band;
        m_block_idx = in_band / band_width;
        n_block_idx = first_n_block_idx + in_band % band_width;
    }

    __device__ __forceinline__ bool get_next_block(uint32_t& m_block_idx, uint32_t& n_block_idx) {
        const uint32_t next_block_idx = (++current_iter) * gridDim.x + blockIdx.x;
        if (next_block_idx >= num_blocks)
            return false;
        get_swizzled_block_idx(next_block_idx, m_block_idx, n_block_idx);
        return true;
    }

    // The group whose weights the m-block's rows use (0 for a plain GEMM).
    __device__ __forceinline__ uint32_t get_group_idx(uint32_t m_block_idx) const {
        if constexpr (kGemmType == GemmType::GroupedContiguous)
            return static_cast<uint32_t>(__ldg(grouped_layout + m_block_idx * BLOCK_M));
        return 0;
    }
};

}  // namespace deep_gemm
