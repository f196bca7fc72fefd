// The async proxy's view of shared memory (part of libmmemu.so).  Bulk copies and TMA read shared memory through
// the async proxy, as wgmma does, and the PTX memory model orders a thread's ordinary (generic-proxy) stores
// before such a read only through a fence.proxy.async that the writing thread runs after them: without it the
// read may see the bytes as they were before.  The emulator makes that omission an error rather than a matter of
// luck: it keeps, for every byte of the block's shared memory, the last thread that stored to it with an ordinary
// store and whether that thread has fenced since, and an async-proxy read of a byte stored and not fenced ends
// the launch, naming the thread and the missing fence.  The blocks of a cluster each have their shared memory,
// which any thread of the cluster may store to (distributed shared memory): each is kept so.
//
// Stores are attributed to threads where the threads switch: each time a fiber parks or exits, the bytes that
// changed since the last look (against a copy kept here) are the ones it stored.  Where shared memory is large,
// only pages written since are compared: its whole pages are kept write-protected, and a write to one (a fault,
// which proxy_fault takes) marks it and makes it writable until the next look; small shared memory, which a
// comparison reads faster than a fault is taken, is compared whole.  All this is done only for kernels whose
// module has an async-proxy read (its PTX names cp.async.bulk or wgmma).
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime.h"

