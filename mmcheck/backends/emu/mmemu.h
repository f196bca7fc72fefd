// The binary interface between the three parts of the CPU emulator:
//   kernel modules  (a user's .cu file compiled by g++ with shim.h force-included),
//   the runtime     (runtime.cpp -> libmmemu.so: scheduler, fibers, rendezvous, fault capture),
//   the worker      (worker.cpp -> mmemu-worker: buffers, module loading, one forked child per launch).
// It declares plain C types only, so that it can be pulled into a kernel's translation unit without
// bringing in any name a kernel might use.  Numbers marked "wire" are also spelled in worker.py.
#pragma once

#include <cstddef>

// <cstdint>'s types that the emulator's headers use, by the compiler's own names and in the emulator's
// namespace: nvcc declares no uint32_t nor its kin in a .cu file that does not include <cstdint>, and a kernel
// that compiles here must compile there.
namespace mmemu {
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __UINTPTR_TYPE__ uintptr_t;
}  // namespace mmemu

#define MMEMU_ABI 1
#define MMEMU_EXPORT extern "C" __attribute__((visibility("default")))
// The largest dynamic shared memory a launch may ask for: 227 KiB, the opt-in limit on sm_90.
#define MMEMU_MAX_DYNAMIC_SMEM 232448

// ---- kernel module -> runtime --------------------------------------------------------------------

struct mmemu_dim3 {
    unsigned x, y, z;
};

// One kernel parameter as g++ sees it.  kind: 'p' pointer, 'i' signed, 'u' unsigned, 'f' floating,
// 's' anything else (structs); for pointers elem_kind/elem_size describe the pointee ('v' for void); align is the
// parameter's alignment (a CUtensorMap's 64).
struct mmemu_param {  // wire: 12 bytes
    char kind, elem_kind;
    mmemu::uint16_t align;
    mmemu::uint32_t size, elem_size;
};

// What a kernel module exports, through its one visible function mmemu_kernel_info().
struct mmemu_kernel {
    unsigned abi;
    unsigned nparams;
    const mmemu_param* params;
    void (*invoke)(void* const* args);   // calls the kernel with *(P_i*)args[i]
    unsigned char* (*dynamic_smem)();    // this thread's instance of the extern __shared__ storage
};

// Block-level rendezvous kinds (the result of mmemu_rv_barrier depends on it).
enum { MMEMU_BAR_SYNC, MMEMU_BAR_COUNT, MMEMU_BAR_AND, MMEMU_BAR_OR };
// Warp-level rendezvous kinds.
enum {
    MMEMU_SHFL_IDX, MMEMU_SHFL_UP, MMEMU_SHFL_DOWN, MMEMU_SHFL_XOR,
    MMEMU_BALLOT, MMEMU_ANY, MMEMU_ALL, MMEMU_SYNCWARP,
};

// Every function that parks a thread, or whose effect the schedule decides, starts with mmemu_rv_: the Python
// side looks for that prefix in a module's dynamic symbols to decide whether the kernel needs fibers and several
// schedules.
MMEMU_EXPORT int mmemu_rv_barrier(int kind, int pred, int site, int line);
MMEMU_EXPORT mmemu::uint64_t mmemu_rv_warp(int kind, unsigned mask, mmemu::uint64_t value, int arg, int width,
                                           int line);
MMEMU_EXPORT unsigned mmemu_rv_activemask(int site, int line);
// A warp-wide exchange for warp-collective operations (op names the operation in messages): once all 32
// lanes of the warp have arrived at the same op and line, each lane receives every lane's `mine` in
// all[lane] (all may be null: a plain meeting).  A partial warp, or a lane that has exited, violates the
// operation's precondition.
MMEMU_EXPORT void mmemu_rv_gather(const void* mine, const void** all, const char* op, int line);
// Waits until ready(arg) holds, which another thread's progress brings about (a cuda::barrier's phase ending);
// op and line name the wait in a deadlock's message.
MMEMU_EXPORT void mmemu_rv_poll(int (*ready)(const void* arg), const void* arg, const char* op, int line);

