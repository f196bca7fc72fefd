// The CUDA runtime's host API (cuda_runtime_api.h) and its C++ overloads, for host code left in a kernel
// file; nvcc brings this header into every .cu file, and so does shim.h.  Every function fails.
#pragma once

#include "cuda_runtime_api.h"

extern "C++" {
template <class T>
cudaError_t cudaMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
template <class T>
cudaError_t cudaMallocHost(T** p, size_t n) { return cudaMallocHost(reinterpret_cast<void**>(p), n); }
template <class T>
cudaError_t cudaMallocManaged(T** p, size_t n, unsigned flags = cudaMemAttachGlobal) {
    return cudaMallocManaged(reinterpret_cast<void**>(p), n, flags);
}
template <class T>
cudaError_t cudaFuncSetAttribute(T* kernel, cudaFuncAttribute attribute, int value) {
    return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attribute, value);
}
template <class T>
cudaError_t cudaLaunchKernel(T* kernel, dim3 grid, dim3 block, void** args, size_t smem = 0, cudaStream_t stream = 0) {
    return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, smem, stream);
}
template <class T>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, T* kernel, int threads, size_t smem) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, reinterpret_cast<const void*>(kernel), threads, smem);
}
template <class T>
cudaError_t cudaMemcpyToSymbol(const T&, const void*, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyHostToDevice) {
    return cudaErrorNotSupported;
}
template <class T>
cudaError_t cudaMemcpyFromSymbol(void*, const T&, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyDeviceToHost) {
    return cudaErrorNotSupported;
}
}
