// The blocks' shared memory (part of libmmemu.so).  A kernel's __shared__ objects are the kernel module's
// thread-local storage (shim.h): one instance per OS thread, and every fiber of a launch runs on one.  A launch of
// single blocks uses that instance for each block in turn.  The blocks of a cluster run together, and each needs
// shared memory of its own that the others can reach (distributed shared memory): each gets a home of the TLS
// block's size and layout, and the module's slot in the thread's dynamic thread vector (glibc's dtv, which
// __tls_get_addr reads) is pointed at the home of the block whose thread runs.  A thread's names of its shared
// objects thus mean its own block's home, pointers it keeps stay valid as other blocks run, and a pointer into
// another block's home reaches that block's shared memory, from any block, until that block exits: then its home
// is unmapped (PROT_NONE) until the next cluster, so that a late access faults, naming the block.
#include "runtime.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <sanitizer/asan_interface.h>  // ASAN_POISON_MEMORY_REGION does nothing without -fsanitize=address

namespace {

struct Home {
    unsigned char* base;  // where the module's TLS block would start
    bool gone;            // its block has exited (unmapped until the next cluster)
    char text[512];       // what is said of an access after, as gone() was told
};

struct Memory {
    const mmemu_launch* launch = nullptr;
    unsigned char *tls = nullptr, *end = nullptr, *dynamic = nullptr;  // the module's TLS block on this thread
    size_t modid = 0, align = 1;  // its module id (the dtv's index) and alignment
    size_t stride = 0;            // from one home to the next: whole pages
    std::vector<Home> homes;      // one per block of a cluster, by rank
    unsigned current = 0;         // the entered block
} M;

size_t total() { return size_t(M.end - M.tls); }
size_t dynamic_offset() { return size_t(M.dynamic - M.tls); }

int find_tls(dl_phdr_info* info, size_t, void* module_name) {
    if (!info->dlpi_name || strcmp(info->dlpi_name, static_cast<const char*>(module_name)) != 0) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_tls_data) {
            M.tls = static_cast<unsigned char*>(info->dlpi_tls_data);
            M.end = M.tls + info->dlpi_phdr[i].p_memsz;
            M.modid = info->dlpi_tls_modid;
            M.align = std::max<size_t>(info->dlpi_phdr[i].p_align, 1);
        }
    return 1;
}

// The module's slot in this thread's dtv (glibc: dtv_t is {void* val; void* to_free;}, found through the thread
// pointer's tcbhead_t), or null on a machine whose layout the emulator does not know.
void** tls_slot() {
#if defined(__x86_64__)
    void** dtv = static_cast<void***>(__builtin_thread_pointer())[1];  // {tcb, dtv, self, ...}
#elif defined(__aarch64__)
    void** dtv = static_cast<void***>(__builtin_thread_pointer())[0];  // {dtv, private}
#else
    void** dtv = nullptr;
#endif
    return dtv ? dtv + 2 * M.modid : nullptr;
}

// The rank whose shared memory (as mmemu_shared::holds has it) holds the `size` bytes at p, or -1.
int home_of(const void* p, size_t size) {
    const unsigned char* at = static_cast<const unsigned char*>(p);
    for (size_t r = 0; r < M.homes.size(); ++r) {
        const unsigned char* base = M.homes[r].base;
        if (at < base || at >= base + total() || size > size_t(base + total() - at)) continue;
        size_t offset = size_t(at - base), unasked = dynamic_offset() + M.launch->smem;
        if (offset + size <= unasked || offset >= dynamic_offset() + MMEMU_MAX_DYNAMIC_SMEM) return int(r);
    }
    return -1;
}

// The rank whose shared memory holds the `size` bytes at p; else the launch ends, naming op and line.  An exited
// block's is still its own: an address of it may be computed, and only an access faults.
unsigned rank_holding(const void* p, size_t size, const char* op, int line) {
    int rank = home_of(p, size);
    if (rank < 0)
        mmemu_violation("%s at line %d: %p (%zu bytes) is not in the shared memory of a block of the cluster", op,
                        line, p, size);
    return unsigned(rank);
}

