// What the parts of libmmemu.so tell each other beyond mmemu.h: the fiber runtime (runtime.cpp), the blocks' shared
// memory (runtime_shared.cpp), Hopper's asynchronous machinery (runtime_async.cpp: mbarriers, bulk copies and TMA)
// and the async proxy's view of shared memory (runtime_proxy.cpp).  Kernels never see it: they reach shared memory
// and the rest through mmemu.h's functions alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mmemu.h"

namespace mmemu_rt {

// ---- runtime.cpp ----------------------------------------------------------------------------------------------
unsigned current_thread();   // the running thread's rank in its cluster (a block's threads follow each other, x fastest)
unsigned cluster_threads();  // how many threads the cluster has
// Thread `rank` of the cluster as messages name it: "thread (x,y,z)", and its block where the cluster has several.
struct Name {
    char text[64];
};
Name thread_name(unsigned rank);
// Whether the launch's schedule completes asynchronous copies as soon as they are issued (forward), rather than
// as late as they may complete.
bool early_copies();
// Names `rank` as the thread a violation reported from now on happened in (a copy that lands in the scheduler
// fails on behalf of the thread that issued it).
void blame(unsigned rank);
// Parks the calling thread until ready(arg) holds, which another thread's progress brings about.  A wait that
// may time out (mbarrier.try_wait's time limit) also ends, returning false, once no thread of the cluster can
// otherwise proceed and nothing changed since the last such time-out; describe(arg, text, size) says in a
// deadlock's message what the wait awaits.
bool wait(int (*ready)(const void*), const void* arg, void (*describe)(const void*, char*, size_t),
          bool may_time_out, const char* op, int line);
// Something a wait may depend on changed (an mbarrier's counts): waits that timed out may time out again.
void progress();

// ---- runtime_async.cpp ----------------------------------------------------------------------------------------
// Shared memory is named by .shared::cluster addresses as mmemu_cluster_address makes them (a block's rank and
// offset), so that a block's mbarrier or tile may be another block's target.
// mbarrier objects: 8 bytes of shared memory each; `op` and `line` name the instruction in a violation.  An arrive-on
// operation (arrive_drop: `drop`; .noComplete: `no_complete`, which must not complete the phase) of `count`
// arrivals, after an expect-tx operation of `tx` bytes where tx is not 0, returns the state (the phase it arrived
// in); tx_change is an expect-tx (bytes > 0) or a complete-tx (bytes < 0).  mbarrier_wait (test_wait, try_wait)
// says whether the phase `phase` names (a state, or with `parity` a phase's parity) has completed, after waiting as
// long as anything else in the cluster proceeds.
void mbarrier_init(uint32_t address, uint32_t count, const char* op, int line);
void mbarrier_inval(uint32_t address, const char* op, int line);
uint64_t mbarrier_arrive(uint32_t address, uint32_t count, uint32_t tx, bool drop, bool no_complete, const char* op,
                         int line);
void mbarrier_tx_change(uint32_t address, int64_t bytes, const char* op, int line);
bool mbarrier_wait(uint32_t address, uint64_t phase, bool parity, const char* op, int line);
// Bulk copies (cp.async.bulk) and TMA (cp.async.bulk.tensor, of the tensor map at `map`, the box at `coords`, one
// per dimension): into shared memory completing `size` bytes (a box's bytes) on the mbarrier at `mbarrier`, or out
// of the calling block's shared memory in the issuing thread's bulk async-group.  A load with a cta mask (`ranks`,
// .multicast::cluster; 0 for none) lands in each block of the mask at the offset of `shared` in its own block,
// completing on that block's mbarrier at the offset of `mbarrier`.
void bulk_load(uint32_t shared, const void* global, uint32_t size, uint32_t mbarrier, uint16_t ranks,
               const char* op, int line);
void bulk_store(void* global, uint32_t shared, uint32_t size, const char* op, int line);
void tensor_load(uint32_t shared, const void* map, const int32_t* coords, int dims, uint32_t mbarrier,
                 uint16_t ranks, const char* op, int line);
void tensor_store(const void* map, const int32_t* coords, int dims, uint32_t shared, const char* op, int line);
void bulk_commit();                 // cp.async.bulk.commit_group
void bulk_wait(unsigned pending);   // cp.async.bulk.wait_group{.read} `pending`
void async_cluster_start();
// The oldest bulk copy into shared memory still in flight lands; false where none is.  The scheduler calls it
// when no thread can proceed: copies land as late as they may.
bool async_land();
void async_block_exit(unsigned rank);  // block `rank` exits: every copy into or out of its shared memory lands
void async_cluster_end();              // every copy still in flight lands

// ---- runtime_proxy.cpp ----------------------------------------------------------------------------------------
void proxy_launch_start(const mmemu_kernel* kernel);  // whether the kernel's module has async-proxy reads to check
void proxy_cluster_start();
// A fault at `address`: whether it was a write to a page of shared memory the proxy watches, now writable.
bool proxy_fault(const void* address);
void proxy_slice_end();  // the running thread parks or exits: its stores so far are its own
void proxy_written(const void* pointer, size_t size);  // the async proxy (or the runtime) wrote these bytes
void proxy_fence();  // fence.proxy.async by the running thread
// mmemu_async_proxy_read in two steps, for a reader of many pieces (wgmma): the running thread's stores so far
// attributed, then each piece checked.
void proxy_look();
void proxy_check(const void* pointer, size_t size, const char* op, int line);
// Who last wrote the byte at p, as of the last look: "thread (x,y,z)" for an ordinary store, "an asynchronous copy"
// where the async proxy (TMA, a bulk copy) wrote it since, and "" where the proxy does not watch the kernel.
Name proxy_writer(const void* p);

}  // namespace mmemu_rt

// ---- runtime_shared.cpp ---------------------------------------------------------------------------------------
namespace mmemu_shared {

constexpr unsigned char kPoison = 0xff;  // shared memory at a cluster's start: NaN for floats, -1 for ints

// Finds the kernel module's shared memory (its thread-local storage) and makes room for `blocks` blocks' of it;
// an error's text, or null.
const char* setup(const mmemu_launch* launch, unsigned blocks);
// The block (rank in its cluster) whose shared memory the kernel's names of it mean from now on.
void enter(unsigned rank);
// A new cluster starts: every block's shared memory is there again, poisoned (a GPU leaves it undefined).
void start();
// Block `rank` has exited, and its shared memory with it: what is said of an access to it after (`text`).
void gone(unsigned rank, const char* text);
// Whether the `size` bytes at p are the entered block's shared memory: the module's static __shared__ objects,
// and the dynamic shared memory the launch asked for.
bool holds(const void* p, size_t size);
// The rank whose shared memory holds p, or -1.
int rank_of(const void* p);
// For a fault at `address`: the text of gone() where it lies in an exited block's shared memory, else null.
const char* gone_text(const void* address);
// Block `rank`'s shared memory: `size` bytes from `base`, of which [gap, gap + gap_size) (the dynamic shared memory
// past the launch's size) are not the block's; base is null where the kernel has none or the block has exited.
struct Window {
    unsigned char* base;
    size_t size, gap, gap_size;
};
Window window(unsigned rank);

}  // namespace mmemu_shared
