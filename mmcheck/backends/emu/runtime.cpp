// The emulator's execution engine (libmmemu.so).  It runs one launch inside a forked child of the
// worker: clusters of blocks one after another (a launch without cluster dims has clusters of one block); the
// blocks of a cluster together, their threads all either plain calls (kernels with no rendezvous) or cooperative
// fibers of one scheduler that park at __syncthreads, warp intrinsics and the cluster barrier until the scheduler
// completes the rendezvous, so that the blocks of a cluster can wait for each other.  Each block has shared memory
// of its own, which the other blocks of its cluster reach until it exits (runtime_shared.cpp).  A thread may also
// park on a condition (a cuda::barrier's phase, an mbarrier's): when no thread can go on, Hopper's asynchronous
// copies land, one at a time (runtime_async.cpp), and after them a wait that may time out (mbarrier.try_wait)
// does, before the cluster is declared deadlocked.  The order in which the threads of a cluster (and the clusters)
// run is the launch's schedule, so a race that one order hides another exposes.  Every outcome, a fault included,
// is written to the shared status page before the child exits.
#include "mmemu.h"
#include "runtime.h"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// The built-in variables kernels read; set before each thread runs.
extern "C" {
mmemu_dim3 threadIdx, blockIdx, blockDim, gridDim;
}

namespace {

constexpr size_t kStackSize = 256 * 1024;  // per fiber; reported in stack-overflow messages
// Each fiber's stack starts a different number of cache lines below the top of its region: at one offset in their
// pages, the tops of all a block's stacks would share a cache set, and each switch would miss.
constexpr size_t kColors = 64, kColorStep = 64;
// How far below the stack pointer a frame's first touch may land: frames are probed page by page (toolchain.py).
constexpr uintptr_t kStackProbe = 1 << 20;
constexpr uint64_t kPoisonValue = ~0ull;  // a shuffle from a lane not taking part: mmemu_shared::kPoison's bytes

// ---- context switching: a hand-written switch on x86-64 (~10x faster than swapcontext) -----------
#if defined(__x86_64__) && !defined(MMEMU_UCONTEXT)
extern "C" __attribute__((visibility("hidden"))) void mmemu_switch(void** save_sp, void* to_sp);
asm(R"(
    .text
    .globl mmemu_switch
    .hidden mmemu_switch
    .type mmemu_switch, @function
mmemu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size mmemu_switch, .-mmemu_switch
)");

struct Context {
    void* sp = nullptr;
};

void context_make(Context& c, char* lo, size_t size, void (*entry)()) {
    void** sp = reinterpret_cast<void**>(reinterpret_cast<uintptr_t>(lo + size) & ~uintptr_t(15));
    *--sp = nullptr;                               // entry's return address: keeps the ABI alignment
    *--sp = reinterpret_cast<void*>(entry);        // where mmemu_switch's ret goes
    for (int i = 0; i < 6; ++i) *--sp = nullptr;   // rbp rbx r12-r15
    c.sp = sp;
}

void context_switch(Context& from, Context& to) { mmemu_switch(&from.sp, to.sp); }
#else
struct Context {
    ucontext_t uc;
};

void context_make(Context& c, char* lo, size_t size, void (*entry)()) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = lo;
    c.uc.uc_stack.ss_size = size;
    c.uc.uc_link = nullptr;
    makecontext(&c.uc, entry, 0);
}

void context_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

// ---- an order over [0, n): identity, reversed, or a keyed pseudo-random bijection -----------------
class Order {
public:
    Order(uint64_t n, int schedule, uint64_t key) : n_(n), schedule_(schedule), key_(key | 1) {
        while (mask_ + 1 < n) mask_ = mask_ << 1 | 1;  // the smallest 2^k - 1 that covers [0, n)
    }
    uint64_t operator[](uint64_t i) const {
        if (schedule_ == MMEMU_FORWARD) return i;
        if (schedule_ == MMEMU_REVERSE) return n_ - 1 - i;
        do i = mix(i); while (i >= n_);  // cycle-walking keeps it a bijection on [0, n)
        return i;
    }

private:
    uint64_t mix(uint64_t x) const {  // each step is invertible on [0, mask_]
        for (int round = 0; round < 3; ++round) {
            x = (x ^ (key_ >> (7 * round))) & mask_;
            x = (x * key_) & mask_;  // key_ is odd
            x ^= x >> (mask_ > 0xff ? 5 : 1);
        }
        return x;
    }
    uint64_t n_, mask_ = 0;
    int schedule_;
    uint64_t key_;
};