void poison(unsigned char* base) {
    unsigned char* dyn_end = base + dynamic_offset() + MMEMU_MAX_DYNAMIC_SMEM;
    memset(base, mmemu_shared::kPoison, dynamic_offset());
    memset(dyn_end, mmemu_shared::kPoison, size_t(base + total() - dyn_end));
    memset(base + dynamic_offset(), mmemu_shared::kPoison, M.launch->smem);
}

// Dynamic shared memory past the launch's size is out of bounds; only AddressSanitizer can tell.
void poison_unasked(unsigned char* base) {
    ASAN_POISON_MEMORY_REGION(base + dynamic_offset() + M.launch->smem, MMEMU_MAX_DYNAMIC_SMEM - M.launch->smem);
}

const char* make_homes(unsigned blocks) {
    if (total() >= size_t(1) << MMEMU_CLUSTER_SHIFT) return "a block's shared memory is too large for a cluster";
    void** slot = tls_slot();
    if (!slot || *slot != M.tls)
        return "this machine's C library keeps thread-local storage where the emulator does not look for it, so "
               "the blocks of a cluster cannot each have shared memory of their own";
    size_t page = size_t(sysconf(_SC_PAGESIZE)), align = std::max(page, M.align);
    M.stride = (total() + align - 1) / align * align;
    void* region = mmap(nullptr, blocks * M.stride + align - page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) return "cannot allocate the cluster's shared memory";
    uintptr_t first = (reinterpret_cast<uintptr_t>(region) + align - 1) / align * align;
    for (unsigned r = 0; r < blocks; ++r) {
        Home home{reinterpret_cast<unsigned char*>(first + r * M.stride), false, ""};
        memcpy(home.base, M.tls, total());  // the TLS block's initial image (zeros, where nothing is initialized)
        poison_unasked(home.base);
        M.homes.push_back(home);
    }
    for (unsigned r = 0; r < blocks; ++r) {  // the module's own code must find each block's shared memory there
        mmemu_shared::enter(r);
        if (M.launch->kernel->dynamic_smem() != M.homes[r].base + dynamic_offset())
            return "the kernel module's thread-local storage does not follow the dtv, so the blocks of a cluster "
                   "cannot each have shared memory of their own";
    }
    return nullptr;
}

}  // namespace

namespace mmemu_shared {

const char* setup(const mmemu_launch* launch, unsigned blocks) {
    M.launch = launch;
    M.dynamic = launch->kernel->dynamic_smem();  // also makes this thread's TLS block exist
    Dl_info module;
    if (dladdr(reinterpret_cast<void*>(launch->kernel->invoke), &module))
        dl_iterate_phdr(find_tls, const_cast<char*>(module.dli_fname));
    if (!M.tls) return blocks > 1 ? "the kernel module's shared memory is not found" : nullptr;
    if (blocks > 1) return make_homes(blocks);
    M.homes.push_back(Home{M.tls, false, ""});
    poison_unasked(M.tls);
    return nullptr;
}

void enter(unsigned rank) {
    if (M.homes.size() > 1) *tls_slot() = M.homes[rank].base;
    M.current = rank;
}

void start() {
    for (Home& home : M.homes) {
        if (home.gone) mprotect(home.base, M.stride, PROT_READ | PROT_WRITE);
        home.gone = false;
        poison(home.base);
    }
}

void gone(unsigned rank, const char* text) {
    if (M.homes.size() < 2) return;
    Home& home = M.homes[rank];
    snprintf(home.text, sizeof home.text, "%s", text);
    home.gone = true;
    mprotect(home.base, M.stride, PROT_NONE);
}

bool holds(const void* p, size_t size) { return !M.homes.empty() && home_of(p, size) == int(M.current); }

int rank_of(const void* p) { return home_of(p, 1); }

const char* gone_text(const void* address) {
    const unsigned char* at = static_cast<const unsigned char*>(address);
    for (const Home& home : M.homes)
        if (home.gone && at >= home.base && at < home.base + M.stride) return home.text;
    return nullptr;
}

Window window(unsigned rank) {
    if (rank >= M.homes.size() || M.homes[rank].gone) return {nullptr, 0, 0, 0};
    return {M.homes[rank].base, total(), dynamic_offset() + M.launch->smem, MMEMU_MAX_DYNAMIC_SMEM - M.launch->smem};
}

}  // namespace mmemu_shared

