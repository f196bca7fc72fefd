// CUDA's types of pointers to the driver's entry points, PFN_<function>_v<version>, for host code that fetches
// one (cudaGetDriverEntryPoint, cuGetProcAddress) and calls it: those of the functions cuda.h declares here,
// taken from their declarations.
#pragma once

#include <cuda.h>

typedef decltype(&cuInit) PFN_cuInit_v2000;
typedef decltype(&cuDriverGetVersion) PFN_cuDriverGetVersion_v2020;
typedef decltype(&cuDeviceGet) PFN_cuDeviceGet_v2000;
typedef decltype(&cuDeviceGetCount) PFN_cuDeviceGetCount_v2000;
typedef decltype(&cuCtxGetCurrent) PFN_cuCtxGetCurrent_v4000;
typedef decltype(&cuGetErrorString) PFN_cuGetErrorString_v6000;
typedef decltype(&cuGetErrorName) PFN_cuGetErrorName_v6000;
typedef decltype(&cuGetProcAddress) PFN_cuGetProcAddress_v12000;
typedef decltype(&cuTensorMapEncodeTiled) PFN_cuTensorMapEncodeTiled_v12000;
typedef decltype(&cuTensorMapEncodeIm2col) PFN_cuTensorMapEncodeIm2col_v12000;
typedef decltype(&cuTensorMapReplaceAddress) PFN_cuTensorMapReplaceAddress_v12000;