// ---- shared memory and asynchronous copies -------------------------------------------------------
// A shared address (cvta.to.shared, __cvta_generic_to_shared) is an offset into the block's shared memory, so
// that 32 bits hold it as on the GPU.  Both functions end the launch in MMEMU_PRECONDITION where the pointer or
// the `size` bytes at the address are not the block's shared memory; `op` and `line` name the caller.
MMEMU_EXPORT mmemu::uint32_t mmemu_shared_address(const void* pointer, const char* op, int line);
MMEMU_EXPORT void* mmemu_shared_pointer(mmemu::uint64_t address, size_t size, const char* op, int line);
// A .global address (ld.global, st.global) as a pointer, ending the launch likewise where it points into the
// block's shared memory, which the GPU's global state space does not hold.
MMEMU_EXPORT void* mmemu_global_pointer(mmemu::uint64_t address, const char* op, int line);
// An asynchronous copy of `size` bytes to dst, the first `src_size` of them from src and the rest zeros.  It
// completes, in the schedule's choice, when issued (forward) or as late as it may: a copy tracked by `tracker`
// (a cuda::barrier) when mmemu_async_complete(tracker) is called, else (tracker null: cp.async) when the issuing
// thread waits for its cp.async-group, or exits.  A dst outside shared memory is copied at once.
MMEMU_EXPORT void mmemu_rv_async_copy(void* dst, const void* src, size_t size, size_t src_size, const void* tracker);
// cp.async.commit_group: the calling thread's uncommitted copies become its newest cp.async-group.
MMEMU_EXPORT void mmemu_async_commit(void);
// cp.async.wait_group `pending`: all but the newest `pending` cp.async-groups of the calling thread complete.
MMEMU_EXPORT void mmemu_async_wait(unsigned pending);
// Every copy tracked by `tracker` completes (the barrier's phase has).
MMEMU_EXPORT void mmemu_async_complete(const void* tracker);
// The async proxy (bulk copies, TMA, wgmma) reads the `size` bytes of shared memory at `pointer`: the launch ends
// in MMEMU_PRECONDITION where a thread wrote any of them with an ordinary store and has run no fence.proxy.async
// since (runtime_proxy.cpp); op and line name the reading instruction.
MMEMU_EXPORT void mmemu_async_proxy_read(const void* pointer, size_t size, const char* op, int line);
// cp.async (ptx.cpp): mmemu_rv_async_copy with PTX's preconditions checked (size 4, 8 or 16, src_size at most
// size, both addresses aligned to size, dst in shared memory); op and line name the caller in a violation.
MMEMU_EXPORT void mmemu_rv_cp_async(void* dst, const void* src, mmemu::uint64_t size, mmemu::uint64_t src_size,
                                    const char* op, int line);

// ---- thread-block clusters (runtime.cpp, runtime_shared.cpp) ---------------------------------------
// Where the calling thread's block lies in its cluster, and its cluster in the grid: the PTX ISA's special
// registers %cluster_nctaid (dims), %cluster_ctaid (index), %nclusterid (count), %clusterid (id),
// %cluster_nctarank (size), %cluster_ctarank (rank: the index linearized, x fastest) and %is_explicit_cluster.
struct mmemu_cluster_info {
    mmemu_dim3 dims, index, count, id;
    unsigned size, rank;
    int explicit_dims;
};
MMEMU_EXPORT const mmemu_cluster_info* mmemu_cluster_now(void);
// barrier.cluster: arrive marks the calling thread's arrival in the barrier's current phase, which completes once
// every thread of the cluster that has not exited has arrived; wait parks the thread until the phase of its last
// arrival has completed.  A second arrival in one phase, or a wait with no arrival before it, violates the
// barrier's precondition.  `aligned` names the instruction of an .aligned form (every lane of a warp must run
// the same one), null for the others; op and line name the call.
MMEMU_EXPORT void mmemu_rv_cluster_arrive(const char* op, const void* aligned, int line);
MMEMU_EXPORT void mmemu_rv_cluster_wait(const char* op, const void* aligned, int line);
// Distributed shared memory.  Each block of a cluster has its shared memory at an address of its own, which
// every block of the cluster may use until that block exits: mmemu_cluster_map gives, for a pointer into the
// shared memory of a block of the cluster, the same place in block `rank`'s (mapa, map_shared_rank), and
// mmemu_cluster_rank the rank whose shared memory holds it (getctarank, query_shared_rank).  A .shared::cluster
// address is block r's offset plus (r + 1) << MMEMU_CLUSTER_SHIFT, or below that an offset into the calling
// block's own shared memory (a .shared::cta address is one): mmemu_cluster_address makes one of a pointer,
// mmemu_cluster_pointer reads one back, checking that its `size` bytes are that block's shared memory (mbarrier's
// .shared::cluster forms, a remote arrive, find their barrier so).  A pointer or address outside the cluster's
// shared memory, or a rank outside the cluster, ends the launch in MMEMU_PRECONDITION (op and line name the
// caller); so does an access to the shared memory of a block that has exited, which faults.
#define MMEMU_CLUSTER_SHIFT 24
MMEMU_EXPORT void* mmemu_cluster_map(const void* pointer, unsigned rank, const char* op, int line);
MMEMU_EXPORT unsigned mmemu_cluster_rank(const void* pointer, const char* op, int line);
MMEMU_EXPORT mmemu::uint32_t mmemu_cluster_address(const void* pointer, const char* op, int line);
MMEMU_EXPORT void* mmemu_cluster_pointer(mmemu::uint64_t address, size_t size, const char* op, int line);

