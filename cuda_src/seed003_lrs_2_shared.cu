/* mmcheck
# Source: J. Li, S. Ranka, S. Sahni, "GPU Matrix Multiplication", section 1.7.4: kernels GPU4 (Fig. 1.24)
# and GPU5 (Fig. 1.27), square n x n float matrices, (16,16) blocks.
#
# Progression: block matrix multiplication through shared memory.  A 16x16 block stages a 16x16 tile
# of a and of b per step, so each value fetched from global memory is used 16 times.  GPU5 then stores
# the b tile transposed, so that each thread walks a row of bs, and pads its rows to 17 floats so that
# the threads of a half warp, which now read down a column, hit 16 different shared-memory banks.
# No bounds checks and no padding of partial tiles: n must be a multiple of 16.
#
# The offsets into a and b (aNext, bNext) are int, so a matrix may have at most 2^31 elements (the last
# offset, 2^31 - 1, is the largest an int holds; c's offset is an unsigned int, good to 2^32): requires say
# so.

[[kernel]]
name = "seed003.gpu4"
entry = "GPU4"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [16, 16]
grid = ["N // 16", "N // 16"]
requires = ["M == N", "N == K", "N % 16 == 0", "N * N <= 2**31"]
about = "Fig. 1.24: 16x16 shared-memory tiles of a and b, one C element per thread"

[[kernel]]
name = "seed003.gpu5"
entry = "GPU5"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [16, 16]
grid = ["N // 16", "N // 16"]
requires = ["M == N", "N == K", "N % 16 == 0", "N * N <= 2**31"]
about = "Fig. 1.27: GPU4 with the b tile stored transposed in a padded bs[16][17]"
*/

__global__ void GPU4(float *a, float *b, float *c, int n)
{
    // thread code to compute an element of a 16 x 16 sub-matrix of c
    // shared memory arrays to hold a 16 x 16 sub-matrix of a and b
    __shared__ float as[16][16], bs[16][16];
    int nDiv16 = n / 16;
    int nTimes16 = n * 16;
    int aNext = (16 * blockIdx.y + threadIdx.y) * n + threadIdx.x;
    int bNext = 16 * blockIdx.x + threadIdx.y * n + threadIdx.x;
    float temp = 0;

    for (int u = 0; u < nDiv16; u++)
    {
        // threads in a thread block collectively read a 16 x 16 sub-matrix of
        // a and b from device memory to shared memory; each thread reads
        // 1 element of a and 1 element of b
        as[threadIdx.y][threadIdx.x] = a[aNext];
        bs[threadIdx.y][threadIdx.x] = b[bNext];
        __syncthreads(); // wait for read to complete

        // multiply a row of as with a column of bs
        for (int k = 0; k < 16; k++)
            temp += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads(); // wait for all threads in thread block to complete

        // update to work on next sub-matrix of a and b
        aNext += 16;
        bNext += nTimes16;
    }
    c[(16 * blockIdx.y + threadIdx.y) * n + 16 * blockIdx.x + threadIdx.x] = temp;
}

__global__ void GPU5(float *a, float *b, float *c, int n)
{
    // thread code to compute an element of a 16 x 16 sub-matrix of c
    // shared memory arrays to hold a sub-matrix of a and b; bs holds the transpose, and its 17th
    // column puts the 16 elements of a column of bs in 16 different banks
    __shared__ float as[16][16], bs[16][17];
    int nDiv16 = n / 16;
    int nTimes16 = n * 16;
    int aNext = (16 * blockIdx.y + threadIdx.y) * n + threadIdx.x;
    int bNext = 16 * blockIdx.x + threadIdx.y * n + threadIdx.x;
    float temp = 0;

    for (int u = 0; u < nDiv16; u++)
    {
        // threads in a thread block collectively read a 16 x 16 sub-matrix of
        // a and b from device memory to shared memory; each thread reads
        // 1 element of a and 1 element of b
        as[threadIdx.y][threadIdx.x] = a[aNext];
        bs[threadIdx.x][threadIdx.y] = b[bNext];
        __syncthreads(); // wait for read to complete

        // multiply a row of as with a row of bs (a column of the b tile)
        for (int k = 0; k < 16; k++)
            temp += as[threadIdx.y][k] * bs[threadIdx.x][k];
        __syncthreads(); // wait for all threads in thread block to complete

        // update to work on next sub-matrix of a and b
        aNext += 16;
        bNext += nTimes16;
    }
    c[(16 * blockIdx.y + threadIdx.y) * n + 16 * blockIdx.x + threadIdx.x] = temp;
}