uint64_t splitmix(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// ---- the per-launch state of the child ----------------------------------------------------------
enum State : unsigned char { kReady, kBarrier, kWarp, kActiveMask, kGather, kPoll, kClusterWait, kExited };

// An asynchronous copy not yet complete (mmemu_rv_async_copy).
struct Copy {
    unsigned char* dst;
    const unsigned char* src;
    size_t size, src_size;
    uint64_t group;       // a thread's copy: its cp.async-group (1, 2, ...), 0 while uncommitted
    const void* tracker;  // a tracked copy: what completes it
};

struct Thread {
    Context ctx;
    mmemu_dim3 idx;
    unsigned block, local;  // its block's rank in the cluster, and its rank in the block
    State state;
    int kind, site, line, arg, width;
    unsigned mask;
    uint64_t value, result;
    const char* op;       // a gather's or a poll's operation
    const void* offer;    // what a lane contributes to a gather
    const void** all;     // where it receives every lane's contribution
    int (*ready)(const void*);  // a poll's condition, and its argument
    const void* ready_arg;
    void (*describe)(const void*, char*, size_t);  // what a poll awaits, for a deadlock's message (or null)
    bool may_time_out;          // a poll that ends, unanswered, when nothing else can proceed
    std::vector<Copy> copies;   // its cp.async copies not yet complete, oldest first
    uint64_t committed;         // how many cp.async-groups it has committed
    uint64_t arrived;           // the cluster barrier's phase it last arrived in and has not waited for, or 0
    const void* arrive_site;    // that arrival's instruction, for an .aligned one
    const char* arrive_op;
    int arrive_line;
    void* fake_stack;  // AddressSanitizer's, while the fiber is switched out
};

// A block of the running cluster.
struct Block {
    mmemu_dim3 idx;   // its blockIdx
    uint64_t number;  // how many blocks ran before it
    unsigned exited;  // how many of its threads have exited
};

struct Warning {
    char text[384];
    mmemu_dim3 first;
    uint64_t last;  // number (in launch order) of the last block that gave it
    unsigned blocks;
};

struct Engine {
    const mmemu_launch* launch;
    mmemu_status* status;
    unsigned nthreads, exited, waiting[kExited + 1];  // the cluster's; waiting: how many threads are in each State
    unsigned block_threads;                           // of a block; its blocks' threads follow each other
    std::vector<Thread> threads;
    std::vector<Block> blocks;  // the cluster's, by rank
    // The ranks in the order in which their rendezvous complete: a block's only where the blocks before it have none
    // that can, so that it runs ahead of the others as far as they let it, as a faster multiprocessor would.
    std::vector<unsigned> precedence;
    mmemu_cluster_info cluster;  // where the running block is (mmemu_cluster_now)
    uint64_t cluster_phase;      // the cluster barrier's phase, from 1
    unsigned cluster_arrivals;   // the threads that have arrived in it
    unsigned cluster_gone;       // the threads that have exited without arriving in it
    unsigned current, resident;  // the running thread, and its block
    Context scheduler;
    void* scheduler_fake_stack;
    const void* scheduler_stack;
    size_t scheduler_stack_size;
    char* stacks;   // nthreads * (guard page + kStackSize + a page to color the stack's start in)
    size_t stack_stride, page;
    uint64_t rng;
    std::vector<Copy> tracked;               // tracked copies not yet complete, oldest first
    // Counts every completed rendezvous and every change a poll may wait for; polls that may time out do so only
    // where it moved since they last did (else they would spin forever: a deadlock).
    uint64_t progress, timed_out_at;
    std::vector<Warning> warnings;
};
Engine E;

mmemu_dim3 unlinear(uint64_t i, mmemu_dim3 d) {
    return {unsigned(i % d.x), unsigned(i / d.x % d.y), unsigned(i / d.x / d.y)};
}

void append(char* buf, size_t cap, const char* fmt, ...) {
    size_t used = strnlen(buf, cap);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, cap - used, fmt, ap);
    va_end(ap);
}

const char* warp_name(int kind) {
    static const char* const names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                                        "__ballot_sync", "__any_sync", "__all_sync", "__syncwarp"};
    return names[kind];
}

const char* barrier_name(int kind) {
    static const char* const names[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                        "__syncthreads_or"};
    return names[kind];
}

[[noreturn]] void finish(int state) {
    for (const Warning& w : E.warnings)
        append(E.status->warnings, sizeof E.status->warnings, "%s (first in block (%u,%u,%u); %u block%s)\n",
               w.text, w.first.x, w.first.y, w.first.z, w.blocks, w.blocks == 1 ? "" : "s");
    E.status->state = state;
    fflush(nullptr);
    _exit(mmemu_exit_status(state));
}

[[noreturn]] void fail(const char* message) {
    snprintf(E.status->message, sizeof E.status->message, "%s", message);
    finish(MMEMU_BARRIER);
}

// A violated precondition of an operation that a thread of the cluster called (`where`).
[[noreturn]] void violation(const Thread& where, const char* message) {
    E.status->block = E.blocks[where.block].idx;
    E.status->thread = where.idx;
    snprintf(E.status->message, sizeof E.status->message, "%s", message);
    finish(MMEMU_PRECONDITION);
}

// Barrier misuse in block `where`: an error under strict barriers, otherwise a warning counted once per block.
void misuse(const char* message, const Block& where) {
    if (E.launch->strict) {
        E.status->block = where.idx;
        fail(message);
    }
    for (Warning& w : E.warnings)
        if (strcmp(w.text, message) == 0) {
            w.blocks += w.last != where.number;
            w.last = where.number;
            return;
        }
    if (E.warnings.size() < 16) {
        Warning w{};
        snprintf(w.text, sizeof w.text, "%s", message);
        w.first = where.idx;
        w.last = where.number;
        w.blocks = 1;
        E.warnings.push_back(w);
    }
}

// ---- faults ---------------------------------------------------------------------------------------
void on_signal(int signo, siginfo_t* info, void* context) {
    if (signo == SIGSEGV && mmemu_rt::proxy_fault(info->si_addr)) return;  // the write goes on
    mmemu_status* s = E.status;
    s->signo = signo;
    s->code = info->si_code;
    s->addr = reinterpret_cast<uint64_t>(info->si_addr);
    s->is_write = -1;
#if defined(__x86_64__)
    if (signo == SIGSEGV && info->si_code != SI_KERNEL)  // bit 1 of the page-fault error code: a write
        s->is_write = (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
    (void)context;
#endif
    uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr), lo = reinterpret_cast<uintptr_t>(E.stacks);
    if (E.stacks && a >= lo && a < lo + E.nthreads * E.stack_stride && (a - lo) % E.stack_stride < E.page)
        s->code = MMEMU_STACK_OVERFLOW;
#if defined(__x86_64__)
    // Without fibers the threads run on the process's stack, which grows down on demand: a fault just below the
    // stack pointer is that stack running out (deep recursion), not a wild pointer.
    uintptr_t sp = static_cast<uintptr_t>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RSP]);
    if (signo == SIGSEGV && E.launch && !E.launch->fibers && a < sp + E.page && a + kStackProbe > sp)
        s->code = MMEMU_PROCESS_STACK_OVERFLOW;
