// The page where the launch's status is reported, as its kernel finds it: the one shared anonymous mapping of
// /proc/self/maps that starts writable (every buffer starts with a guard page); null where there is none.
#pragma once
#include <stdio.h>
#include <string.h>

__device__ inline void* status_page(size_t* size) {
    FILE* maps = fopen("/proc/self/maps", "r");
    char line[512];
    void* found = nullptr;
    while (maps && !found && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi, offset;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &offset) == 4 && strstr(line, "/dev/zero") &&
            strcmp(perms, "rw-s") == 0 && offset == 0) {
            found = reinterpret_cast<void*>(lo);
            *size = hi - lo;
        }
    }
    if (maps) fclose(maps);
    return found;
}