// ---- inline PTX (ptx.cpp) ------------------------------------------------------------------------
// One operand of an asm statement: an input's value, or an output's address.
struct mmemu_asm_operand {
    mmemu::uint64_t bits;
    mmemu::uint64_t pointee;  // for a pointer, the size of what it points to (an output's variable), else 0
};
// Runs an asm statement of the kernel file, which the compile unit rewrote into a call (unit.py, shim.h): its
// line, its PTX template, its constraints (one string, comma separated, outputs first) and its `count` operands.
// A statement that holds an instruction the emulator does not run ends the launch in MMEMU_UNSUPPORTED.
MMEMU_EXPORT void mmemu_rv_asm(int line, const char* text, const char* constraints, const mmemu_asm_operand* operands,
                               int count);
// cvt.rna.tf32.f32: `value` rounded to 10 fraction bits, ties away from zero (WMMA's __float_to_tf32, include/mma.h).
MMEMU_EXPORT float mmemu_round_tf32(float value);
MMEMU_EXPORT __attribute__((noreturn)) void mmemu_trap(int line);
// Ends the launch in MMEMU_PRECONDITION with a printf-formatted message.
MMEMU_EXPORT __attribute__((noreturn, format(printf, 1, 2))) void mmemu_violation(const char* format, ...);
// Ends the launch in MMEMU_UNSUPPORTED: the kernel reached a construct the emulator cannot run (`what`, such as
// "inline assembly") whose source text is `text`, at line `line` of the kernel file.
MMEMU_EXPORT __attribute__((noreturn)) void mmemu_unsupported(const char* what, const char* text, int line);

// ---- worker -> runtime ---------------------------------------------------------------------------

enum { MMEMU_FORWARD, MMEMU_REVERSE, MMEMU_SHUFFLE };  // wire: schedule codes

// How a launch ended, as the child leaves it in the shared status page.  wire
enum {
    MMEMU_RUNNING,     // never finished: the child died (signal, sanitizer exit) or was killed
    MMEMU_DONE,
    MMEMU_FAULT,       // a signal: signo, code, addr, is_write
    MMEMU_SANITIZER,   // AddressSanitizer reported addr, is_write, access_size (report on stderr)
    MMEMU_BARRIER,     // barrier / warp-collective misuse; message says what
    MMEMU_TRAP,        // __trap() at line `code`
    MMEMU_TIMEOUT,     // set by the worker, never by the child
    MMEMU_PRECONDITION,  // an operation's precondition was violated (the GPU would fault or compute garbage);
                         // message says which
    MMEMU_UNSUPPORTED,   // the kernel reached a construct the emulator cannot run: message says which, `code`
                         // is its line
    MMEMU_BLOCKED,       // the sandbox stopped a system call: message says what the kernel tried, `code` is
                         // the call's number (-1: the child could not enter the sandbox; message says why)
    MMEMU_FORGED,        // set by the worker, never by the child: the child's report is malformed or contradicts
                         // what the worker saw (the kernel's code rewrote it); message says how
};

// The exit status of a child that reports `state` (-1: none in particular); the worker believes a report only
// from a child that ended so, since the kernel's code may have rewritten the page.  AddressSanitizer exits 1.
static inline int mmemu_exit_status(int state) {
    switch (state) {
        case MMEMU_DONE: return 0;
        case MMEMU_SANITIZER: return 1;
        case MMEMU_FAULT: return 2;
        case MMEMU_BLOCKED: return 3;
        case MMEMU_BARRIER: return 4;
        case MMEMU_TRAP: return 5;
        case MMEMU_PRECONDITION: return 6;
        case MMEMU_UNSUPPORTED: return 7;
        default: return -1;
    }
}
// Extra detail for MMEMU_FAULT, in `code` when the runtime knows better than si_code.  wire
enum {
    MMEMU_STACK_OVERFLOW = 1000,          // a fiber ran past its stack, into the guard page below it
    MMEMU_PROCESS_STACK_OVERFLOW = 1001,  // a thread run on the process's own stack (no fibers) ran out of it
};

// The page a child reports on, shared with the worker.  The kernel's code runs in that child and can rewrite it:
// the worker checks it against the child's end before believing it (worker.cpp: forged).
struct mmemu_status {
    int state;
    mmemu_dim3 block, thread;  // where the child was last; kept current at every switch
    int in_kernel;             // 0 while the runtime itself runs (set-up, scheduling)
    int signo, code, is_write; // is_write: 1, 0, or -1 unknown
    mmemu::uint64_t addr;
    mmemu::uint32_t access_size;
    char message[4096];
    char warnings[4096];       // one line per distinct warning
};

struct mmemu_launch {
    const mmemu_kernel* kernel;
    void* const* args;
    mmemu_dim3 grid, block;
    mmemu_dim3 cluster;    // the blocks of a cluster run together; the grid is a multiple of it
    int explicit_cluster;  // whether the launch gave cluster dims (%is_explicit_cluster)
    size_t smem;
    int schedule;
    int fibers;  // 0: the kernel has no rendezvous, so each thread runs as a plain call
    int strict;
    mmemu::uint64_t seed;
};

// Runs a whole launch in the calling (forked) process, reporting through `status`; never returns.
MMEMU_EXPORT __attribute__((noreturn)) void mmemu_child_run(const mmemu_launch* launch, mmemu_status* status);