// ---- what kernels call ------------------------------------------------------------------------------
MMEMU_EXPORT uint32_t mmemu_shared_address(const void* pointer, const char* op, int line) {
    if (!mmemu_shared::holds(pointer, 1))
        mmemu_violation("%s at line %d: %p is not a pointer into the block's shared memory", op, line, pointer);
    return uint32_t(static_cast<const unsigned char*>(pointer) - M.homes[M.current].base);
}

MMEMU_EXPORT void* mmemu_shared_pointer(uint64_t address, size_t size, const char* op, int line) {
    unsigned char* base = M.homes.empty() ? nullptr : M.homes[M.current].base;
    if (!base || address > total() || !mmemu_shared::holds(base + address, size))
        mmemu_violation("%s at line %d: shared address 0x%llx (%zu bytes) is outside the block's shared memory", op,
                        line, static_cast<unsigned long long>(address), size);
    return base + address;
}

MMEMU_EXPORT void* mmemu_global_pointer(uint64_t address, const char* op, int line) {
    void* pointer = reinterpret_cast<void*>(address);
    int rank = home_of(pointer, 1);
    if (rank >= 0)
        mmemu_violation("%s at line %d: %p is a pointer into %s shared memory, not a global address", op, line,
                        pointer, unsigned(rank) == M.current ? "the block's" : "another block's");
    return pointer;
}

MMEMU_EXPORT void* mmemu_cluster_map(const void* pointer, unsigned rank, const char* op, int line) {
    unsigned from = rank_holding(pointer, 1, op, line);
    if (rank >= M.homes.size())
        mmemu_violation("%s at line %d: rank %u is outside the cluster of %zu block%s", op, line, rank,
                        M.homes.size(), M.homes.size() == 1 ? "" : "s");
    return M.homes[rank].base + (static_cast<const unsigned char*>(pointer) - M.homes[from].base);
}

MMEMU_EXPORT unsigned mmemu_cluster_rank(const void* pointer, const char* op, int line) {
    return rank_holding(pointer, 1, op, line);
}

MMEMU_EXPORT uint32_t mmemu_cluster_address(const void* pointer, const char* op, int line) {
    unsigned rank = rank_holding(pointer, 1, op, line);
    return (rank + 1) << MMEMU_CLUSTER_SHIFT |
           uint32_t(static_cast<const unsigned char*>(pointer) - M.homes[rank].base);
}

MMEMU_EXPORT void* mmemu_cluster_pointer(uint64_t address, size_t size, const char* op, int line) {
    uint64_t rank = (address >> MMEMU_CLUSTER_SHIFT) - 1, offset = address & ((1u << MMEMU_CLUSTER_SHIFT) - 1);
    if (address >> MMEMU_CLUSTER_SHIFT == 0) return mmemu_shared_pointer(address, size, op, line);
    if (rank >= M.homes.size() || home_of(M.homes[rank].base + offset, size) != int(rank))
        mmemu_violation("%s at line %d: shared::cluster address 0x%llx (%zu bytes) is outside the cluster's shared "
                        "memory", op, line, static_cast<unsigned long long>(address), size);
    return M.homes[rank].base + offset;
}
