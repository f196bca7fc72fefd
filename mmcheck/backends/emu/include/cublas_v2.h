// cuBLAS v2 for host code left in a kernel file; see cublas_api.h.
#pragma once

#include "cublas_api.h"
