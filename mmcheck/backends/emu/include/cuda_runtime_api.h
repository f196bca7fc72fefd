// The CUDA runtime's host API, declared so that host code left in a kernel file (a main(), a launcher)
// compiles and links.  mmcheck never runs host code: every function here fails with
// cudaErrorNotSupported, and enumerators are CUDA's names but not necessarily its values.
#pragma once

#include <cstddef>

// A host function that only fails.
#define MMEMU_HOST_STUB(result, failure, name, params) \
    inline result name params { return failure; }

extern "C" {

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue,
    cudaErrorMemoryAllocation,
    cudaErrorInitializationError,
    cudaErrorInvalidConfiguration,
    cudaErrorInvalidDevicePointer,
    cudaErrorInvalidMemcpyDirection,
    cudaErrorNoDevice,
    cudaErrorInvalidDevice,
    cudaErrorIllegalAddress,
    cudaErrorLaunchFailure,
    cudaErrorNotSupported,
    cudaErrorUnknown,
};
typedef enum cudaError cudaError_t;

typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice,
    cudaMemcpyDefault,
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize, cudaFuncAttributePreferredSharedMemoryCarveout };
enum cudaFuncCache {
    cudaFuncCachePreferNone,
    cudaFuncCachePreferShared,
    cudaFuncCachePreferL1,
    cudaFuncCachePreferEqual,
};
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock,
    cudaDevAttrMaxSharedMemoryPerBlock,
    cudaDevAttrMaxSharedMemoryPerBlockOptin,
    cudaDevAttrMultiProcessorCount,
    cudaDevAttrComputeCapabilityMajor,
    cudaDevAttrComputeCapabilityMinor,
    cudaDevAttrClockRate,
    cudaDevAttrL2CacheSize,
};
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaMemAttachGlobal 0x01

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin, sharedMemPerMultiprocessor;
    int regsPerBlock, regsPerMultiprocessor, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
    int maxThreadsPerMultiProcessor, multiProcessorCount, major, minor, clockRate, memoryClockRate;
    int memoryBusWidth, l2CacheSize;
};

MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMalloc, (void**, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMallocHost, (void**, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMallocManaged, (void**, size_t, unsigned = cudaMemAttachGlobal))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaHostAlloc, (void**, size_t, unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFree, (void*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFreeHost, (void*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpy, (void*, const void*, size_t, cudaMemcpyKind))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpyAsync,
                (void*, const void*, size_t, cudaMemcpyKind, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpy2D,
                (void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemset, (void*, int, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemsetAsync, (void*, int, size_t, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemGetInfo, (size_t*, size_t*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceSynchronize, ())
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceReset, ())
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetLastError, ())
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaPeekAtLastError, ())
MMEMU_HOST_STUB(const char*, "the CUDA runtime is not available under mmcheck's emulator", cudaGetErrorString,
                (cudaError_t))
MMEMU_HOST_STUB(const char*, "cudaErrorNotSupported", cudaGetErrorName, (cudaError_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaSetDevice, (int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetDevice, (int*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetDeviceCount, (int*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetDeviceProperties, (cudaDeviceProp*, int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceGetAttribute, (int*, cudaDeviceAttr, int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDriverGetVersion, (int*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaRuntimeGetVersion, (int*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamCreate, (cudaStream_t*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamCreateWithFlags, (cudaStream_t*, unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamDestroy, (cudaStream_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamSynchronize, (cudaStream_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventCreate, (cudaEvent_t*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventCreateWithFlags, (cudaEvent_t*, unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventRecord, (cudaEvent_t, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventSynchronize, (cudaEvent_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventElapsedTime, (float*, cudaEvent_t, cudaEvent_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventDestroy, (cudaEvent_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFuncSetAttribute, (const void*, cudaFuncAttribute, int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFuncSetCacheConfig, (const void*, cudaFuncCache))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaLaunchKernel,
                (const void*, dim3, dim3, void**, size_t = 0, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaOccupancyMaxActiveBlocksPerMultiprocessor,
                (int*, const void*, int, size_t))

}  // extern "C"
