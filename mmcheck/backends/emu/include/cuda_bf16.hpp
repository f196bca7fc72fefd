// CUDA splits the bfloat16 API over two headers; here it is all in cuda_bf16.h.
#pragma once

#include "cuda_bf16.h"
