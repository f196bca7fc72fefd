/* mmcheck
# Source: J. Li, S. Ranka, S. Sahni, "GPU Matrix Multiplication", section 1.7.5: kernels GPU6
# (Figs. 1.29-1.31), GPU7 (Fig. 1.32) and GPU8 (Figs. 1.33-1.35), square n x n float matrices,
# (16,8) blocks each computing a 16 x 128 sub-matrix of c.
#
# Progression: more work per thread to hide memory latency behind arithmetic.  Each thread keeps a
# 16 x 1 column of c in registers (cr[16]); only a is staged in shared memory (transposed, rows padded
# against bank conflicts), while every b value is read once from global memory and used 16 times.
# GPU7 keeps four b values in flight, round robin, so a load's latency overlaps three updates; GPU8
# stages a 16 x 64 slab of a per step, read as float4.  The blocks tile c exactly and the k loop has no
# tail, so n must be a multiple of 128.
#
# Where a thread starts in a and in c (aNext, cNext) is an int offset; from there the pointers move.  The
# last thread's start is about n^2 - 9n in a and n^2 - 15n in c, which for multiples of 128 fits in an int
# (at most 2^31 - 1) exactly while N * N <= 2**31: requires say so.

[[kernel]]
name = "seed003.gpu6"
entry = "GPU6"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [16, 8]
grid = ["N // 128", "N // 16"]
requires = ["M == N", "N == K", "N % 128 == 0", "N * N <= 2**31"]
about = "Figs. 1.30-1.31: a 16x1 column of C per thread in registers, a 16x32 slab of A in as[32][17]"

[[kernel]]
name = "seed003.gpu7"
entry = "GPU7"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [16, 8]
grid = ["N // 128", "N // 16"]
requires = ["M == N", "N == K", "N % 128 == 0", "N * N <= 2**31"]
about = "Fig. 1.32: GPU6 with four b values loaded ahead, used round robin"

[[kernel]]
name = "seed003.gpu8"
entry = "GPU8"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [16, 8]
grid = ["N // 128", "N // 16"]
requires = ["M == N", "N == K", "N % 128 == 0", "N * N <= 2**31"]
about = "Figs. 1.34-1.35: GPU7 staging a 16x64 slab of A, read as float4, in as[16][65]"
*/

// Fig. 1.29: c[0..15] += a[0..15] * b, where a is a row of the transposed a slab (a column of a).
__device__ void update1(float *a, float b, float *c)
{
    for (int i = 0; i < 16; i++)
        c[i] += a[i] * b;
}

// Fig. 1.33: as update1, for GPU8's layout, where the 16 values of a column of a lie 4 floats apart.
__device__ void update2(float *a, float b, float *c)
{
    for (int i = 0; i < 16; i++)
        c[i] += a[i * 4] * b;
}

