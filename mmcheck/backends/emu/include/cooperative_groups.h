// Cooperative groups on the emulator: the thread block and its tiles, static (tiled_partition<N>) and
// dynamic (tiled_partition(parent, n)), on the shim's barrier and warp rendezvous: a block syncs as
// __syncthreads, a tile as __syncwarp with the mask of its lanes.  Tiles are aligned runs of N threads in
// the block's thread order, so a tile never straddles two warps.  The cluster (this_cluster()) is on the
// runtime's cluster barrier and distributed shared memory, as sm_90_rt.h's intrinsics are (shim.h).  Grid and
// multi-grid groups are not here: unit.py reports them as unsupported before anything is compiled.
#pragma once

#include <cstdint>  // CUDA's header brings it in: a kernel that includes only this one may use uint32_t

extern "C++" {
namespace mmemu {
namespace cg {

inline unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }

// A barrier's site tells different call sites apart; __syncthreads() numbers its sites from 0 with
// __COUNTER__, and a group's sync, a function, names its site by its caller's line, negated so the two
// never collide.
inline void block_sync(int line) { mmemu_rv_barrier(MMEMU_BAR_SYNC, 1, -line, line); }

// The lanes of the calling thread's tile of `size` threads.
inline unsigned tile_mask(unsigned size) {
    return size == 32 ? ~0u : ((1u << size) - 1) << (lane() & ~(size - 1));
}

inline void tile_sync(unsigned size, int line) { WarpOp{MMEMU_SYNCWARP, line}(tile_mask(size)); }

}  // namespace cg
}  // namespace mmemu

namespace cooperative_groups {

// A group whose kind is known only at run time: a whole block, or a tile made by tiled_partition(parent, n).
class thread_group {
public:
    unsigned long long num_threads() const { return tile_ ? tile_ : mmemu::cg::block_size(); }
    unsigned long long size() const { return num_threads(); }
    unsigned long long thread_rank() const { return tile_ ? mmemu::thread_rank() % tile_ : mmemu::thread_rank(); }
    void sync(mmemu::Line at = {__builtin_LINE()}) const {
        if (tile_) mmemu::cg::tile_sync(tile_, at.n);
        else mmemu::cg::block_sync(at.n);
    }

protected:
    explicit thread_group(unsigned tile) : tile_(tile) {}
    unsigned tile_;  // 0: the whole block; else the size of a tile (a power of two up to 32)

    friend thread_group tiled_partition(const thread_group& parent, unsigned size, mmemu::Line at);
};

class thread_block : public thread_group {
public:
    static void sync(mmemu::Line at = {__builtin_LINE()}) { mmemu::cg::block_sync(at.n); }
    static unsigned thread_rank() { return mmemu::thread_rank(); }
    static unsigned num_threads() { return mmemu::cg::block_size(); }
    static unsigned size() { return num_threads(); }
    static dim3 group_index() { return blockIdx; }
    static dim3 thread_index() { return threadIdx; }
    static dim3 dim_threads() { return blockDim; }
    static dim3 group_dim() { return blockDim; }

private:
    thread_block() : thread_group(0) {}
    friend thread_block this_thread_block();
};

inline thread_block this_thread_block() { return thread_block(); }

template <unsigned N, class Parent = void>
class thread_block_tile;

// A tile of N threads, N known at compile time: it syncs, shuffles and votes among its own lanes.
template <unsigned N>
class thread_block_tile<N, void> : public thread_group {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
                  "mmemu: the emulator's thread_block_tile<N> has N a power of two up to 32");

public:
    static constexpr unsigned long long num_threads() { return N; }
    static constexpr unsigned long long size() { return N; }
    static unsigned thread_rank() { return mmemu::thread_rank() % N; }
    unsigned meta_group_rank() const { return meta_rank_; }
    unsigned meta_group_size() const { return meta_size_; }
    void sync(mmemu::Line at = {__builtin_LINE()}) const { mmemu::cg::tile_sync(N, at.n); }

    template <class T>
    T shfl(T var, int src_rank, mmemu::Line at = {__builtin_LINE()}) const {
        return mmemu::WarpOp{MMEMU_SHFL_IDX, at.n}(mmemu::cg::tile_mask(N), var, src_rank, int(N));
    }
    template <class T>
    T shfl_up(T var, unsigned delta, mmemu::Line at = {__builtin_LINE()}) const {
        return mmemu::WarpOp{MMEMU_SHFL_UP, at.n}(mmemu::cg::tile_mask(N), var, int(delta), int(N));
    }
    template <class T>
    T shfl_down(T var, unsigned delta, mmemu::Line at = {__builtin_LINE()}) const {
        return mmemu::WarpOp{MMEMU_SHFL_DOWN, at.n}(mmemu::cg::tile_mask(N), var, int(delta), int(N));
    }
    template <class T>
    T shfl_xor(T var, unsigned lane_mask, mmemu::Line at = {__builtin_LINE()}) const {
        return mmemu::WarpOp{MMEMU_SHFL_XOR, at.n}(mmemu::cg::tile_mask(N), var, int(lane_mask), int(N));
    }
    int any(int predicate, mmemu::Line at = {__builtin_LINE()}) const {
        return int(mmemu::WarpOp{MMEMU_ANY, at.n}(mmemu::cg::tile_mask(N), predicate));
    }
    int all(int predicate, mmemu::Line at = {__builtin_LINE()}) const {
        return int(mmemu::WarpOp{MMEMU_ALL, at.n}(mmemu::cg::tile_mask(N), predicate));
    }
    // Bit i for the thread of rank i in the tile.
    unsigned ballot(int predicate, mmemu::Line at = {__builtin_LINE()}) const {
        unsigned first = mmemu::lane() & ~(N - 1);
        return mmemu::WarpOp{MMEMU_BALLOT, at.n}(mmemu::cg::tile_mask(N), predicate) >> first;
    }

protected:
    thread_block_tile(unsigned meta_rank, unsigned meta_size)
        : thread_group(N), meta_rank_(meta_rank), meta_size_(meta_size) {}

private:
    unsigned meta_rank_, meta_size_;  // which tile of the parent this is, and how many the parent has
};

