// CUDA splits the half-precision API over two headers; here it is all in cuda_fp16.h.
#pragma once

#include "cuda_fp16.h"
