// Dense projection y = x · w^T with f32 activations and f32/bf16/f16 weights, f32 accumulation.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

struct LinearParams {
  float* y = nullptr;  // [M, N], row stride y_stride
  int64_t y_stride = 0;
  const float* x = nullptr;  // [M, K], row stride x_stride
  int64_t x_stride = 0;
  const void* w = nullptr;  // [N, K] contiguous, dtype wt
  int wt = kWF32;
  int64_t M = 0, N = 0, K = 0;
};

void launch_linear(const LinearParams& p, Stream stream);

}  // namespace moe::cuda
