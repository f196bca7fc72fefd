// What every HGEMM kernel of the project includes (its build puts this folder on the include path): the CUDA
// headers, the PTX macros, and the small helpers.  The kernels take half A (M x K, row-major), B (K x N,
// column-major: N rows of K) and C (M x N, row-major), with the sizes as size_t.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "ptx.h"

#define HOST_DEVICE_INLINE __device__ __host__ inline

#define WARP_SIZE 32

HOST_DEVICE_INLINE size_t div_ceil(size_t a, size_t b) { return (a + b - 1) / b; }