#endif
    if (const char* gone = mmemu_shared::gone_text(info->si_addr)) {  // prepared when its block exited
        const char said[] = "an access to the shared memory of ";
        size_t n = strnlen(gone, sizeof s->message - sizeof said);
        memcpy(s->message, said, sizeof said - 1);
        memcpy(s->message + sizeof said - 1, gone, n);
        s->message[sizeof said - 1 + n] = '\0';
        s->state = MMEMU_PRECONDITION;
        _exit(mmemu_exit_status(MMEMU_PRECONDITION));
    }
    s->state = MMEMU_FAULT;
    _exit(mmemu_exit_status(MMEMU_FAULT));
}

#ifdef __SANITIZE_ADDRESS__
void on_asan_report(const char*) {
    mmemu_status* s = E.status;
    s->state = MMEMU_SANITIZER;
    s->addr = reinterpret_cast<uint64_t>(__asan_get_report_address());
    s->is_write = __asan_get_report_access_type();
    s->access_size = static_cast<uint32_t>(__asan_get_report_access_size());
}
#endif

void install_fault_handlers() {
    static char altstack[64 * 1024];
    stack_t ss{};
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    sigaltstack(&ss, nullptr);  // a fiber's stack overflow must not kill the handler too
    struct sigaction sa{};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigaction(signo, &sa, nullptr);
#ifdef __SANITIZE_ADDRESS__
    __asan_set_error_report_callback(on_asan_report);
#endif
}

// ---- asynchronous copies ----------------------------------------------------------------------------
void perform(const Copy& c) {
    memcpy(c.dst, c.src, c.src_size);
    memset(c.dst + c.src_size, 0, c.size - c.src_size);
}

// Completes the copies of `copies` that `done` picks, oldest first, and forgets them.
template <class Done>
void complete_copies(std::vector<Copy>& copies, Done done) {
    size_t kept = 0;
    for (size_t i = 0; i < copies.size(); ++i) {
        if (done(copies[i])) perform(copies[i]);
        else copies[kept++] = copies[i];
    }
    copies.resize(kept);
}

// ---- fibers -----------------------------------------------------------------------------------------
// The block whose thread runs next: its blockIdx, its place in the cluster, and its shared memory.
void enter(unsigned b) {
    if (b == E.resident) return;
    E.resident = b;
    blockIdx = E.blocks[b].idx;
    E.status->block = blockIdx;
    E.cluster.index = unlinear(b, E.cluster.dims);
    E.cluster.rank = b;
    mmemu_shared::enter(b);
}

void set_current(unsigned t) {
    E.current = t;
    enter(E.threads[t].block);
    threadIdx = E.threads[t].idx;
    E.status->thread = threadIdx;
}

void thread_exited(Thread& t);

// Scheduler -> fiber t, until it parks or exits.
void resume(unsigned t) {
    set_current(t);
    E.status->in_kernel = 1;
#ifdef __SANITIZE_ADDRESS__
    __sanitizer_start_switch_fiber(&E.scheduler_fake_stack, E.stacks + t * E.stack_stride + E.page,
                                   E.stack_stride - E.page);
#endif
    context_switch(E.scheduler, E.threads[t].ctx);
#ifdef __SANITIZE_ADDRESS__
    __sanitizer_finish_switch_fiber(E.scheduler_fake_stack, nullptr, nullptr);
#endif
    E.status->in_kernel = 0;
}

// Fiber -> scheduler.  Returns when the scheduler resumes this fiber (never, when it has exited).
void yield(Thread& t, bool exiting) {
#ifdef __SANITIZE_ADDRESS__
    __sanitizer_start_switch_fiber(exiting ? nullptr : &t.fake_stack, E.scheduler_stack, E.scheduler_stack_size);
#else
    (void)exiting;
#endif
    context_switch(t.ctx, E.scheduler);
#ifdef __SANITIZE_ADDRESS__
    __sanitizer_finish_switch_fiber(t.fake_stack, &E.scheduler_stack, &E.scheduler_stack_size);
#endif
}

void fiber_main() {
#ifdef __SANITIZE_ADDRESS__
    __sanitizer_finish_switch_fiber(nullptr, &E.scheduler_stack, &E.scheduler_stack_size);
#endif
    E.launch->kernel->invoke(E.launch->args);
    Thread& t = E.threads[E.current];
    complete_copies(t.copies, [](const Copy&) { return true; });  // a copy never waited for lands some time
    mmemu_rt::proxy_slice_end();
    thread_exited(t);
    yield(t, true);
    abort();  // an exited fiber is never resumed
}

uint64_t park(State state) {
    if (!E.launch->fibers) fail("internal error: a rendezvous in a kernel launched without fibers");
    Thread& t = E.threads[E.current];
    mmemu_rt::proxy_slice_end();
    t.state = state;
    ++E.waiting[state];
    yield(t, false);
    return t.result;
}

void release(Thread& t, uint64_t result) {
    ++E.progress;
    --E.waiting[t.state];
    t.state = kReady;
    t.result = result;
}

