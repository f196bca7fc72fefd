// The CUDA runtime's host API (cuda_runtime_api.h) and its C++ overloads, for host code left in a kernel
// file; nvcc brings this header into every .cu file, and so does shim.h.  Every function fails.  The C
// library headers that CUDA's own cuda_runtime.h includes come too, as nvcc's host code sees them (a
// main() calling time() or exit() compiles under nvcc without including them).
#pragma once

#define __CUDA_RUNTIME_H__

#include "cuda_runtime_api.h"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

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
cudaError_t cudaMallocPitch(T** p, size_t* pitch, size_t width, size_t height) {
    return cudaMallocPitch(reinterpret_cast<void**>(p), pitch, width, height);
}
template <class T>
cudaError_t cudaMallocAsync(T** p, size_t n, cudaStream_t stream) {
    return cudaMallocAsync(reinterpret_cast<void**>(p), n, stream);
}
template <class T>
cudaError_t cudaHostAlloc(T** p, size_t n, unsigned flags) {
    return cudaHostAlloc(reinterpret_cast<void**>(p), n, flags);
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
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, T* kernel) {
    return cudaFuncGetAttributes(attributes, reinterpret_cast<const void*>(kernel));
}
template <class T>
cudaError_t cudaLaunchCooperativeKernel(T* kernel, dim3 grid, dim3 block, void** args, size_t smem = 0,
                                        cudaStream_t stream = 0) {
    return cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), grid, block, args, smem, stream);
}
template <class T>
cudaError_t cudaOccupancyMaxPotentialBlockSize(int*, int*, T, size_t = 0, int = 0) {
    return cudaErrorNotSupported;
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
cudaError_t cudaGetSymbolAddress(void**, const T&) {
    return cudaErrorNotSupported;
}
template <class T>
cudaError_t cudaMemcpyFromSymbol(void*, const T&, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyDeviceToHost) {
    return cudaErrorNotSupported;
}
}
