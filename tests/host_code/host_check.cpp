// Host-side checks shared by the samples in this folder (built into their programs beside the .cu files).
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime_api.h>

// Exits, naming the step, where the last CUDA call or launch failed.
void check_cuda_last(const char *what) {
    const cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess) {
        fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(error));
        exit(EXIT_FAILURE);
    }
}
