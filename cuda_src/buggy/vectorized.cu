/* mmcheck
# A known-bad vectorized kernel: GPU8 of Li, Ranka and Sahni as the chapter prints it (Figs. 1.34-1.35,
# with only the compile error tid = sRow*16+sCol.x fixed).  cuda_src/seed003_lrs_3_registers.cu has
# the corrected GPU8.

[[kernel]]
name = "buggy.misaligned_float4_smem"
entry = "GPU8AsPrinted"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [16, 8]
grid = ["N // 128", "N // 16"]
requires = ["M == N", "N == K", "N % 128 == 0"]
expect = "fail"
catch = ["fault", "sanitizer"]
about = "float4 stores into rows of as[16][65], 260 bytes apart: misaligned for 3 rows in 4"
*/

// Fig. 1.33: c[0..15] += a[0], a[4], ..., a[60] times b.
__device__ void update2(float *a, float b, float *c)
{
    for (int i = 0; i < 16; i++)
        c[i] += a[i * 4] * b;
}

// Bug: a vector (float4) access through a pointer that is not 16-byte aligned.
__global__ void GPU8AsPrinted(float *a, float *b, float *c, int n)
{
    __shared__ float as[16][65];

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
        // BUG: &as[sCol][sRow4] lies sCol * 260 + sRow * 16 bytes into as, a multiple of 16 only
        // when sCol % 4 == 0; a float4 store needs 16-byte alignment
        *((float4 *) (&as[sCol][sRow4])) = a4[0];
        *((float4 *) (&as[sCol][sRow4 + 32])) = a4[nTimes2];
        __syncthreads();

        float br0 = b[0];
        float br1 = b[n];
        float br2 = b[nTimes2];
        float br3 = b[nTimes3];

        b += nTimes4;

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
        __syncthreads();
    }

    for (int j = 0; j < 16; j++)
    {
        c[0] = cr[j];
        c += n;
    }
}
