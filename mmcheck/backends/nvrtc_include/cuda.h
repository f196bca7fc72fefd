// mmcheck's <cuda.h> for NVRTC, found ahead of CUDA's, which declares the driver's host functions that NVRTC
// refuses: what device code uses of it, as the CUDA version of this NVRTC declares it (a kernel takes a tensor
// map by value, so its size and alignment are the driver's).
#pragma once

#include <stdlib.h>
#include <stdint.h>  // CUDA's includes both, so a kernel that includes it may use uint32_t

#define CUDA_VERSION (__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10)

typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef unsigned long long CUdeviceptr;

#if CUDA_VERSION >= 12000  // the tensor map came with CUDA 12, aligned to 64 bytes until CUDA 13 made it 128
#define CU_TENSOR_MAP_NUM_QWORDS 16
typedef struct CUtensorMap_st {
    alignas(CUDA_VERSION >= 13000 ? 128 : 64) cuuint64_t opaque[CU_TENSOR_MAP_NUM_QWORDS];
} CUtensorMap;
#endif
