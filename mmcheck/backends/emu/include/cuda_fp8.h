// 8-bit floats (cuda_fp8.h): the emulator has no arithmetic for them, so the types are declared only, as
// CUDA's header forward-declares them, with the storage and option types whole.  Host code that names them
// (a quantizing launcher) compiles; a kernel that uses them is unsupported (unit.py: an incomplete type).
#pragma once

#include "cuda_bf16.h"
#include "cuda_fp16.h"

#define __CUDA_FP8_TYPES_EXIST__

extern "C++" {
typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short int __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

struct __nv_fp8_e5m2;
struct __nv_fp8x2_e5m2;
struct __nv_fp8x4_e5m2;
struct __nv_fp8_e4m3;
struct __nv_fp8x2_e4m3;
struct __nv_fp8x4_e4m3;
struct __nv_fp8_e8m0;
struct __nv_fp8x2_e8m0;
struct __nv_fp8x4_e8m0;
}