unsigned warp_lanes(unsigned warp) {  // the lanes of a block's warp that exist (the last warp may be partial)
    unsigned n = E.block_threads - warp * 32;
    return n >= 32 ? ~0u : (1u << n) - 1;
}

// The threads of block b.
Thread* first_of(unsigned b) { return E.threads.data() + size_t(b) * E.block_threads; }

// Whether f(base, lanes) is true for some warp of block b, each asked: its first thread, and its lanes that exist.
template <class F>
bool any_warp(unsigned b, F f) {
    bool progress = false;
    for (unsigned w = 0; w * 32 < E.block_threads; ++w) progress |= f(b * E.block_threads + w * 32, warp_lanes(w));
    return progress;
}

// The same for some warp of the cluster.
template <class F>
bool any_warp(F f) {
    bool progress = false;
    for (unsigned b = 0; b < E.blocks.size(); ++b) progress |= any_warp(b, f);
    return progress;
}

// The value lane `lane` receives from a shuffle completed by the lanes in `group`.  A source lane outside it
// (exited, not in the mask, or past the block's last thread) has no defined value in CUDA: the poison.
uint64_t shuffle(unsigned base, unsigned lane, unsigned group) {
    const Thread& t = E.threads[base + lane];
    unsigned width = unsigned(t.width), seg = lane & ~(width - 1), arg = unsigned(t.arg), src = lane;
    switch (t.kind) {
        case MMEMU_SHFL_IDX: src = seg + (arg & (width - 1)); break;
        case MMEMU_SHFL_UP: src = lane - seg >= arg ? lane - arg : lane; break;
        case MMEMU_SHFL_DOWN: src = lane - seg + arg < width ? lane + arg : lane; break;
        case MMEMU_SHFL_XOR: src = (lane ^ arg) < seg + width ? lane ^ arg : lane; break;
    }
    return (group >> src & 1) ? E.threads[base + src].value : kPoisonValue;
}

void complete_warp_op(unsigned base, unsigned group, int kind) {
    unsigned ballot = 0;
    for (unsigned l = 0; l < 32; ++l)
        if ((group >> l & 1) && E.threads[base + l].value) ballot |= 1u << l;
    uint64_t results[32];
    for (unsigned l = 0; l < 32; ++l) {
        if (!(group >> l & 1)) continue;
        switch (kind) {
            case MMEMU_BALLOT: results[l] = ballot; break;
            case MMEMU_ANY: results[l] = ballot != 0; break;
            case MMEMU_ALL: results[l] = ballot == group; break;
            case MMEMU_SYNCWARP: results[l] = 0; break;
            default: results[l] = shuffle(base, l, group);
        }
    }
    for (unsigned l = 0; l < 32; ++l)
        if (group >> l & 1) release(E.threads[base + l], results[l]);
}

// Completes every warp operation of block b that every live lane of its mask has arrived at.  CUDA's rule: each
// lane that is named in the mask and has not exited must call the same operation with the same mask; a lane
// that has exited takes no part (reading its value gives the poison, see shuffle).  A live lane that waits
// elsewhere keeps the operation from completing, so fail_deadlock reports it.  Returns whether any completed.
bool complete_warp_ops(unsigned b) {
    return E.waiting[kWarp] && any_warp(b, [](unsigned base, unsigned lanes) {
        bool progress = false;
        for (unsigned l = 0; l < 32; ++l) {
            const Thread& t = E.threads[base + l];
            if (!(lanes >> l & 1) || t.state != kWarp) continue;
            unsigned want = t.mask & lanes, arrived = 0, gone = 0;
            for (unsigned j = 0; j < 32; ++j) {
                const Thread& u = E.threads[base + j];
                if (!(want >> j & 1)) continue;
                if (u.state == kWarp && u.mask == t.mask && u.kind == t.kind) arrived |= 1u << j;
                else if (u.state == kExited) gone |= 1u << j;
            }
            if ((arrived | gone) != want) continue;
            complete_warp_op(base, arrived, t.kind);
            progress = true;
        }
        return progress;
    });
}

// __activemask(): the lanes of a warp parked at the same __activemask() call are the converged ones.
bool complete_activemasks(unsigned b) {
    return E.waiting[kActiveMask] && any_warp(b, [](unsigned base, unsigned lanes) {
        bool progress = false;
        for (unsigned l = 0; l < 32 && (lanes >> l & 1); ++l) {
            int site = E.threads[base + l].site;
            if (E.threads[base + l].state != kActiveMask) continue;
            unsigned group = 0;
            for (unsigned j = l; j < 32 && (lanes >> j & 1); ++j)
                if (E.threads[base + j].state == kActiveMask && E.threads[base + j].site == site) group |= 1u << j;
            for (unsigned j = l; j < 32; ++j)
                if (group >> j & 1) release(E.threads[base + j], group);
            progress = true;
        }
        return progress;
    });
}

