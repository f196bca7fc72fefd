// The data-type enumeration that cuBLAS's Ex functions take (names as CUDA's, values not necessarily).
#pragma once

extern "C" {
typedef enum cudaDataType_t {
    CUDA_R_16F,
    CUDA_R_16BF,
    CUDA_R_32F,
    CUDA_R_64F,
    CUDA_R_8I,
    CUDA_R_8U,
    CUDA_R_32I,
    CUDA_C_32F,
    CUDA_C_64F,
} cudaDataType;
}
