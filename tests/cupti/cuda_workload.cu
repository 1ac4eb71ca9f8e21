// An unmodified CUDA program for `loupe capture` to record: a few
// iterations of upload, kernels, and a read back, inside NVTX ranges.
// Exits 3 when there is no usable GPU, so tests can skip.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <vector>

__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void add(float* x, const float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "cuda_workload: no usable GPU\n");
    return 3;
  }
  const int n = 1 << 20, iterations = 5;
  std::vector<float> host(n, 1.0f);  // pageable
  float *x = nullptr, *y = nullptr;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  for (int it = 0; it < iterations; ++it) {
    nvtxRangePushA("iteration");
    cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(y, 0, n * sizeof(float));
    scale<<<(n + 255) / 256, 256>>>(x, 2.0f, n);
    add<<<(n + 255) / 256, 256>>>(x, y, n);
    cudaMemcpy(host.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost);
    nvtxRangePop();
  }
  cudaFree(x);
  cudaFree(y);
  // 1.0 scaled by 2 five times, with y zero.
  std::printf("cuda_workload: x[0] = %g\n", double(host[0]));
  return host[0] == 32.0f ? 0 : 1;
}