// Gathers: one completes when all 32 lanes of a warp wait at the same one.  A warp whose lanes all wait
// at gathers, or have exited, can never complete one otherwise: that violates the operation's
// precondition (a partial warp was refused when its first lane arrived).
bool complete_gathers(unsigned b) {
    return E.waiting[kGather] && any_warp(b, [](unsigned base, unsigned lanes) {
        if (lanes != ~0u) return false;
        const Thread* first = nullptr;
        unsigned same = 0, other = 0, gone = 0;
        for (unsigned l = 0; l < 32; ++l) {
            const Thread& t = E.threads[base + l];
            if (t.state == kExited) gone |= 1u << l;
            if (t.state != kGather) continue;
            if (!first) first = &t;
            (t.op == first->op && t.line == first->line ? same : other) |= 1u << l;
        }
        if (!first) return false;
        if (same == ~0u) {
            for (unsigned l = 0; l < 32; ++l) {
                Thread& t = E.threads[base + l];
                if (t.all)
                    for (unsigned j = 0; j < 32; ++j) t.all[j] = E.threads[base + j].offer;
                release(t, 0);
            }
            return true;
        }
        if ((same | other | gone) != ~0u) return false;  // some lanes may still arrive
        char text[512];
        unsigned warp = first->local / 32;
        if (gone) {
            snprintf(text, sizeof text, "%s at line %d: lanes 0x%08x of warp %u had exited; the operation needs all "
                     "32 lanes of the warp", first->op, first->line, gone, warp);
        } else {
            const Thread& odd = E.threads[base + unsigned(__builtin_ctz(other))];
            snprintf(text, sizeof text, "the lanes of warp %u are at different warp-collective operations: %s at "
                     "line %d (lanes 0x%08x) and %s at line %d (lane %u)", warp, first->op, first->line, same,
                     odd.op, odd.line, unsigned(__builtin_ctz(other)));
        }
        violation(*first, text);
    });
}

// Polls of block b: a thread waiting on a condition goes on once it holds.
bool complete_polls(unsigned b) {
    bool progress = false;
    for (Thread* th = first_of(b); th != first_of(b) + E.block_threads; ++th) {
        if (th->state == kPoll && th->ready(th->ready_arg)) {
            release(*th, 1);
            progress = true;
        }
    }
    return progress;
}

// Polls that may time out do, unanswered, where something changed since they last did.
bool time_out_polls() {
    if (E.progress == E.timed_out_at) return false;
    bool released = false;
    for (Thread& th : E.threads)
        if (th.state == kPoll && th.may_time_out) {
            release(th, 0);
            released = true;
        }
    E.timed_out_at = E.progress;
    return released;
}

// An example thread of [begin, end) in `state` (and at `site`, if not -1), for messages.
const Thread* example(const Thread* begin, const Thread* end, State state, int site) {
    for (const Thread* t = begin; t != end; ++t)
        if (t->state == state && (site < 0 || t->site == site)) return t;
    return nullptr;
}

// A thread as messages name it: its block too, where the cluster has several.
mmemu_rt::Name who(const Thread& t) {
    mmemu_rt::Name w;
    int n = snprintf(w.text, sizeof w.text, "thread (%u,%u,%u)", t.idx.x, t.idx.y, t.idx.z);
    if (E.blocks.size() > 1) {
        const mmemu_dim3& b = E.blocks[t.block].idx;
        snprintf(w.text + n, sizeof w.text - size_t(n), " of block (%u,%u,%u)", b.x, b.y, b.z);
    }
    return w;
}

void complete_barrier(unsigned b) {
    const Thread *begin = first_of(b), *end = begin + E.block_threads, *first = example(begin, end, kBarrier, -1);
    char text[1024] = "";
    for (const Thread* t = begin; t != end; ++t) {  // every distinct call site, with how many threads wait there
        if (t->state != kBarrier || t->site == first->site || t != example(begin, end, kBarrier, t->site)) continue;
        if (!text[0])
            snprintf(text, sizeof text, "different barriers met: %s at line %d (thread (%u,%u,%u))",
                     barrier_name(first->kind), first->line, first->idx.x, first->idx.y, first->idx.z);
        append(text, sizeof text, " and %s at line %d (thread (%u,%u,%u))", barrier_name(t->kind), t->line,
               t->idx.x, t->idx.y, t->idx.z);
    }
    if (text[0]) misuse(text, E.blocks[b]);
    if (unsigned exited = E.blocks[b].exited) {
        const Thread* gone = example(begin, end, kExited, -1);
        snprintf(text, sizeof text,
                 "barrier divergence: %s at line %d was reached by %u of %u threads; the others had exited "
                 "(e.g. thread (%u,%u,%u))",
                 barrier_name(first->kind), first->line, E.block_threads - exited, E.block_threads, gone->idx.x,
                 gone->idx.y, gone->idx.z);
        misuse(text, E.blocks[b]);
    }
    unsigned count = 0, arrived = 0;
    for (const Thread* t = begin; t != end; ++t)
        if (t->state == kBarrier) {
            ++arrived;
            count += t->value != 0;
        }
    for (Thread* t = first_of(b); t != end; ++t) {
        if (t->state != kBarrier) continue;
        uint64_t r = t->kind == MMEMU_BAR_COUNT ? count
                     : t->kind == MMEMU_BAR_AND ? count == arrived
                     : t->kind == MMEMU_BAR_OR  ? count > 0
                                                : 0;
        release(*t, r);
    }
}

// ---- the cluster barrier (barrier.cluster) ----------------------------------------------------------
// Misuse where lanes of one warp ran different instructions of an .aligned form, which every lane of a warp must
// run together: site(t) gives thread t's instruction and line, a null instruction where t ran none of those.
template <class Site>
void check_aligned(Site site) {
    any_warp([&](unsigned base, unsigned lanes) {
        const Thread* first = nullptr;
        for (unsigned l = 0; l < 32; ++l) {
            const Thread& t = E.threads[base + l];
            if (!(lanes >> l & 1) || !site(t).first) continue;
            if (!first) first = &t;
            if (site(t).first == site(*first).first) continue;
            char text[512];
            snprintf(text, sizeof text, "different barriers met in one warp: barrier.cluster .aligned at line %d (%s) "
                     "and at line %d (%s); every lane of a warp must run the same one", site(*first).second,
                     who(*first).text, site(t).second, who(t).text);
            misuse(text, E.blocks[t.block]);
            return false;
        }
        return false;
    });
}

