// cuBLAS's v2 API, declared so that host code left in a kernel file (a reference GEMM, a benchmark main)
// compiles and links.  mmcheck never runs host code: every function fails with
// CUBLAS_STATUS_NOT_SUPPORTED, and enumerators are cuBLAS's names but not necessarily its values.
#pragma once

#include "cuda_fp16.h"
#include "cuda_runtime_api.h"
#include "library_types.h"

extern "C" {

typedef struct cublasContext* cublasHandle_t;

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED,
    CUBLAS_STATUS_ALLOC_FAILED,
    CUBLAS_STATUS_INVALID_VALUE,
    CUBLAS_STATUS_ARCH_MISMATCH,
    CUBLAS_STATUS_MAPPING_ERROR,
    CUBLAS_STATUS_EXECUTION_FAILED,
    CUBLAS_STATUS_INTERNAL_ERROR,
    CUBLAS_STATUS_NOT_SUPPORTED,
    CUBLAS_STATUS_LICENSE_ERROR,
} cublasStatus_t;
typedef enum { CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C } cublasOperation_t;
typedef enum { CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER, CUBLAS_FILL_MODE_FULL } cublasFillMode_t;
typedef enum { CUBLAS_DIAG_NON_UNIT, CUBLAS_DIAG_UNIT } cublasDiagType_t;
typedef enum { CUBLAS_SIDE_LEFT, CUBLAS_SIDE_RIGHT } cublasSideMode_t;
typedef enum { CUBLAS_POINTER_MODE_HOST, CUBLAS_POINTER_MODE_DEVICE } cublasPointerMode_t;
typedef enum {
    CUBLAS_DEFAULT_MATH,
    CUBLAS_TENSOR_OP_MATH,
    CUBLAS_PEDANTIC_MATH,
    CUBLAS_TF32_TENSOR_OP_MATH,
} cublasMath_t;
typedef enum {
    CUBLAS_COMPUTE_16F,
    CUBLAS_COMPUTE_32F,
    CUBLAS_COMPUTE_32F_PEDANTIC,
    CUBLAS_COMPUTE_32F_FAST_16F,
    CUBLAS_COMPUTE_32F_FAST_16BF,
    CUBLAS_COMPUTE_32F_FAST_TF32,
    CUBLAS_COMPUTE_64F,
    CUBLAS_COMPUTE_32I,
} cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1, CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 } cublasGemmAlgo_t;

#define MMEMU_CUBLAS_STUB(name, params) MMEMU_HOST_STUB(cublasStatus_t, CUBLAS_STATUS_NOT_SUPPORTED, name, params)
// The parameters every GEMM starts with: handle, transposes, m, n, k.
#define MMEMU_GEMM_HEAD cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int

MMEMU_CUBLAS_STUB(cublasCreate, (cublasHandle_t*))
MMEMU_CUBLAS_STUB(cublasDestroy, (cublasHandle_t))
MMEMU_CUBLAS_STUB(cublasGetVersion, (cublasHandle_t, int*))
MMEMU_CUBLAS_STUB(cublasSetStream, (cublasHandle_t, cudaStream_t))
MMEMU_CUBLAS_STUB(cublasGetStream, (cublasHandle_t, cudaStream_t*))
MMEMU_CUBLAS_STUB(cublasSetMathMode, (cublasHandle_t, cublasMath_t))
MMEMU_CUBLAS_STUB(cublasGetMathMode, (cublasHandle_t, cublasMath_t*))
MMEMU_CUBLAS_STUB(cublasSetPointerMode, (cublasHandle_t, cublasPointerMode_t))
MMEMU_CUBLAS_STUB(cublasGetPointerMode, (cublasHandle_t, cublasPointerMode_t*))
MMEMU_HOST_STUB(const char*, "CUBLAS_STATUS_NOT_SUPPORTED", cublasGetStatusName, (cublasStatus_t))
MMEMU_HOST_STUB(const char*, "cuBLAS is not available under mmcheck's emulator", cublasGetStatusString,
                (cublasStatus_t))

#define MMEMU_CUBLAS_TYPED(prefix, T)                                                                                  \
    MMEMU_CUBLAS_STUB(cublas##prefix##gemm,                                                                            \
                      (MMEMU_GEMM_HEAD, const T*, const T*, int, const T*, int, const T*, T*, int))                    \
    MMEMU_CUBLAS_STUB(cublas##prefix##gemmStridedBatched, (MMEMU_GEMM_HEAD, const T*, const T*, int, long long,        \
                                                          const T*, int, long long, const T*, T*, int, long long,      \
                                                          int))                                                        \
    MMEMU_CUBLAS_STUB(cublas##prefix##gemmBatched, (MMEMU_GEMM_HEAD, const T*, const T* const[], int,                  \
                                                   const T* const[], int, const T*, T* const[], int, int))
MMEMU_CUBLAS_TYPED(S, float)
MMEMU_CUBLAS_TYPED(D, double)
MMEMU_CUBLAS_TYPED(H, __half)
#undef MMEMU_CUBLAS_TYPED

#define MMEMU_CUBLAS_LEVEL12(prefix, T)                                                                                \
    MMEMU_CUBLAS_STUB(cublas##prefix##gemv, (cublasHandle_t, cublasOperation_t, int, int, const T*, const T*, int,     \
                                            const T*, int, const T*, T*, int))                                         \
    MMEMU_CUBLAS_STUB(cublas##prefix##geam, (cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,           \
                                            const T*, const T*, int, const T*, const T*, int, T*, int))                \
    MMEMU_CUBLAS_STUB(cublas##prefix##axpy, (cublasHandle_t, int, const T*, const T*, int, T*, int))                   \
    MMEMU_CUBLAS_STUB(cublas##prefix##scal, (cublasHandle_t, int, const T*, T*, int))                                  \
    MMEMU_CUBLAS_STUB(cublas##prefix##copy, (cublasHandle_t, int, const T*, int, T*, int))                             \
    MMEMU_CUBLAS_STUB(cublas##prefix##dot, (cublasHandle_t, int, const T*, int, const T*, int, T*))                    \
    MMEMU_CUBLAS_STUB(cublas##prefix##nrm2, (cublasHandle_t, int, const T*, int, T*))
MMEMU_CUBLAS_LEVEL12(S, float)
MMEMU_CUBLAS_LEVEL12(D, double)
#undef MMEMU_CUBLAS_LEVEL12

MMEMU_CUBLAS_STUB(cublasGemmEx, (MMEMU_GEMM_HEAD, const void*, const void*, cudaDataType, int, const void*,
                                 cudaDataType, int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                 cublasGemmAlgo_t))
MMEMU_CUBLAS_STUB(cublasGemmStridedBatchedEx, (MMEMU_GEMM_HEAD, const void*, const void*, cudaDataType, int,
                                               long long, const void*, cudaDataType, int, long long, const void*,
                                               void*, cudaDataType, int, long long, int, cublasComputeType_t,
                                               cublasGemmAlgo_t))

#undef MMEMU_GEMM_HEAD
#undef MMEMU_CUBLAS_STUB
}  // extern "C"
