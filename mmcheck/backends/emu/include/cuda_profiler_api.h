// The CUDA profiler's control API, for host code left in a kernel file (CUDA samples bracket their timed
// loop with it).  mmcheck never runs host code: both functions fail.
#pragma once

#include "cuda_runtime_api.h"

extern "C" {
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaProfilerStart, ())
MMEMU_HOST_STUB(cudaError_t, cudaErrorNotSupported, cudaProfilerStop, ())
}
