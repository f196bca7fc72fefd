// Error checks and device selection for the host code of the samples in this folder, in the manner of the
// CUDA samples' common helpers: what needs the runtime's types is declared only where the runtime's headers
// came first (their include guards say so), so that the header also serves files without them.
#ifndef HOST_CODE_HELPER_CUDA_H
#define HOST_CODE_HELPER_CUDA_H

#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef __DRIVER_TYPES_H__
static const char *_cudaGetErrorEnum(cudaError_t error) { return cudaGetErrorName(error); }
#endif

// Exits with the failing call, its file and line, where `result` is an error.
template <typename T>
void check(T result, char const *const func, const char *const file, int const line) {
    if (result) {
        fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\"\n", file, line, static_cast<unsigned int>(result),
                _cudaGetErrorEnum(result), func);
        exit(EXIT_FAILURE);
    }
}

#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)

#ifdef __DRIVER_TYPES_H__
// Exits where the last launch (or any call before it) failed.
#define getLastCudaError(msg) __getLastCudaError(msg, __FILE__, __LINE__)

inline void __getLastCudaError(const char *message, const char *file, const int line) {
    const cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess) {
        fprintf(stderr, "%s(%i) : getLastCudaError() CUDA error : %s : (%d) %s.\n", file, line, message,
                static_cast<int>(error), cudaGetErrorString(error));
        exit(EXIT_FAILURE);
    }
}
#endif

#ifdef __CUDA_RUNTIME_H__
// CUDA cores per multiprocessor, by compute capability (0xMm), for the device report.
inline int _ConvertSMVer2Cores(int major, int minor) {
    static const struct { int sm, cores; } table[] = {
        {0x60, 64}, {0x61, 128}, {0x70, 64}, {0x75, 64}, {0x80, 64}, {0x86, 128}, {0x89, 128}, {0x90, 128}};
    for (const auto &entry : table)
        if (entry.sm == ((major << 4) + minor)) return entry.cores;
    return table[sizeof(table) / sizeof(table[0]) - 1].cores;
}

// The device named by -device=N on the command line, else device 0; exits if it cannot be used.
inline int findCudaDevice(int argc, const char **argv) {
    int device = 0, count = 0;
    for (int i = 1; i < argc; ++i)
        if (strncmp(argv[i], "-device=", 8) == 0) device = atoi(argv[i] + 8);
    checkCudaErrors(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count) {
        fprintf(stderr, "findCudaDevice: no CUDA device %d (there are %d)\n", device, count);
        exit(EXIT_FAILURE);
    }
    int mode = 0;
    checkCudaErrors(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, device));
    if (mode == cudaComputeModeProhibited) {
        fprintf(stderr, "findCudaDevice: device %d is in the prohibited compute mode\n", device);
        exit(EXIT_FAILURE);
    }
    cudaDeviceProp prop;
    checkCudaErrors(cudaGetDeviceProperties(&prop, device));
    checkCudaErrors(cudaSetDevice(device));
    printf("GPU Device %d: \"%s\" with compute capability %d.%d, %d cores\n", device, prop.name, prop.major,
           prop.minor, prop.multiProcessorCount * _ConvertSMVer2Cores(prop.major, prop.minor));
    return device;
}
#endif

#endif  // HOST_CODE_HELPER_CUDA_H
