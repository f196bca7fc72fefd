// bfloat16 on the emulator: __nv_bfloat16, __nv_bfloat162 and CUDA's functions on them, bit for bit as
// the GPU rounds (mmemu_float16.h says how and why).
#pragma once

#include "mmemu_float16.h"

#define __CUDA_BF16_TYPES_EXIST__

extern "C++" {
MMEMU_FLOAT16_API(__nv_bfloat16, __nv_bfloat162, bfloat16, mmemu::Bf16Format)
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
}

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7f80u)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7fffu)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001u)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7f7fu)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000u)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000u)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3f80u)