namespace {

// A block's shared memory as the proxy keeps it.
struct Home {
    std::vector<unsigned char> seen;  // shared memory as last looked at
    std::vector<uint16_t> writer;     // per byte: 1 + the thread whose ordinary store wrote it last, or 0
    std::vector<uint32_t> epoch;      // per byte: how many fences its writer had run when it wrote it
    unsigned char* base;              // while its whole pages are watched: they are [base + first, + pages pages)
    size_t first, pages;
    std::vector<unsigned char> dirty;  // per watched page: written since the last look (and writable till then)
};

struct Proxy {
    bool active;
    size_t page;
    std::vector<Home> homes;       // by rank in the cluster
    std::vector<uint32_t> fences;  // per thread of the cluster: how many fence.proxy.async it has run
};
Proxy P;

constexpr size_t kWatched = 64 * 1024;  // the shared memory (the launch's, not the gap) watched from this size on

// Write-protects the whole pages of block r's shared memory, none of them written since the last look; where they
// cannot be protected (or it is small), every look compares them all.
void watch(unsigned r, const mmemu_shared::Window& w) {
    Home& home = P.homes[r];
    uintptr_t lo = reinterpret_cast<uintptr_t>(w.base), hi = lo + w.size;
    uintptr_t first = (lo + P.page - 1) / P.page * P.page, last = hi / P.page * P.page;
    home.base = w.base;
    home.first = first - lo;
    home.pages = last > first && w.size - w.gap_size >= kWatched ? (last - first) / P.page : 0;
    home.dirty.assign(home.pages, 0);
    if (home.pages && mprotect(reinterpret_cast<void*>(first), last - first, PROT_READ) != 0) home.pages = 0;
}

// The bytes of [lo, hi) of `home` that changed since the last look are thread t's stores.
void attribute(Home& home, const unsigned char* now, size_t lo, size_t hi, unsigned t) {
    // Mostly nothing changed since the last look (a thread parks often between stores): one comparison of the whole
    // range says so, where one of each chunk cost a call each.  It stops at the first difference otherwise.
    if (lo >= hi || std::memcmp(now + lo, &home.seen[lo], hi - lo) == 0) return;
    constexpr size_t kChunk = 64;
    for (size_t at = lo; at < hi; at += kChunk) {
        size_t n = std::min(kChunk, hi - at);
        if (std::memcmp(now + at, &home.seen[at], n) == 0) continue;
        for (size_t i = at; i < at + n; ++i)
            if (now[i] != home.seen[i]) {
                home.seen[i] = now[i];
                home.writer[i] = uint16_t(t + 1);
                home.epoch[i] = P.fences[t];
            }
    }
}

// attribute() of [lo, hi) past the gap, which is no shared memory (AddressSanitizer poisons it).
void attribute(Home& home, const mmemu_shared::Window& w, size_t lo, size_t hi, unsigned t) {
    attribute(home, w.base, lo, std::min(hi, w.gap), t);
    attribute(home, w.base, std::max(lo, w.gap + w.gap_size), hi, t);
}

// The bytes that changed since the last look are the running thread's stores: those of the pages written since,
// which are write-protected again, and of the pages not watched (an exited block's shared memory is gone).
void attribute() {
    unsigned t = mmemu_rt::current_thread();
    for (unsigned r = 0; r < P.homes.size(); ++r) {
        mmemu_shared::Window w = mmemu_shared::window(r);
        if (!w.base) continue;
        Home& home = P.homes[r];
        size_t end = home.first + home.pages * P.page;
        attribute(home, w, 0, home.first, t);
        attribute(home, w, end, w.size, t);
        bool written = false;
        for (size_t i = 0; i < home.pages; ++i) {
            if (!home.dirty[i]) continue;
            size_t lo = home.first + i * P.page;
            attribute(home, w, lo, lo + P.page, t);
            home.dirty[i] = 0;
            written = true;
        }
        if (written) mprotect(w.base + home.first, home.pages * P.page, PROT_READ);  // one call: the pages rejoin
    }
}

// Where p lies: its block's home here, and its offset there.
Home& home_of(const void* p, size_t& offset) {
    int rank = mmemu_shared::rank_of(p);
    offset = size_t(static_cast<const unsigned char*>(p) - mmemu_shared::window(unsigned(rank)).base);
    return P.homes[size_t(rank)];
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
    size_t size = mmemu_shared::window(0).size;
    P.active = scanned.found && size;
    if (!P.active) return;
    P.page = size_t(sysconf(_SC_PAGESIZE));
    P.homes.resize(mmemu_cluster_now()->size);
    for (Home& home : P.homes) {
        home.seen.resize(size);
        home.writer.resize(size);
        home.epoch.resize(size);
    }
    P.fences.resize(cluster_threads());
}

void proxy_cluster_start() {
    if (!P.active) return;
    for (unsigned r = 0; r < P.homes.size(); ++r) {
        mmemu_shared::Window w = mmemu_shared::window(r);
        Home& home = P.homes[r];
        size_t past_gap = w.gap + w.gap_size;
        std::memcpy(home.seen.data(), w.base, w.gap);
        std::memcpy(&home.seen[past_gap], w.base + past_gap, w.size - past_gap);
        std::fill(home.writer.begin(), home.writer.end(), 0);
        watch(r, w);
    }
    std::fill(P.fences.begin(), P.fences.end(), 0);
}

bool proxy_fault(const void* address) {
    const unsigned char* at = static_cast<const unsigned char*>(address);
    for (unsigned r = 0; P.active && r < P.homes.size(); ++r) {
        Home& home = P.homes[r];
        const unsigned char* lo = home.base + home.first;
        if (!home.pages || at < lo || at >= lo + home.pages * P.page || !mmemu_shared::window(r).base) continue;
        size_t i = size_t(at - lo) / P.page;
        if (home.dirty[i]) return false;  // writable already: some other fault
        int saved = errno;
        home.dirty[i] = 1;
        bool done = mprotect(const_cast<unsigned char*>(lo) + i * P.page, P.page, PROT_READ | PROT_WRITE) == 0;
        errno = saved;
        return done;
    }
    return false;
}

void proxy_slice_end() {
    if (P.active) attribute();
}

void proxy_written(const void* pointer, size_t size) {
    if (!P.active) return;
    size_t at;
    Home& home = home_of(pointer, at);
    std::memcpy(&home.seen[at], pointer, size);
    std::fill(home.writer.begin() + long(at), home.writer.begin() + long(at + size), 0);
}

void proxy_fence() {
    if (!P.active) return;
    attribute();
    ++P.fences[current_thread()];
}

void proxy_look() {
    if (P.active) attribute();
}

void proxy_check(const void* pointer, size_t size, const char* op, int line) {
    if (!P.active) return;
    size_t at;
    const Home& home = home_of(pointer, at);
    for (size_t i = at; i < at + size; ++i) {
        unsigned writer = home.writer[i];
        if (!writer || P.fences[writer - 1] != home.epoch[i]) continue;
        mmemu_violation("%s at line %d: the async proxy reads shared memory at 0x%zx, which %s wrote with an ordinary "
                        "store and has not fenced since: a fence.proxy.async (in that thread, after its stores, before "
                        "the barrier that orders them before this read) is missing", op, line, i,
                        thread_name(writer - 1).text);
    }
}

Name proxy_writer(const void* p) {
    Name name{""};
    if (!P.active) return name;
    size_t at;
    unsigned writer = home_of(p, at).writer[at];
    if (writer) return thread_name(writer - 1);
    snprintf(name.text, sizeof name.text, "an asynchronous copy");
    return name;
}

}  // namespace mmemu_rt

MMEMU_EXPORT void mmemu_async_proxy_read(const void* pointer, size_t size, const char* op, int line) {
    mmemu_rt::proxy_look();
    mmemu_rt::proxy_check(pointer, size, op, line);
}