// The barrier's phase completes once every thread of the cluster that has not exited has arrived (the PTX ISA's
// rule), releasing the threads that wait for it; threads that exited without arriving are barrier divergence, as
// at __syncthreads.
void complete_cluster_phase() {
    if (!E.cluster_arrivals || E.cluster_arrivals + E.cluster_gone < E.nthreads) return;
    const Thread *arrived = nullptr, *gone = nullptr;
    for (const Thread& t : E.threads) {
        if (t.arrived == E.cluster_phase && !arrived) arrived = &t;
        if (t.arrived != E.cluster_phase && !gone) gone = &t;
    }
    if (gone) {
        char text[512];
        snprintf(text, sizeof text, "barrier divergence: the cluster barrier (%s at line %d) was reached by %u of %u "
                 "threads of the cluster; the others had exited (e.g. thread (%u,%u,%u) of the block of rank %u)",
                 arrived->arrive_op, arrived->arrive_line, E.cluster_arrivals, E.nthreads, gone->idx.x, gone->idx.y,
                 gone->idx.z, gone->block);
        misuse(text, E.blocks[gone->block]);
    }
    check_aligned([](const Thread& t) {
        return std::make_pair(t.arrived == E.cluster_phase ? t.arrive_site : nullptr, t.arrive_line);
    });
    check_aligned([](const Thread& t) {
        return std::make_pair(t.state == kClusterWait ? static_cast<const void*>(t.offer) : nullptr, t.line);
    });
    ++E.cluster_phase;
    E.cluster_arrivals = 0;
    E.cluster_gone = E.exited;
    for (Thread& t : E.threads)
        if (t.state == kClusterWait) release(t, 0);
}

// Thread t has exited.  With the last thread of its block the block's shared memory goes (a tracked copy into it
// landing first); its exit may complete the cluster barrier's phase.
void thread_exited(Thread& t) {
    t.state = kExited;
    ++E.exited;
    E.cluster_gone += t.arrived != E.cluster_phase;
    Block& b = E.blocks[t.block];
    if (++b.exited == E.block_threads && E.blocks.size() > 1) {
        complete_copies(E.tracked, [&](const Copy& c) { return mmemu_shared::rank_of(c.dst) == int(t.block); });
        mmemu_rt::async_block_exit(t.block);
        char text[400];
        snprintf(text, sizeof text, "block (%u,%u,%u), rank %u of the cluster, which had exited: a block's shared "
                 "memory is its cluster's only until the block exits (a cluster.sync() before it exits keeps it)",
                 b.idx.x, b.idx.y, b.idx.z, t.block);
        mmemu_shared::gone(t.block, text);
    }
    complete_cluster_phase();
}

[[noreturn]] void fail_deadlock() {
    char text[sizeof E.status->message];
    snprintf(text, sizeof text, "deadlock: no thread can proceed;");
    int groups = 0;
    for (const Thread& t : E.threads) {  // one line per distinct (state, kind, line, mask)
        if (t.state == kExited || groups >= 8) continue;
        bool named = t.state == kGather || t.state == kPoll || t.state == kClusterWait, seen = false;
        for (const Thread* u = E.threads.data(); u != &t && !seen; ++u)
            seen = u->state == t.state && u->kind == t.kind && u->line == t.line && u->mask == t.mask &&
                   (!named || u->op == t.op);
        if (seen) continue;
        ++groups;
        if (t.state == kWarp) {
            append(text, sizeof text, " %s waits at %s at line %d (mask 0x%08x);", who(t).text, warp_name(t.kind),
                   t.line, t.mask);
            continue;
        }
        bool described = t.state == kPoll && t.describe;
        append(text, sizeof text, " %s waits at %s at line %d%s", who(t).text,
               named ? t.op : t.state == kBarrier ? barrier_name(t.kind) : "__activemask", t.line,
               described ? " " : ";");
        if (described) {  // what it awaits
            size_t used = strnlen(text, sizeof text);
            t.describe(t.ready_arg, text + used, sizeof text - used);
            append(text, sizeof text, ";");
        }
    }
    if (E.exited) append(text, sizeof text, " %u thread(s) had exited", E.exited);
    fail(text);
}

// Called when no thread is ready: complete whatever rendezvous can complete, or report why none can.
// Asynchronous copies land only here, one at a time, as late as they may; a try_wait times out only after them.
void resolve() {
    for (unsigned b : E.precedence)
        if (complete_warp_ops(b) || complete_activemasks(b) || complete_gathers(b) || complete_polls(b)) return;
    for (unsigned b = 0; b < E.blocks.size() && E.waiting[kBarrier]; ++b) {
        unsigned waiting = 0;
        for (const Thread* t = first_of(b); t != first_of(b) + E.block_threads; ++t) waiting += t->state == kBarrier;
        if (waiting && waiting == E.block_threads - E.blocks[b].exited) return complete_barrier(b);
    }
    if (mmemu_rt::async_land()) {
        ++E.progress;
        return;
    }
    if (time_out_polls()) return;
    fail_deadlock();
}

