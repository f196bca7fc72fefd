/* mmcheck
# A known-bad batched kernel: seed002.bmm_naive for float, with one matrix offset computed from the
# wrong matrix's size.  With N < K the wrong offsets stay inside A, so the bug shows as wrong values;
# with N > K it reads far past the end of A and usually faults.

[[kernel]]
name = "buggy.batch_offset_wrong_size"
entry = "bmm_a_offset_wrong_size"
op = "bmm"
dtypes = ["float32"]
params = ["A", "B", "C", "batch", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
requires = ["batch >= 2", "N < K"]
expect = "fail"
catch = ["mismatch"]
about = "matrix l of A is taken to start at l * M * N (C's size) instead of l * M * K"
*/

// Bug: the batch offset of A uses the size of a C matrix.
__global__ void bmm_a_offset_wrong_size(const float* A, const float* B, float* C, int batch, int M,
                                        int K, int N)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    // One grid layer per matrix; batch is only needed by the launch, which sets gridDim.z = batch.
    int l = blockIdx.z;
    if (row < M && col < N) {
        const float* a = A + l * M * N;  // BUG: A's matrices are M x K, so this is l * M * K
        const float* b = B + l * K * N;
        float sum = 0;
        for (int k = 0; k < K; ++k)
            sum += a[row * K + k] * b[k * N + col];
        C[l * M * N + row * N + col] = sum;
    }
}
