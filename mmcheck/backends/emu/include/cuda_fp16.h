// Half precision (IEEE binary16) on the emulator: __half, __half2 and CUDA's functions on them, bit for
// bit as the GPU rounds (mmemu_float16.h says how and why).
#pragma once

#include "mmemu_float16.h"

#define __CUDA_FP16_TYPES_EXIST__

extern "C++" {
MMEMU_FLOAT16_API(__half, __half2, half, mmemu::Fp16Format)
typedef __half half;
typedef __half2 half2;
}

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7c00u)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7fffu)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001u)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7bffu)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000u)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000u)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3c00u)