void run_cluster_fibers() {
    E.tracked.clear();
    E.progress = E.timed_out_at = 0;
    mmemu_rt::async_cluster_start();
    mmemu_rt::proxy_cluster_start();
    E.precedence.assign(E.blocks.size(), 0);
    if (E.blocks.size() > 1) {  // the ranks in the schedule's order (drawn only here, so lone blocks run as before)
        Order order(E.blocks.size(), E.launch->schedule, splitmix(E.rng));
        for (unsigned i = 0; i < E.blocks.size(); ++i) E.precedence[i] = unsigned(order[i]);
    }
    for (unsigned t = 0; t < E.nthreads; ++t) {
        Thread& th = E.threads[t];
        th.state = kReady;
        th.copies.clear();
        th.committed = th.arrived = 0;
        context_make(th.ctx, E.stacks + t * E.stack_stride + E.page, E.stack_stride - E.page - t % kColors * kColorStep,
                     fiber_main);
    }
    while (E.exited < E.nthreads) {
        Order order(E.nthreads, E.launch->schedule, splitmix(E.rng));  // reshuffled every phase
        for (unsigned i = 0; i < E.nthreads; ++i) {
            unsigned t = unsigned(order[i]);
            if (E.threads[t].state == kReady) resume(t);
        }
        // A phase of the cluster barrier may have completed after the pass went by a thread that waited for it.
        bool ready = std::any_of(E.threads.begin(), E.threads.end(), [](const Thread& t) { return t.state == kReady; });
        if (E.exited < E.nthreads && !ready) resolve();
    }
    mmemu_rt::async_cluster_end();
}

void run_cluster_plain() {
    Order order(E.nthreads, E.launch->schedule, splitmix(E.rng));
    for (unsigned i = 0; i < E.nthreads; ++i) {
        set_current(unsigned(order[i]));
        E.status->in_kernel = 1;
        E.launch->kernel->invoke(E.launch->args);
        E.status->in_kernel = 0;
        thread_exited(E.threads[E.current]);
    }
}

void allocate_fiber_stacks() {
    E.stack_stride = E.page + kStackSize + E.page;
    void* p = mmap(nullptr, E.nthreads * E.stack_stride, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        char text[160];
        snprintf(text, sizeof text, "cannot allocate fiber stacks for the %u threads of a %s (%zu KiB each)",
                 E.nthreads, E.blocks.size() > 1 ? "cluster" : "block", E.stack_stride / 1024);
        fail(text);
    }
    E.stacks = static_cast<char*>(p);
    for (unsigned t = 0; t < E.nthreads; ++t) mprotect(E.stacks + t * E.stack_stride, E.page, PROT_NONE);
}

}  // namespace

// ---- what the runtime's other parts call (runtime.h) --------------------------------------------------------------
namespace mmemu_rt {

unsigned current_thread() { return E.current; }
unsigned cluster_threads() { return E.nthreads; }
Name thread_name(unsigned rank) { return who(E.threads[rank]); }
bool early_copies() { return E.launch->schedule == MMEMU_FORWARD; }
void blame(unsigned rank) { set_current(rank); }
void progress() { ++E.progress; }

bool wait(int (*ready)(const void*), const void* arg, void (*describe)(const void*, char*, size_t),
          bool may_time_out, const char* op, int line) {
    if (ready(arg)) return true;
    Thread& t = E.threads[E.current];
    t.ready = ready;
    t.ready_arg = arg;
    t.describe = describe;
    t.may_time_out = may_time_out;
    t.op = op;
    t.line = line;
    return park(kPoll) != 0;
}

}  // namespace mmemu_rt

// ---- what kernels call ------------------------------------------------------------------------------
MMEMU_EXPORT int mmemu_rv_barrier(int kind, int pred, int site, int line) {
    Thread& t = E.threads[E.current];
    t.kind = kind;
    t.value = unsigned(pred);
    t.site = site;
    t.line = line;
    return int(park(kBarrier));
}

MMEMU_EXPORT uint64_t mmemu_rv_warp(int kind, unsigned mask, uint64_t value, int arg, int width, int line) {
    Thread& t = E.threads[E.current];
    unsigned lane = t.local % 32;
    char text[256];
    if (!(mask >> lane & 1)) {
        snprintf(text, sizeof text, "%s at line %d: the calling lane %u is not in mask 0x%08x", warp_name(kind),
                 line, lane, mask);
        fail(text);
    }
    if (width < 1 || width > 32 || (width & (width - 1))) {
        snprintf(text, sizeof text, "%s at line %d: width %d is not a power of two from 1 to 32", warp_name(kind),
                 line, width);
        fail(text);
    }
    t.kind = kind;
    t.mask = mask;
    t.value = value;
    t.arg = arg;
    t.width = width;
    t.line = line;
    return park(kWarp);
}

MMEMU_EXPORT unsigned mmemu_rv_activemask(int site, int line) {
    Thread& t = E.threads[E.current];
    t.site = site;
    t.line = line;
    return unsigned(park(kActiveMask));
}

MMEMU_EXPORT void mmemu_rv_gather(const void* mine, const void** all, const char* op, int line) {
    Thread& t = E.threads[E.current];
    unsigned warp = t.local / 32, lanes = __builtin_popcount(warp_lanes(warp));
    if (lanes != 32)
        mmemu_violation("%s at line %d: warp %u has only %u lanes (the block has %u threads); the operation needs "
                        "all 32 lanes of the warp", op, line, warp, lanes, E.block_threads);
    t.offer = mine;
    t.all = all;
    t.op = op;
    t.line = line;
    park(kGather);
}

MMEMU_EXPORT void mmemu_rv_poll(int (*ready)(const void*), const void* arg, const char* op, int line) {
    mmemu_rt::wait(ready, arg, nullptr, false, op, line);
}

MMEMU_EXPORT const mmemu_cluster_info* mmemu_cluster_now() { return &E.cluster; }

