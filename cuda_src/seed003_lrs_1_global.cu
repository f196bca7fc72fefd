/* mmcheck
# Source: J. Li, S. Ranka, S. Sahni, "GPU Matrix Multiplication", sections 1.7.1-1.7.3: kernels GPU1,
# GPU2 and GPU3 for square n x n float matrices, each launched with the block shape the chapter found
# fastest on a Tesla C1060 (Fig. 1.39).
#
# Progression: all three read A and B straight from global memory.  GPU1 computes one element of C
# per thread; GPU2 and GPU3 compute 1x2 and 1x4 elements per thread so that a, b and c move as
# float4/float2 vectors: fewer, wider memory transactions for the same arithmetic.  None has a bounds
# check, and the vector accesses need n to be a multiple of 4 (and the buffers 16-byte aligned), so
# each requires n to be a multiple of the tile its block covers.
#
# The offsets are int and count what each kernel moves: floats in GPU1 (i * n + k), float2s of b and c in
# GPU2 (a's float4s are fewer), float4s in GPU3.  An int holds offsets up to 2^31 - 1, so a matrix may have
# at most 2^31, 2^32 and 2^33 elements respectively, and each requires says so.

[[kernel]]
name = "seed003.gpu1"
entry = "GPU1"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [256, 1]
grid = ["N // 256", "N"]
requires = ["M == N", "N == K", "N % 256 == 0", "N * N <= 2**31"]
about = "Fig. 1.12: one C element per thread, (256,1) blocks"

[[kernel]]
name = "seed003.gpu2"
entry = "GPU2"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [8, 8]
grid = ["N // 16", "N // 8"]
requires = ["M == N", "N == K", "N % 16 == 0", "N * N <= 2**32"]
about = "sec. 1.7.2: a 1x2 strip of C per thread, a as float4, b and c as float2, (8,8) blocks"

[[kernel]]
name = "seed003.gpu3"
entry = "GPU3"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [4, 16]
grid = ["N // 16", "N // 16"]
requires = ["M == N", "N == K", "N % 16 == 0", "N * N <= 2**33"]
about = "Fig. 1.21: a 1x4 strip of C per thread, a, b and c as float4, (4,16) blocks"
*/

// Fig. 1.12: the textbook ijk loop with the two outer loops replaced by the thread grid.
__global__ void GPU1(float *a, float *b, float *c, int n)
{
    // thread code to compute one element of c
    // element (i,j) of the product matrix is to be computed
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;

    float temp = 0;
    for (int k = 0; k < n; k++)
        temp += a[i * n + k] * b[k * n + j];
    c[i * n + j] = temp;
}

// GPU2 (Fig. 1.18 is missing from the source text, so this is written from the description in section
// 1.7.2, following the structure of GPU3 in Fig. 1.21).  The 1x2 sub-matrices of C are indexed (i, j),
// 0 <= i < n and 0 <= j < n/2; a thread computes C(i, 2j) and C(i, 2j+1), reading a four values at a
// time as a float4 and b two values at a time as a float2, and writing both results as one float2.
__global__ void GPU2(float *a, float *b, float *c, int n)
{
    // thread code to compute a 1 x 2 sub-matrix of c
    // cast a, b, and c into types suitable for I/O
    float4 *a4 = (float4 *) a;
    float2 *b2 = (float2 *) b;
    float2 *c2 = (float2 *) c;

    // determine index of 1 x 2 c sub-matrix to compute
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;

    int nDiv2 = n / 2;
    int nDiv4 = n / 4;
    int aNext = i * nDiv4;
    int bNext = j;
    float2 temp2 = make_float2(0, 0);
    for (int k = 0; k < nDiv4; k++)
    {
        // a(i, 4k..4k+3) times rows 4k..4k+3 of b, columns 2j and 2j+1
        float4 aIn = a4[aNext++];
        float2 bIn = b2[bNext];
        temp2.x += aIn.x * bIn.x; temp2.y += aIn.x * bIn.y;
        bNext += nDiv2;
        bIn = b2[bNext];
        temp2.x += aIn.y * bIn.x; temp2.y += aIn.y * bIn.y;
        bNext += nDiv2;
        bIn = b2[bNext];
        temp2.x += aIn.z * bIn.x; temp2.y += aIn.z * bIn.y;
        bNext += nDiv2;
        bIn = b2[bNext];
        temp2.x += aIn.w * bIn.x; temp2.y += aIn.w * bIn.y;
        bNext += nDiv2;
    }
    c2[i * nDiv2 + j] = temp2;
}

// Fig. 1.21: GPU2 widened to a 1x4 strip, so b and c move as float4 too.  With (4,16) blocks a block
// computes a 16 x 16 sub-matrix of c.
__global__ void GPU3(float *a, float *b, float *c, int n)
{
    // thread code to compute a 1 x 4 sub-matrix of c
    // cast a, b, and c into types suitable for I/O
    float4 *a4 = (float4 *) a;
    float4 *b4 = (float4 *) b;
    float4 *c4 = (float4 *) c;

    // determine index of 1 x 4 c sub-matrix to compute
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;

    int nDiv4 = n / 4;
    int aNext = i * nDiv4;
    int bNext = j;
    float4 temp4;
    temp4.x = temp4.y = temp4.z = temp4.w = 0;
    for (int k = 0; k < nDiv4; k++)
    {
        float4 aIn = a4[aNext++];
        float4 bIn = b4[bNext];
        temp4.x += aIn.x * bIn.x; temp4.y += aIn.x * bIn.y;
        temp4.z += aIn.x * bIn.z; temp4.w += aIn.x * bIn.w;
        bNext += nDiv4;
        bIn = b4[bNext];
        temp4.x += aIn.y * bIn.x; temp4.y += aIn.y * bIn.y;
        temp4.z += aIn.y * bIn.z; temp4.w += aIn.y * bIn.w;
        bNext += nDiv4;
        bIn = b4[bNext];
        temp4.x += aIn.z * bIn.x; temp4.y += aIn.z * bIn.y;
        temp4.z += aIn.z * bIn.z; temp4.w += aIn.z * bIn.w;
        bNext += nDiv4;
        bIn = b4[bNext];
        temp4.x += aIn.w * bIn.x; temp4.y += aIn.w * bIn.y;
        temp4.z += aIn.w * bIn.z; temp4.w += aIn.w * bIn.w;
        bNext += nDiv4;
    }
    c4[i * nDiv4 + j] = temp4;
}