// Figs. 1.30 and 1.31.  Thread (sCol, sRow) computes column tid = 16*sRow + sCol of the block's
// 16 x 128 sub-matrix of c.  Per step the block stages a 16 x 32 slab of a, transposed, in as: each
// thread reads two float2s, rows sRow and sRow+8, columns 2*sCol and 2*sCol+1.
__global__ void GPU6(float *a, float *b, float *c, int n)
{
    // thread code to compute one column of a 16 x 128 sub-matrix of c
    // use shared memory to hold the transpose of a 16 x 32 sub-matrix of a
    __shared__ float as[32][17];

    // registers for column of c sub-matrix
    float cr[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

    int nDiv32 = n / 32;
    int sRow = threadIdx.y;
    int sCol = threadIdx.x;
    int sCol2 = sCol * 2;
    int sCol2Plus1 = sCol2 + 1;
    int tid = sRow * 16 + sCol;
    int aNext = (16 * blockIdx.y + sRow) * n + sCol * 2;
    int bNext = 128 * blockIdx.x + tid;
    int sRowPlus8 = sRow + 8;
    int nTimes8 = 8 * n;

    a += aNext;
    b += bNext;

    float2 temp;

    for (int i = 0; i < nDiv32; i++)
    {
        // threads in a thread block collectively read a 16 x 32
        // sub-matrix of a from device memory to shared memory
        temp = *(float2 *) a;
        as[sCol2][sRow] = temp.x;
        as[sCol2Plus1][sRow] = temp.y;
        temp = *(float2 *) (a + nTimes8);
        as[sCol2][sRowPlus8] = temp.x;
        as[sCol2Plus1][sRowPlus8] = temp.y;
        __syncthreads(); // wait for read to complete

        #pragma unroll
        for (int j = 0; j < 32; j++)
        {
            float br = b[0];
            b += n;
            update1(&as[j][0], br, cr);
        }

        a += 32;
        __syncthreads(); // wait for computation to complete
    }

    // output cr[]
    int cNext = 16 * blockIdx.y * n + 128 * blockIdx.x + tid;
    c += cNext;

    for (int i = 0; i < 16; i++)
    {
        c[0] = cr[i];
        c += n;
    }
}

// GPU7: GPU6 with its inner loop replaced by Fig. 1.32, which the chapter prints on its own; the rest
// of the kernel (the staging of a and the output loop) is GPU6's.  Loads of b rows 4 apart are issued
// one round before their values are used.
__global__ void GPU7(float *a, float *b, float *c, int n)
{
    // thread code to compute one column of a 16 x 128 sub-matrix of c
    // use shared memory to hold the transpose of a 16 x 32 sub-matrix of a
    __shared__ float as[32][17];

    // registers for column of c sub-matrix
    float cr[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

    int nDiv32 = n / 32;
    int sRow = threadIdx.y;
    int sCol = threadIdx.x;
    int sCol2 = sCol * 2;
    int sCol2Plus1 = sCol2 + 1;
    int tid = sRow * 16 + sCol;
    int aNext = (16 * blockIdx.y + sRow) * n + sCol * 2;
    int bNext = 128 * blockIdx.x + tid;
    int sRowPlus8 = sRow + 8;
    int nTimes2 = 2 * n;
    int nTimes3 = 3 * n;
    int nTimes4 = 4 * n;
    int nTimes8 = 8 * n;

    a += aNext;
    b += bNext;

    float2 temp;

    for (int i = 0; i < nDiv32; i++)
    {
        // threads in a thread block collectively read a 16 x 32
        // sub-matrix of a from device memory to shared memory
        temp = *(float2 *) a;
        as[sCol2][sRow] = temp.x;
        as[sCol2Plus1][sRow] = temp.y;
        temp = *(float2 *) (a + nTimes8);
        as[sCol2][sRowPlus8] = temp.x;
        as[sCol2Plus1][sRowPlus8] = temp.y;
        __syncthreads(); // wait for read to complete

        // b rows 0-3 of this slab, then each round loads the next four while using these
        float br0 = b[0];
        float br1 = b[n];
        float br2 = b[nTimes2];
        float br3 = b[nTimes3];

        #pragma unroll
        for (int j = 0; j < 7; j++)
        {
            b += nTimes4;
            update1(&as[j * 4][0], br0, cr); br0 = b[0];
            update1(&as[j * 4 + 1][0], br1, cr); br1 = b[n];
            update1(&as[j * 4 + 2][0], br2, cr); br2 = b[nTimes2];
            update1(&as[j * 4 + 3][0], br3, cr); br3 = b[nTimes3];
        }

        // rows 28-31 are already loaded; b moves on to the next slab's first row
        b += nTimes4;
        update1(&as[28][0], br0, cr);
        update1(&as[29][0], br1, cr);
        update1(&as[30][0], br2, cr);
        update1(&as[31][0], br3, cr);

        a += 32;
        __syncthreads(); // wait for computation to complete
    }

    // output cr[]
    int cNext = 16 * blockIdx.y * n + 128 * blockIdx.x + tid;
    c += cNext;

    for (int i = 0; i < 16; i++)
    {
        c[0] = cr[i];
        c += n;
    }
}

// Figs. 1.34 and 1.35, with the printed typos fixed (tid used sCol.x; the figure's braces split the
// slab loop across its two parts).  Per step the block stages a 16 x 64 slab of a, viewed as a 16 x 16
// matrix of 1x4 vectors: thread (sCol, sRow) reads the float4s at row sRow and row sRow+8, columns
// 4*sCol..4*sCol+3, and stores the transpose of that vector matrix, so
// as[v][4*r + e] = a(row r of the slab, column 4*v + e).
//
// The chapter writes each vector into as with one float4 store, *(float4 *)&as[sCol][sRow4] = ...,
// but a row of as[16][65] is 260 bytes long, so for sCol % 4 != 0 that address is not 16-byte aligned
// and current GPUs fault on it ("misaligned address"; see buggy/vectorized.cu).  This version keeps
// the float4 reads from global memory and the padded as[16][65] layout, and stores the four floats
// one by one.
__global__ void GPU8(float *a, float *b, float *c, int n)
{
    // thread code to compute one column of a 16 x 128 sub-matrix of c
    // use shared memory to hold the transpose of a
    // 16 x 64 sub-matrix of 1 x 4 sub-vectors of a
    __shared__ float as[16][65];

    // registers for column of c sub-matrix
    float cr[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

    int nDiv64 = n / 64;
    int sRow = threadIdx.y;
    int sRow4 = sRow * 4;
    int sCol = threadIdx.x;
    int tid = sRow * 16 + sCol;
    int aNext = (16 * blockIdx.y + sRow) * n + sCol * 4;
    int bNext = 128 * blockIdx.x + tid;
    int cNext = 16 * blockIdx.y * n + 128 * blockIdx.x + tid;
    int nTimes2 = 2 * n;
    int nTimes3 = 3 * n;
    int nTimes4 = 4 * n;

    a += aNext;
    b += bNext;
    c += cNext;

    float4 *a4 = (float4 *) a;

    for (int i = 0; i < nDiv64; i++)
    {
        // a4[nTimes2] is 2n float4s = 8 rows further down
        float4 top = a4[0];
        float4 bottom = a4[nTimes2];
        as[sCol][sRow4] = top.x;
        as[sCol][sRow4 + 1] = top.y;
        as[sCol][sRow4 + 2] = top.z;
        as[sCol][sRow4 + 3] = top.w;
        as[sCol][sRow4 + 32] = bottom.x;
        as[sCol][sRow4 + 33] = bottom.y;
        as[sCol][sRow4 + 34] = bottom.z;
        as[sCol][sRow4 + 35] = bottom.w;
        __syncthreads(); // wait for read to complete

        float br0 = b[0];
        float br1 = b[n];
        float br2 = b[nTimes2];
        float br3 = b[nTimes3];

        b += nTimes4;

        // as[k][e] starts column 4*k + e of the slab; br0..br3 hold b rows 4*k .. 4*k+3
        #pragma unroll
        for (int k = 0; k < 15; k++)
        {
            update2(&as[k][0], br0, cr); br0 = b[0];
            update2(&as[k][1], br1, cr); br1 = b[n];
            update2(&as[k][2], br2, cr); br2 = b[nTimes2];
            update2(&as[k][3], br3, cr); br3 = b[nTimes3];

            b += nTimes4;
        }

        update2(&as[15][0], br0, cr);
        update2(&as[15][1], br1, cr);
        update2(&as[15][2], br2, cr);
        update2(&as[15][3], br3, cr);

        a4 += 16;
        __syncthreads(); // wait for computation to complete
    }

    for (int j = 0; j < 16; j++)
    {
        c[0] = cr[j];
        c += n;
    }
}
