/* mmcheck
# Known-bad kernels, one classic mistake each, in the shared-memory tiling family.  Each is the same
# correct kernel with one line changed (marked BUG): 16x16 tiles that every thread of the block helps
# load, cells outside A or B stored as 0, two barriers per tile, and a bounds check on the final store
# only, so that it handles any shape (seed002.mm_tiled is that design with 32x32 tiles).
# Each spec's `requires` names shapes on which its bug shows.  `catch` lists every check that may be
# the first to report it (mmcheck accepts any of them): which one depends on the backend, on sanitizer
# mode and, for the races, on thread timing.

[[kernel]]
name = "buggy.missing_first_sync"
entry = "mm_tiled_missing_first_sync"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K >= 2"]
expect = "fail"
catch = ["mismatch", "race", "sanitizer"]
about = "no barrier between loading the tiles and reading them: threads read tiles others have not filled"

[[kernel]]
name = "buggy.missing_second_sync"
entry = "mm_tiled_missing_second_sync"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K > 16"]
expect = "fail"
catch = ["mismatch", "race", "sanitizer"]
about = "no barrier after the tile product: fast threads overwrite tiles others are still reading"

[[kernel]]
name = "buggy.tile_padding_not_zeroed"
entry = "mm_tiled_padding_not_zeroed"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K % 16 != 0", "K > 16"]
expect = "fail"
catch = ["mismatch"]
about = "out-of-range tile cells are skipped, not zeroed: the K tail multiplies the previous tile's data"

[[kernel]]
name = "buggy.last_partial_tile_skipped"
entry = "mm_tiled_last_partial_tile_skipped"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K % 16 != 0"]
expect = "fail"
catch = ["mismatch"]
about = "tile count K / TILE rounds down: the last K % TILE terms are never added"

[[kernel]]
name = "buggy.early_return_before_barrier"
entry = "mm_tiled_early_return"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M % 16 != 0 or N % 16 != 0"]
expect = "fail"
catch = ["barrier", "mismatch", "race"]
about = "threads outside C return before the tile loop: they skip its barriers and leave tile cells unloaded"
*/

// The tile edge, which must equal both block dimensions.
#ifndef TILE
#define TILE 16
#endif

// Bug: missing __syncthreads() between loading the tiles and using them.
__global__ void mm_tiled_missing_first_sync(const float* A, const float* B, float* C, int M, int K,
                                            int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + threadIdx.x;
        int kb = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        // BUG: no __syncthreads() here; the loop below reads cells other threads may not have written
        for (int k = 0; k < TILE; ++k)
            sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}

// Bug: missing __syncthreads() after the tile product, before the next tile is loaded.
__global__ void mm_tiled_missing_second_sync(const float* A, const float* B, float* C, int M, int K,
                                             int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + threadIdx.x;
        int kb = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        // BUG: no __syncthreads() here; the next iteration's loads overwrite tiles still being read
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}

// Bug: tile cells outside A or B are left as they were instead of being set to 0.
__global__ void mm_tiled_padding_not_zeroed(const float* A, const float* B, float* C, int M, int K,
                                            int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + threadIdx.x;
        int kb = t * TILE + threadIdx.y;
        // BUG: no else branch storing 0; on the last, partial tile the cells past K keep the
        // previous tile's values, and the full-width product below adds them in
        if (row < M && ka < K)
            As[threadIdx.y][threadIdx.x] = A[row * K + ka];
        if (kb < K && col < N)
            Bs[threadIdx.y][threadIdx.x] = B[kb * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}

// Bug: the number of tiles is rounded down.
__global__ void mm_tiled_last_partial_tile_skipped(const float* A, const float* B, float* C, int M,
                                                   int K, int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0;
    for (int t = 0; t < K / TILE; ++t) {  // BUG: should be (K + TILE - 1) / TILE
        int ka = t * TILE + threadIdx.x;
        int kb = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}

// Bug: an early return before a __syncthreads() that the rest of the block still executes.
__global__ void mm_tiled_early_return(const float* A, const float* B, float* C, int M, int K, int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    // BUG: these threads never reach the barriers below, and the tile cells they should load (which
    // in-range threads of the same block read) are never written
    if (row >= M || col >= N)
        return;
    float sum = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + threadIdx.x;
        int kb = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * N + col] = sum;
}
