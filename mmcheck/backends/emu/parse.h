// What the device-code reduction (backends/device_code.py) parses a kernel file against: the shim, as g++
// sees it, with CUDA's keywords that the shim defines away made attributes that clang keeps, so that a
// declaration's text starts at them, __global__ marks a kernel and the others what nvcc judges device code by
// (cxx/device_rules.py).
#pragma once

#include "shim.h"

#undef __global__
#undef __device__
#undef __host__
#undef __constant__
#undef __managed__
#undef __grid_constant__
#undef __launch_bounds__
#undef __shared__
#define __global__ __attribute__((annotate("mmcheck-global")))
#define __device__ __attribute__((annotate("mmcheck-device")))
#define __host__ __attribute__((annotate("mmcheck-host")))
#define __constant__ __attribute__((annotate("mmcheck-constant")))
#define __managed__ __attribute__((annotate("mmcheck-managed")))
#define __grid_constant__ __attribute__((annotate("mmcheck-grid-constant")))
#define __launch_bounds__(...) __attribute__((annotate("mmcheck-launch-bounds")))
#define __shared__ thread_local __attribute__((annotate("mmcheck-shared"), aligned(MMEMU_SHARED_ALIGN)))
// nvcc's __noinline__ (no macro of shim.h's): clang takes inline where the file qualifies a function with it, and
// ignores it as an unknown attribute where a system header names GNU's (a repeated inline only warns).
#define __noinline__ inline
