/* mmcheck
# Known-bad siblings of blas_tc_mma.cu's pipelined tensor-core kernel, each one mistake tutorials warn about.

[[kernel]]
name = "buggy.tc_no_wait_group"
entry = "mma_no_wait_group"
op = "mm"
dtypes = ["float16->float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["N // 128", "M // 128"]
smem = "3 * (128 * 32 + 32 * 128) * 2"
requires = ["M % 128 == 0", "N % 128 == 0", "K % 32 == 0"]
expect = "fail"
catch = ["mismatch", "race"]
about = "the pipeline without cp.async.wait_group: a stage is read before its copies have landed"

[[kernel]]
name = "buggy.tc_b_without_trans"
entry = "mma_b_without_trans"
op = "mm"
dtypes = ["float16->float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["N // 128", "M // 128"]
smem = "3 * (128 * 32 + 32 * 128) * 2"
requires = ["M % 128 == 0", "N % 128 == 0", "K % 32 == 0"]
expect = "fail"
catch = ["mismatch"]
about = "B's fragments loaded by ldmatrix without .trans: B is used transposed in each 8x8 block"

[[kernel]]
name = "buggy.tc_wrong_swizzle"
entry = "mma_wrong_swizzle"
op = "mm"
dtypes = ["float16->float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["N // 128", "M // 128"]
smem = "3 * (128 * 32 + 32 * 128) * 2"
requires = ["M % 128 == 0", "N % 128 == 0", "K % 32 == 0"]
expect = "fail"
catch = ["mismatch"]
about = "A's fragments read by ldmatrix unswizzled, while cp.async stored them swizzled"
*/
#include "../blas_tc_mma.cuh"

__global__ void __launch_bounds__(128) mma_no_wait_group(const half *A, const half *B, float *C, int M, int N, int K)
{
    mma_tiled_body<128, 32, 3, SWIZZLED, false, true>(A, B, C, M, N, K);
}

__global__ void __launch_bounds__(128) mma_b_without_trans(const half *A, const half *B, float *C, int M, int N,
                                                           int K)
{
    mma_tiled_body<128, 32, 3, SWIZZLED, true, false>(A, B, C, M, N, K);
}

__global__ void __launch_bounds__(128) mma_wrong_swizzle(const half *A, const half *B, float *C, int M, int N, int K)
{
    mma_tiled_body<128, 32, 3, SWIZZLED, true, true, PLAIN>(A, B, C, M, N, K);
}
