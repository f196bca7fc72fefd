/* mmcheck
# A PyTorch C++/CUDA extension as newer extension tutorials write one: the kernel, a launcher taking tensors that
# checks them with TORCH_CHECK and launches on the current stream, and the operator registered with
# TORCH_LIBRARY.  The spec describes the launch the launcher makes.
[[kernel]]
name = "host_code.torch_matvec"
entry = "matvec_kernel"
op = "mv"
dtypes = ["float32"]
params = ["A", "x", "y", "M", "K"]
block = [128]
grid = ["cdiv(M, 128)"]
requires = ["M * K <= 2**31"]
about = "PyTorch extension (torch::Tensor launcher, TORCH_LIBRARY): one thread per row of A"
*/
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int THREADS = 128;

// y = A x for a row-major M x K matrix: each thread sums one row, in order.
__global__ void matvec_kernel(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                              int M, int K) {
    const int row = blockIdx.x * THREADS + threadIdx.x;
    if (row >= M) return;
    float sum = 0.0f;
    for (int k = 0; k < K; ++k)
        sum += A[(size_t)row * K + k] * x[k];
    y[row] = sum;
}

at::Tensor matvec(const at::Tensor& a, const at::Tensor& x) {
    TORCH_CHECK(a.is_cuda() && x.is_cuda(), "matvec: both tensors must be on the GPU");
    TORCH_CHECK(a.dtype() == torch::kFloat32 && x.dtype() == torch::kFloat32, "matvec takes float32 tensors");
    TORCH_CHECK(a.dim() == 2 && x.dim() == 1 && a.size(1) == x.size(0), "matvec: the shapes do not match");
    const auto A = a.contiguous();
    const auto X = x.contiguous();
    const int M = A.size(0), K = A.size(1);
    auto y = torch::empty({M}, A.options());
    const int blocks = (M + THREADS - 1) / THREADS;
    matvec_kernel<<<blocks, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        A.data_ptr<float>(), X.data_ptr<float>(), y.data_ptr<float>(), M, K);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}

TORCH_LIBRARY(mmcheck_example, m) {
    m.def("matvec(Tensor a, Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(mmcheck_example, CUDA, m) {
    m.impl("matvec", &matvec);
}
