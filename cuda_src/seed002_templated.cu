/* mmcheck
# Source: a "hello-world" CUDA matrix multiplication tutorial (mm.cu and mm_optimization.cu), templated
# over the element type and tested on int32, float and double.  The tutorial names the shapes
# mat_1: m x n, mat_2: n x p, mat_3: m x p, so its (m, n, p) are mmcheck's (M, K, N).
#
# Progression: one thread per output cell with a bounds check (so any shape works), the same kernel
# extended to a batch through blockIdx.z, then 32x32 shared-memory tiles that zero-pad the edges.
#
# Sizes and offsets are size_t, so the kernels are right past 2^31 elements: their requires bound only the
# grid.

[[kernel]]
name = "seed002.mm_naive"
entry = "mm_kernel"
template = "T"
op = "mm"
dtypes = ["int32", "float32", "float64"]
params = ["A", "B", "C", "M:size_t", "K:size_t", "N:size_t"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
about = "one thread per C element, bounds-checked: any M, N, K"

[[kernel]]
name = "seed002.bmm_naive"
entry = "bmm_kernel"
template = "T"
op = "bmm"
dtypes = ["int32", "float32", "float64"]
params = ["A", "B", "C", "batch:size_t", "M:size_t", "K:size_t", "N:size_t"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)", "batch"]
about = "mm_naive with blockIdx.z selecting the matrix of the batch"

[[kernel]]
name = "seed002.mm_tiled"
entry = "mm_kernel_optimized"
template = "T"
op = "mm"
dtypes = ["int32", "float32", "float64"]
params = ["A", "B", "C", "M:size_t", "K:size_t", "N:size_t"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
defines = { BLOCK_DIM = 32 }
about = "32x32 shared-memory tiles, zero-padded at every edge: any M, N, K"
*/

// The tiled kernel indexes its tiles with threadIdx, so the launch's block must be BLOCK_DIM x BLOCK_DIM.
#ifndef BLOCK_DIM
#define BLOCK_DIM 32
#endif

// mat_1: m x n, mat_2: n x p, mat_3: m x p, all row-major.
template <typename T>
__global__ void mm_kernel(T const* mat_1, T const* mat_2, T* mat_3, size_t m, size_t n, size_t p)
{
    // 2D block and 2D thread: each thread computes one cell of mat_3.
    size_t i{blockIdx.y * blockDim.y + threadIdx.y};
    size_t j{blockIdx.x * blockDim.x + threadIdx.x};

    // The grid is rounded up to whole blocks, so some threads fall outside the matrix.
    if ((i >= m) || (j >= p))
    {
        return;
    }

    T acc_sum{0};
    for (size_t k{0}; k < n; ++k)
    {
        acc_sum += mat_1[i * n + k] * mat_2[k * p + j];
    }
    mat_3[i * p + j] = acc_sum;
}

// mat_1: b x m x n, mat_2: b x n x p, mat_3: b x m x p; each matrix of the batch is contiguous.
template <typename T>
__global__ void bmm_kernel(T const* mat_1, T const* mat_2, T* mat_3, size_t b, size_t m, size_t n,
                           size_t p)
{
    size_t i{blockIdx.y * blockDim.y + threadIdx.y};
    size_t j{blockIdx.x * blockDim.x + threadIdx.x};
    // One grid layer per matrix; b is only needed by the launch, which sets gridDim.z = b.
    size_t l{blockIdx.z};

    if ((i >= m) || (j >= p))
    {
        return;
    }

    T acc_sum{0};
    for (size_t k{0}; k < n; ++k)
    {
        acc_sum += mat_1[l * m * n + i * n + k] * mat_2[l * n * p + k * p + j];
    }
    mat_3[l * m * p + i * p + j] = acc_sum;
}

template <typename T>
__global__ void mm_kernel_optimized(T const* mat_1, T const* mat_2, T* mat_3, size_t m, size_t n,
                                    size_t p)
{
    __shared__ T mat_1_tile[BLOCK_DIM][BLOCK_DIM];
    __shared__ T mat_2_tile[BLOCK_DIM][BLOCK_DIM];

    T acc_sum{0};

    // The tutorial bounds this loop with ceilf(static_cast<float>(n) / BLOCK_DIM), which is exact only
    // while n fits in a float's 24-bit mantissa; integer ceiling division has no such limit.
    for (size_t tile_idx{0}; tile_idx < (n + BLOCK_DIM - 1) / BLOCK_DIM; ++tile_idx)
    {
        // Every thread loads one element of each tile, even threads whose own output cell lies
        // outside mat_3: their loads fill the rows and columns their neighbours read.  Cells past the
        // matrix edge are loaded as 0 so that the partial last tile adds nothing.
        size_t i{blockIdx.y * blockDim.y + threadIdx.y};
        size_t j{tile_idx * blockDim.x + threadIdx.x};
        if ((i < m) && (j < n))
        {
            mat_1_tile[threadIdx.y][threadIdx.x] = mat_1[i * n + j];
        }
        else
        {
            mat_1_tile[threadIdx.y][threadIdx.x] = 0;
        }
        i = tile_idx * blockDim.y + threadIdx.y;
        j = blockIdx.x * blockDim.x + threadIdx.x;
        if ((i < n) && (j < p))
        {
            mat_2_tile[threadIdx.y][threadIdx.x] = mat_2[i * p + j];
        }
        else
        {
            mat_2_tile[threadIdx.y][threadIdx.x] = 0;
        }
        // The tiles must be complete before anyone reads them ...
        __syncthreads();
        for (size_t k{0}; k < BLOCK_DIM; ++k)
        {
            acc_sum += mat_1_tile[threadIdx.y][k] * mat_2_tile[k][threadIdx.x];
        }
        // ... and fully read before the next iteration overwrites them.
        __syncthreads();
    }

    size_t i{blockIdx.y * blockDim.y + threadIdx.y};
    size_t j{blockIdx.x * blockDim.x + threadIdx.x};
    if ((i < m) && (j < p))
    {
        mat_3[i * p + j] = acc_sum;
    }
}
