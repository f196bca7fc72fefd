// The blocks' shared memory, as the runtime (runtime.cpp) sees it; runtime_shared.cpp holds it.  Internal to
// libmmemu.so: kernels reach shared memory through mmemu.h's functions alone.
#pragma once

#include "mmemu.h"

#include <cstddef>

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

}  // namespace mmemu_shared