// What tiled_partition<N> returns: a tile that remembers its parent's type, as CUDA's does, and converts
// to thread_block_tile<N>.
template <unsigned N, class Parent>
class thread_block_tile : public thread_block_tile<N, void> {
    thread_block_tile(unsigned meta_rank, unsigned meta_size) : thread_block_tile<N, void>(meta_rank, meta_size) {}

    template <unsigned M>
    friend thread_block_tile<M, thread_block> tiled_partition(const thread_block&);
    template <unsigned M, unsigned P, class G>
    friend thread_block_tile<M, thread_block_tile<P, G>> tiled_partition(const thread_block_tile<P, G>&);
};

template <unsigned N>
thread_block_tile<N, thread_block> tiled_partition(const thread_block&) {
    return {unsigned(mmemu::thread_rank() / N), unsigned((mmemu::cg::block_size() + N - 1) / N)};
}

template <unsigned N, unsigned P, class G>
thread_block_tile<N, thread_block_tile<P, G>> tiled_partition(const thread_block_tile<P, G>& parent) {
    static_assert(N <= P, "a tile is partitioned into smaller tiles");
    return {unsigned(parent.thread_rank() / N), unsigned(P / N)};
}

inline thread_group tiled_partition(const thread_group& parent, unsigned size, mmemu::Line at = {__builtin_LINE()}) {
    unsigned long long whole = parent.num_threads();
    if (size == 0 || size > 32 || (size & (size - 1)) || size > whole)
        mmemu_violation("cooperative_groups::tiled_partition at line %d: a tile of %u threads (of a group of %llu); "
                        "the size must be a power of two up to 32 and up to the group's", at.n, size, whole);
    return thread_group(size);
}

// The blocks of the calling thread's cluster; its threads are ranked block by block.
class cluster_group {
public:
    using arrival_token = struct {};

    static void sync(mmemu::Line at = {__builtin_LINE()}) {
        mmemu_rv_cluster_arrive("cluster.sync()", nullptr, at.n);
        mmemu_rv_cluster_wait("cluster.sync()", nullptr, at.n);
    }
    static arrival_token barrier_arrive(mmemu::Line at = {__builtin_LINE()}) {
        mmemu_rv_cluster_arrive("cluster.barrier_arrive()", nullptr, at.n);
        return {};
    }
    static void barrier_wait(mmemu::Line at = {__builtin_LINE()}) {
        mmemu_rv_cluster_wait("cluster.barrier_wait()", nullptr, at.n);
    }
    static void barrier_wait(arrival_token&&, mmemu::Line at = {__builtin_LINE()}) { barrier_wait(at); }
    static unsigned query_shared_rank(const void* addr, mmemu::Line at = {__builtin_LINE()}) {
        return mmemu_cluster_rank(addr, "cluster.query_shared_rank", at.n);
    }
    template <class T>
    static T* map_shared_rank(T* addr, int rank, mmemu::Line at = {__builtin_LINE()}) {
        return static_cast<T*>(mmemu_cluster_map(addr, unsigned(rank), "cluster.map_shared_rank", at.n));
    }
    static dim3 block_index() { return __clusterRelativeBlockIdx(); }
    static unsigned block_rank() { return __clusterRelativeBlockRank(); }
    static dim3 thread_index() {
        dim3 b = block_index();
        return dim3(b.x * blockDim.x + threadIdx.x, b.y * blockDim.y + threadIdx.y, b.z * blockDim.z + threadIdx.z);
    }
    static unsigned thread_rank() { return block_rank() * mmemu::cg::block_size() + mmemu::thread_rank(); }
    static dim3 dim_blocks() { return __clusterDim(); }
    static unsigned num_blocks() { return __clusterSizeInBlocks(); }
    static dim3 dim_threads() {
        dim3 b = dim_blocks();
        return dim3(b.x * blockDim.x, b.y * blockDim.y, b.z * blockDim.z);
    }
    static unsigned num_threads() { return num_blocks() * mmemu::cg::block_size(); }
    static unsigned size() { return num_threads(); }

private:
    cluster_group() = default;
    friend cluster_group this_cluster();
};

inline cluster_group this_cluster() { return cluster_group(); }

template <class Group>
void sync(const Group& group, mmemu::Line at = {__builtin_LINE()}) {
    group.sync(at);
}

}  // namespace cooperative_groups
}  // extern "C++"
