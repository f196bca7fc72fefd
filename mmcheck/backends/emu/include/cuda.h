// The CUDA driver API's types and the host functions that kernel files' host code calls (a tensor map made for
// TMA, the driver's version asked), declared so that such code compiles and links; mmcheck never runs host code:
// every function fails with CUDA_ERROR_NOT_SUPPORTED.  Error codes and enumerators have CUDA's values.  What
// device code uses of CUDA, shim.h (force-included) declares.
#pragma once

#include <stdint.h>  // CUDA's header brings it in (<cstdint>'s names, outside std): a kernel may use uint32_t

// The driver version these declarations follow: the runtime's (cuda_runtime_api.h).
#define CUDA_VERSION CUDART_VERSION
#define CUDAAPI

extern "C" {

typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_SUPPORTED = 801,
} CUresult;

typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;  // the runtime's cudaStream_t
typedef struct CUevent_st* CUevent;

// A tensor map, the descriptor of a TMA copy: opaque, of CUDA's size and alignment, since kernels take it by value.
typedef struct CUtensorMap_st {
    alignas(64) cuuint64_t opaque[16];
} CUtensorMap;

typedef enum CUtensorMapDataType_enum {
    CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
    CU_TENSOR_MAP_DATA_TYPE_UINT16,
    CU_TENSOR_MAP_DATA_TYPE_UINT32,
    CU_TENSOR_MAP_DATA_TYPE_INT32,
    CU_TENSOR_MAP_DATA_TYPE_UINT64,
    CU_TENSOR_MAP_DATA_TYPE_INT64,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
    CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
    CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
} CUtensorMapDataType;

typedef enum CUtensorMapInterleave_enum {
    CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
    CU_TENSOR_MAP_INTERLEAVE_16B,
    CU_TENSOR_MAP_INTERLEAVE_32B,
} CUtensorMapInterleave;

typedef enum CUtensorMapSwizzle_enum {
    CU_TENSOR_MAP_SWIZZLE_NONE = 0,
    CU_TENSOR_MAP_SWIZZLE_32B,
    CU_TENSOR_MAP_SWIZZLE_64B,
    CU_TENSOR_MAP_SWIZZLE_128B,
} CUtensorMapSwizzle;

typedef enum CUtensorMapL2promotion_enum {
    CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
    CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
    CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
    CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
} CUtensorMapL2promotion;

typedef enum CUtensorMapFloatOOBfill_enum {
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
} CUtensorMapFloatOOBfill;

typedef enum CUdriverProcAddress_flags_enum {
    CU_GET_PROC_ADDRESS_DEFAULT = 0,
    CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2,
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} CUdriverProcAddressQueryResult;

MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuInit, (unsigned))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuDriverGetVersion, (int*))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuDeviceGet, (CUdevice*, int))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuDeviceGetCount, (int*))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuCtxGetCurrent, (CUcontext*))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuGetErrorString, (CUresult, const char**))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuGetErrorName, (CUresult, const char**))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuGetProcAddress,
                (const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuTensorMapEncodeTiled,
                (CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                 const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuTensorMapEncodeIm2col,
                (CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                 const int*, const int*, cuuint32_t, cuuint32_t, const cuuint32_t*, CUtensorMapInterleave,
                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill))
MMEMU_HOST_STUB(CUresult, CUDA_ERROR_NOT_SUPPORTED, cuTensorMapReplaceAddress, (CUtensorMap*, void*))

}  // extern "C"
