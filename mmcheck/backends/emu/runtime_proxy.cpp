// The async proxy's view of shared memory (part of libmmemu.so).  Bulk copies and TMA read shared memory through
// the async proxy, as wgmma does, and the PTX memory model orders a thread's ordinary (generic-proxy) stores
// before such a read only through a fence.proxy.async that the writing thread runs after them: without it the
// read may see the bytes as they were before.  The emulator makes that omission an error rather than a matter of
// luck: it keeps, for every byte of the block's shared memory, the last thread that stored to it with an ordinary
// store and whether that thread has fenced since, and an async-proxy read of a byte stored and not fenced ends
// the launch, naming the thread and the missing fence.
//
// Stores are attributed to threads where the threads switch: each time a fiber parks or exits, the bytes that
// changed since the last look (against a copy kept here) are the ones it stored.  That costs a comparison of the
// block's shared memory at each switch, so it is done only for kernels whose module has an async-proxy read
// (its PTX names cp.async.bulk or wgmma).
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime.h"

namespace {

struct Proxy {
    bool active;
    mmemu_rt::Window window;
    std::vector<unsigned char> seen;  // shared memory as last looked at
    std::vector<uint16_t> writer;     // per byte: 1 + the thread whose ordinary store wrote it last, or 0
    std::vector<uint32_t> epoch;      // per byte: how many fences its writer had run when it wrote it
    std::vector<uint32_t> fences;     // per thread: how many fence.proxy.async it has run
};
Proxy P;

// The bytes of [lo, hi) that changed since the last look are thread t's stores.
void attribute(size_t lo, size_t hi, unsigned t) {
    constexpr size_t kChunk = 64;
    const unsigned char* now = P.window.base;
    for (size_t at = lo; at < hi; at += kChunk) {
        size_t n = std::min(kChunk, hi - at);
        if (std::memcmp(now + at, &P.seen[at], n) == 0) continue;
        for (size_t i = at; i < at + n; ++i)
            if (now[i] != P.seen[i]) {
                P.seen[i] = now[i];
                P.writer[i] = uint16_t(t + 1);
                P.epoch[i] = P.fences[t];
            }
    }
}

// The bytes that changed since the last look are the running thread's stores (the gap is no shared memory:
// AddressSanitizer poisons it).
void attribute() {
    unsigned t = mmemu_rt::current_thread();
    attribute(0, P.window.gap, t);
    attribute(P.window.gap + P.window.gap_size, P.window.size, t);
}

struct Scan {
    const char* module;
    bool found;
};

// Whether `needle` occurs in the `size` bytes at `at`.  AddressSanitizer's redzones lie between a module's
// constants, which this reads past; what it reads decides nothing but whether to look for async-proxy reads.
__attribute__((no_sanitize_address)) bool occurs(const char* at, size_t size, const char* needle) {
    size_t n = std::strlen(needle);
    for (size_t i = 0; i + n <= size; ++i) {
        size_t j = 0;
        while (j < n && at[i + j] == needle[j]) ++j;
        if (j == n) return true;
    }
    return false;
}

// Whether the module's constants (its segments neither writable nor executable) hold the text of an instruction
// that reads through the async proxy.
int scan(dl_phdr_info* info, size_t, void* data) {
    Scan& s = *static_cast<Scan*>(data);
    if (!info->dlpi_name || std::strcmp(info->dlpi_name, s.module) != 0) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& segment = info->dlpi_phdr[i];
        if (segment.p_type != PT_LOAD || !(segment.p_flags & PF_R) || (segment.p_flags & (PF_W | PF_X))) continue;
        const char* at = reinterpret_cast<const char*>(info->dlpi_addr + segment.p_vaddr);
        for (const char* needle : {"cp.async.bulk", "wgmma"})
            s.found = s.found || occurs(at, segment.p_filesz, needle);
    }
    return 1;
}

}  // namespace

namespace mmemu_rt {

void proxy_launch_start(const mmemu_kernel* kernel) {
    Dl_info module;
    Scan scanned{nullptr, false};
    if (dladdr(reinterpret_cast<void*>(kernel->invoke), &module) && module.dli_fname) {
        scanned.module = module.dli_fname;
        dl_iterate_phdr(scan, &scanned);
    }
    P.window = shared_window();
    P.active = scanned.found && P.window.base;
    if (!P.active) return;
    P.seen.resize(P.window.size);
    P.writer.resize(P.window.size);
    P.epoch.resize(P.window.size);
    P.fences.resize(block_threads());
}

void proxy_block_start() {
    if (!P.active) return;
    size_t past_gap = P.window.gap + P.window.gap_size;
    std::memcpy(P.seen.data(), P.window.base, P.window.gap);
    std::memcpy(&P.seen[past_gap], P.window.base + past_gap, P.window.size - past_gap);
    std::fill(P.writer.begin(), P.writer.end(), 0);
    std::fill(P.fences.begin(), P.fences.end(), 0);
}

void proxy_slice_end() {
    if (P.active) attribute();
}

void proxy_written(const void* pointer, size_t size) {
    if (!P.active) return;
    size_t at = size_t(static_cast<const unsigned char*>(pointer) - P.window.base);
    std::memcpy(&P.seen[at], pointer, size);
    std::fill(P.writer.begin() + long(at), P.writer.begin() + long(at + size), 0);
}

void proxy_fence() {
    if (!P.active) return;
    attribute();
    ++P.fences[current_thread()];
}

}  // namespace mmemu_rt

MMEMU_EXPORT void mmemu_async_proxy_read(const void* pointer, size_t size, const char* op, int line) {
    if (!P.active) return;
    attribute();
    size_t at = size_t(static_cast<const unsigned char*>(pointer) - P.window.base);
    for (size_t i = at; i < at + size; ++i) {
        unsigned writer = P.writer[i];
        if (!writer || P.fences[writer - 1] != P.epoch[i]) continue;
        mmemu_dim3 who = mmemu_rt::thread_index(writer - 1);
        mmemu_violation("%s at line %d: the async proxy reads shared memory at 0x%zx, which thread (%u,%u,%u) "
                        "wrote with an ordinary store and has not fenced since: a fence.proxy.async (in that thread, "
                        "after its stores, before the barrier that orders them before this read) is missing", op,
                        line, i, who.x, who.y, who.z);
    }
}
