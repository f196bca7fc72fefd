// What the kernels of this folder share: the launch's status page found as an attacker would, knowing only its
// layout (mmemu_status, which every kernel unit of the emulator sees), and rewritten.  The page is found as a
// page-aligned pointer, in the writable data of the executable that loaded the kernel, to mapped memory that
// looks as the page does at that moment.
#pragma once
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

struct ForgeSearch {
    bool (*looks_right)(const mmemu_status*);
    mmemu_status* found;
};

__device__ inline int forge_scan(dl_phdr_info* info, size_t, void* arg) {
    ForgeSearch* search = static_cast<ForgeSearch*>(arg);
    uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    for (int i = 0; i < info->dlpi_phnum && !search->found; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W)) continue;
        uintptr_t start = info->dlpi_addr + ph.p_vaddr, lo = (start + 7) & ~uintptr_t(7), hi = start + ph.p_memsz;
        for (uintptr_t at = lo; at + 8 <= hi && !search->found; at += 8) {
            uintptr_t v = *reinterpret_cast<const uintptr_t*>(at);
            if (!v || v % page || madvise(reinterpret_cast<void*>(v), sizeof(mmemu_status), MADV_NORMAL) != 0)
                continue;  // not mapped: madvise says so where a read would fault
            if (search->looks_right(reinterpret_cast<const mmemu_status*>(v)))
                search->found = reinterpret_cast<mmemu_status*>(v);
        }
    }
    return 1;  // the executable comes first; what follows is libraries
}

// The status page, where one that looks_right is found; null where none is.
__device__ inline mmemu_status* forge_find(bool (*looks_right)(const mmemu_status*)) {
    ForgeSearch search{looks_right, nullptr};
    dl_iterate_phdr(forge_scan, &search);
    return search.found;
}

// The page as it is while this thread of a launch runs.
__device__ inline bool forge_in_launch(const mmemu_status* s) {
    return s->state == MMEMU_RUNNING && s->in_kernel == 1 && s->thread.x == threadIdx.x &&
           s->thread.y == threadIdx.y && s->block.x == blockIdx.x && s->block.y == blockIdx.y;
}

// The page as it is while a module is loaded: cleared.
__device__ inline bool forge_in_load(const mmemu_status* s) {
    static const mmemu_status cleared{};
    return memcmp(s, &cleared, sizeof cleared) == 0;
}

// Rewrites the page `s` (where found) to say `state`, `code`, `signo` and `message`, and ends the process with
// `exit_status`, as a child that reported that would (0 done, 2 a fault, 3 blocked, 4 no sandbox, 7 unsupported).
__device__ inline void forge(mmemu_status* s, int state, int code, int signo, const char* message, int exit_status) {
    if (!s) return;  // not found: the kernel goes on and is judged
    s->state = state;
    s->code = code;
    s->signo = signo;
    strncpy(s->message, message, sizeof s->message - 1);
    _exit(exit_status);
}
