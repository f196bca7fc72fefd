// The CUDA runtime's host API, declared so that host code left in a kernel file (a main(), a launcher, a
// CUDA-samples helper header) compiles and links.  mmcheck never runs host code: every function here fails
// with cudaErrorNotSupported.  Error codes have CUDA's values; other enumerators have CUDA's names but not
// necessarily its values.  The include guards of CUDA's own driver_types.h and cuda_runtime_api.h are
// defined, since helper headers test them to decide what to declare.
#pragma once

#define __CUDA_RUNTIME_API_H__
#define __DRIVER_TYPES_H__

#include <climits>
#include <cstddef>

// The runtime version these declarations follow.
#define CUDART_VERSION 12000
#define __CUDART_API_VERSION CUDART_VERSION

// A host function that only fails.
#define MMEMU_HOST_STUB(result, failure, name, params) \
    inline result name params { return failure; }

extern "C" {

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorCudartUnloading = 4,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidPitchValue = 12,
    cudaErrorInvalidSymbol = 13,
    cudaErrorInvalidHostPointer = 16,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInsufficientDriver = 35,
    cudaErrorMissingConfiguration = 52,
    cudaErrorInvalidDeviceFunction = 98,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidKernelImage = 200,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchTimeout = 702,
    cudaErrorPeerAccessAlreadyEnabled = 704,
    cudaErrorAssert = 710,
    cudaErrorHostMemoryAlreadyRegistered = 712,
    cudaErrorHardwareStackError = 714,
    cudaErrorIllegalInstruction = 715,
    cudaErrorMisalignedAddress = 716,
    cudaErrorInvalidPc = 718,
    cudaErrorLaunchFailure = 719,
    cudaErrorCooperativeLaunchTooLarge = 720,
    cudaErrorNotPermitted = 800,
    cudaErrorNotSupported = 801,
    cudaErrorSystemNotReady = 802,
    cudaErrorTimeout = 909,
    cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;

typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;

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
enum cudaSharedMemConfig {
    cudaSharedMemBankSizeDefault,
    cudaSharedMemBankSizeFourByte,
    cudaSharedMemBankSizeEightByte,
};
enum cudaSharedCarveout { cudaSharedmemCarveoutDefault = -1, cudaSharedmemCarveoutMaxL1 = 0,
                          cudaSharedmemCarveoutMaxShared = 100 };
enum cudaComputeMode {
    cudaComputeModeDefault,
    cudaComputeModeExclusive,
    cudaComputeModeProhibited,
    cudaComputeModeExclusiveProcess,
};
enum cudaLimit {
    cudaLimitStackSize,
    cudaLimitPrintfFifoSize,
    cudaLimitMallocHeapSize,
    cudaLimitDevRuntimeSyncDepth,
    cudaLimitDevRuntimePendingLaunchCount,
    cudaLimitMaxL2FetchGranularity,
    cudaLimitPersistingL2CacheSize,
};
enum cudaMemoryType { cudaMemoryTypeUnregistered, cudaMemoryTypeHost, cudaMemoryTypeDevice, cudaMemoryTypeManaged };
enum cudaMemoryAdvise {
    cudaMemAdviseSetReadMostly = 1,
    cudaMemAdviseUnsetReadMostly,
    cudaMemAdviseSetPreferredLocation,
    cudaMemAdviseUnsetPreferredLocation,
    cudaMemAdviseSetAccessedBy,
    cudaMemAdviseUnsetAccessedBy,
};
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock,
    cudaDevAttrMaxBlockDimX,
    cudaDevAttrMaxBlockDimY,
    cudaDevAttrMaxBlockDimZ,
    cudaDevAttrMaxGridDimX,
    cudaDevAttrMaxGridDimY,
    cudaDevAttrMaxGridDimZ,
    cudaDevAttrMaxSharedMemoryPerBlock,
    cudaDevAttrMaxSharedMemoryPerBlockOptin,
    cudaDevAttrMaxSharedMemoryPerMultiprocessor,
    cudaDevAttrTotalConstantMemory,
    cudaDevAttrWarpSize,
    cudaDevAttrMaxRegistersPerBlock,
    cudaDevAttrMaxRegistersPerMultiprocessor,
    cudaDevAttrClockRate,
    cudaDevAttrMemoryClockRate,
    cudaDevAttrGlobalMemoryBusWidth,
    cudaDevAttrL2CacheSize,
    cudaDevAttrMultiProcessorCount,
    cudaDevAttrMaxThreadsPerMultiProcessor,
    cudaDevAttrMaxBlocksPerMultiprocessor,
    cudaDevAttrComputeMode,
    cudaDevAttrConcurrentKernels,
    cudaDevAttrCooperativeLaunch,
    cudaDevAttrComputeCapabilityMajor,
    cudaDevAttrComputeCapabilityMinor,
    cudaDevAttrManagedMemory,
    cudaDevAttrUnifiedAddressing,
};
enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess,
    cudaDriverEntryPointSymbolNotFound,
    cudaDriverEntryPointVersionNotSufficent,
};

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceScheduleSpin 0x01
#define cudaDeviceScheduleYield 0x02
#define cudaDeviceScheduleBlockingSync 0x04
#define cudaDeviceMapHost 0x08
#define cudaDeviceLmemResizeToMax 0x10
#define cudaEnableDefault 0x00
#define cudaEnableLegacyStream 0x01
#define cudaEnablePerThreadDefaultStream 0x02
#define cudaCpuDeviceId ((int)-1)
#define cudaInvalidDeviceId ((int)-2)

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin, sharedMemPerMultiprocessor;
    size_t totalConstMem, memPitch, textureAlignment, reservedSharedMemPerBlock;
    int regsPerBlock, regsPerMultiprocessor, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
    int maxThreadsPerMultiProcessor, maxBlocksPerMultiProcessor, multiProcessorCount, major, minor;
    int clockRate, memoryClockRate, memoryBusWidth, l2CacheSize, persistingL2CacheMaxSize;
    int deviceOverlap, asyncEngineCount, kernelExecTimeoutEnabled, integrated, canMapHostMemory, computeMode;
    int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver, unifiedAddressing;
    int managedMemory, isMultiGpuBoard, cooperativeLaunch;
};
struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA, maxDynamicSharedSizeBytes;
    int preferredShmemCarveout;
};
struct cudaPointerAttributes {
    enum cudaMemoryType type;
    int device;
    void* devicePointer;
    void* hostPointer;
};

MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMalloc, (void**, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMallocHost, (void**, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMallocManaged, (void**, size_t, unsigned = cudaMemAttachGlobal))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMallocPitch, (void**, size_t*, size_t, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMallocAsync, (void**, size_t, cudaStream_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaHostAlloc, (void**, size_t, unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaHostRegister, (void*, size_t, unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaHostUnregister, (void*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaHostGetDevicePointer, (void**, void*, unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFree, (void*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFreeHost, (void*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFreeAsync, (void*, cudaStream_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpy, (void*, const void*, size_t, cudaMemcpyKind))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpyAsync,
                (void*, const void*, size_t, cudaMemcpyKind, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpy2D,
                (void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpy2DAsync,
                (void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpyPeer, (void*, int, const void*, int, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpyToSymbol,
                (const void*, const void*, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyHostToDevice))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemcpyFromSymbol,
                (void*, const void*, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyDeviceToHost))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetSymbolAddress, (void**, const void*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemset, (void*, int, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemsetAsync, (void*, int, size_t, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemset2D, (void*, size_t, int, size_t, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemGetInfo, (size_t*, size_t*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemPrefetchAsync, (const void*, size_t, int, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaMemAdvise, (const void*, size_t, cudaMemoryAdvise, int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaPointerGetAttributes, (cudaPointerAttributes*, const void*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceSynchronize, ())
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceReset, ())
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceSetCacheConfig, (cudaFuncCache))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceSetSharedMemConfig, (cudaSharedMemConfig))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceSetLimit, (cudaLimit, size_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceGetLimit, (size_t*, cudaLimit))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceCanAccessPeer, (int*, int, int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceEnablePeerAccess, (int, unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceGetStreamPriorityRange, (int*, int*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetLastError, ())
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaPeekAtLastError, ())
MMEMU_HOST_STUB(const char*, "the CUDA runtime is not available under mmcheck's emulator", cudaGetErrorString,
                (cudaError_t))
MMEMU_HOST_STUB(const char*, "cudaErrorNotSupported", cudaGetErrorName, (cudaError_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaSetDevice, (int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetDevice, (int*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetDeviceCount, (int*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaSetDeviceFlags, (unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetDeviceFlags, (unsigned*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetDeviceProperties, (cudaDeviceProp*, int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDeviceGetAttribute, (int*, cudaDeviceAttr, int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaChooseDevice, (int*, const cudaDeviceProp*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaDriverGetVersion, (int*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaRuntimeGetVersion, (int*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetDriverEntryPoint,
                (const char*, void**, unsigned long long, cudaDriverEntryPointQueryResult* = nullptr))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaGetDriverEntryPointByVersion,
                (const char*, void**, unsigned, unsigned long long, cudaDriverEntryPointQueryResult* = nullptr))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamCreate, (cudaStream_t*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamCreateWithFlags, (cudaStream_t*, unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamCreateWithPriority, (cudaStream_t*, unsigned, int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamDestroy, (cudaStream_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamSynchronize, (cudaStream_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamQuery, (cudaStream_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaStreamWaitEvent, (cudaStream_t, cudaEvent_t, unsigned = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventCreate, (cudaEvent_t*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventCreateWithFlags, (cudaEvent_t*, unsigned))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventRecord, (cudaEvent_t, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventQuery, (cudaEvent_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventSynchronize, (cudaEvent_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventElapsedTime, (float*, cudaEvent_t, cudaEvent_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaEventDestroy, (cudaEvent_t))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFuncSetAttribute, (const void*, cudaFuncAttribute, int))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFuncSetCacheConfig, (const void*, cudaFuncCache))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaFuncGetAttributes, (cudaFuncAttributes*, const void*))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaLaunchKernel,
                (const void*, dim3, dim3, void**, size_t = 0, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaLaunchCooperativeKernel,
                (const void*, dim3, dim3, void**, size_t = 0, cudaStream_t = 0))
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaOccupancyMaxActiveBlocksPerMultiprocessor,
                (int*, const void*, int, size_t))

}  // extern "C"
