// Stand-in for the CUDA toolkit header of this name: its pipeline primitives (cuda_pipeline_primitives.h).
#pragma once

#include "cuda_pipeline_primitives.h"
