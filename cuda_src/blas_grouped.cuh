// The group of a row in blas_grouped.cu's contiguous layout: the g with offsets[g] <= row < offsets[g + 1].
#pragma once

#define TILE 16

__device__ inline int group_of(int row, const int *offsets, int groups)
{
    int g = 0;
    while (g + 1 < groups && offsets[g + 1] <= row)
        ++g;
    return g;
}