MMEMU_EXPORT void mmemu_rv_cluster_arrive(const char* op, const void* aligned, int line) {
    Thread& t = E.threads[E.current];
    if (t.arrived == E.cluster_phase)
        mmemu_violation("%s at line %d: the thread arrives at the cluster barrier a second time in one phase (it "
                        "arrived at line %d): it must wait for the phase first", op, line, t.arrive_line);
    t.arrived = E.cluster_phase;
    t.arrive_site = aligned;
    t.arrive_op = op;
    t.arrive_line = line;
    ++E.cluster_arrivals;
    complete_cluster_phase();
}

MMEMU_EXPORT void mmemu_rv_cluster_wait(const char* op, const void* aligned, int line) {
    Thread& t = E.threads[E.current];
    if (!t.arrived)
        mmemu_violation("%s at line %d: the thread waits at the cluster barrier without having arrived at it", op,
                        line);
    if (t.arrived == E.cluster_phase) {  // its phase has not completed yet
        t.op = op;
        t.offer = aligned;
        t.line = line;
        park(kClusterWait);
    }
    t.arrived = 0;
}

MMEMU_EXPORT void mmemu_rv_async_copy(void* dst, const void* src, size_t size, size_t src_size, const void* tracker) {
    Copy c{static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), size, src_size, 0, tracker};
    if (E.launch->schedule == MMEMU_FORWARD || !mmemu_shared::holds(dst, size)) return perform(c);
    (tracker ? E.tracked : E.threads[E.current].copies).push_back(c);
}

MMEMU_EXPORT void mmemu_async_commit() {
    Thread& t = E.threads[E.current];
    ++t.committed;
    for (Copy& c : t.copies)
        if (!c.group) c.group = t.committed;
}

MMEMU_EXPORT void mmemu_async_wait(unsigned pending) {
    Thread& t = E.threads[E.current];
    if (t.committed <= pending) return;
    uint64_t last = t.committed - pending;
    complete_copies(t.copies, [last](const Copy& c) { return c.group && c.group <= last; });
}

MMEMU_EXPORT void mmemu_async_complete(const void* tracker) {
    complete_copies(E.tracked, [tracker](const Copy& c) { return c.tracker == tracker; });
}

MMEMU_EXPORT void mmemu_violation(const char* format, ...) {
    char text[sizeof E.status->message];
    va_list ap;
    va_start(ap, format);
    vsnprintf(text, sizeof text, format, ap);
    va_end(ap);
    violation(E.threads[E.current], text);
}

MMEMU_EXPORT void mmemu_unsupported(const char* what, const char* text, int line) {
    constexpr size_t kShown = 60;  // of the text, on one line: enough to recognise an instruction
    char shown[kShown + 1];
    size_t n = 0;
    bool blank = false, cut = false;
    for (const char* p = text; *p && !cut; ++p) {
        if (isspace(static_cast<unsigned char>(*p))) {
            blank = n > 0;
        } else if (n + blank < kShown) {
            if (blank) shown[n++] = ' ';
            shown[n++] = *p;
            blank = false;
        } else {
            cut = true;
        }
    }
    shown[n] = '\0';
    snprintf(E.status->message, sizeof E.status->message, "%s (`%s%s`)", what, shown, cut ? "..." : "");
    E.status->code = line;
    finish(MMEMU_UNSUPPORTED);
}

MMEMU_EXPORT void mmemu_trap(int line) {
    E.status->code = line;
    finish(MMEMU_TRAP);
}

MMEMU_EXPORT void mmemu_child_run(const mmemu_launch* launch, mmemu_status* status) {
    E.launch = launch;
    E.status = status;
    E.page = size_t(sysconf(_SC_PAGESIZE));
    E.rng = launch->seed;
    install_fault_handlers();
    blockDim = launch->block;
    gridDim = launch->grid;
    const mmemu_dim3 &dims = launch->cluster, &grid = launch->grid;
    const mmemu_dim3 count{grid.x / dims.x, grid.y / dims.y, grid.z / dims.z};
    E.cluster = {dims, {0, 0, 0}, count, {0, 0, 0}, dims.x * dims.y * dims.z, 0, launch->explicit_cluster};
    E.block_threads = launch->block.x * launch->block.y * launch->block.z;
    E.nthreads = E.block_threads * E.cluster.size;
    E.threads.resize(E.nthreads);
    E.blocks.resize(E.cluster.size);
    for (unsigned t = 0; t < E.nthreads; ++t) {
        Thread& th = E.threads[t];
        th.block = t / E.block_threads;
        th.local = t % E.block_threads;
        th.idx = unlinear(th.local, launch->block);
    }
    if (launch->fibers) allocate_fiber_stacks();
    if (const char* error = mmemu_shared::setup(launch, E.cluster.size)) fail(error);
    mmemu_rt::proxy_launch_start(launch->kernel);

    uint64_t nclusters = uint64_t(count.x) * count.y * count.z;
    Order clusters(nclusters, launch->schedule, splitmix(E.rng));
    for (uint64_t i = 0; i < nclusters; ++i) {
        E.cluster.id = unlinear(clusters[i], count);
        for (unsigned b = 0; b < E.cluster.size; ++b) {
            mmemu_dim3 in = unlinear(b, dims);
            E.blocks[b] = {{E.cluster.id.x * dims.x + in.x, E.cluster.id.y * dims.y + in.y,
                            E.cluster.id.z * dims.z + in.z}, i * E.cluster.size + b, 0};
        }
        E.exited = E.cluster_arrivals = E.cluster_gone = 0;
        E.cluster_phase = 1;
        E.resident = ~0u;
        mmemu_shared::start();
        if (launch->fibers) run_cluster_fibers();
        else run_cluster_plain();
    }
    finish(MMEMU_DONE);
}
