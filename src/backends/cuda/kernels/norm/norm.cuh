// One block per row. Statistics in f64 (as the reference), so the only difference from it is
// the summation order. Each thread rewrites only the elements it read, so y may alias x.
#pragma once

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/norm/norm.h"

namespace moe::cuda {

constexpr int kNormThreads = 256;

__global__ void __launch_bounds__(kNormThreads) rms_norm_kernel(const NormParams p) {
  __shared__ double red[32];
  const float* x = p.x + blockIdx.x * p.x_stride;
  float* y = p.y + blockIdx.x * p.y_stride;
  double ss = 0;
  for (int64_t k = threadIdx.x; k < p.N; k += blockDim.x) ss += static_cast<double>(x[k]) * x[k];
  ss = block_sum(ss, red);
  const float inv = static_cast<float>(1.0 / sqrt(ss / p.N + p.eps));
  for (int64_t k = threadIdx.x; k < p.N; k += blockDim.x)
    y[k] = load_w(p.gamma, p.gamma_wt, k) * (x[k] * inv);
}

__global__ void __launch_bounds__(kNormThreads) layer_norm_kernel(const NormParams p) {
  __shared__ double red[32];
  const float* x = p.x + blockIdx.x * p.x_stride;
  float* y = p.y + blockIdx.x * p.y_stride;
  double s = 0;
  for (int64_t k = threadIdx.x; k < p.N; k += blockDim.x) s += x[k];
  const double mean = block_sum(s, red) / p.N;
  double v = 0;
  for (int64_t k = threadIdx.x; k < p.N; k += blockDim.x) v += (x[k] - mean) * (x[k] - mean);
  const double var = block_sum(v, red) / p.N;
  const double inv = 1.0 / sqrt(var + p.eps);
  for (int64_t k = threadIdx.x; k < p.N; k += blockDim.x)
    y[k] = static_cast<float>((x[k] - mean) * inv * load_w(p.gamma, p.gamma_wt, k) +
                              load_w(p.beta, p.beta_wt, k));
}

}  // namespace moe::cuda
