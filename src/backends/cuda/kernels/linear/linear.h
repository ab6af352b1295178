// Projection y = x · w^T with f32 activations and weights in any ops::WeightFormat (dense
// f32/bf16/f16, FP8 block, NVFP4: W8A16 / W4A16, dequantized in the kernel), f32 accumulation.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

struct LinearParams {
  float* y = nullptr;  // [M, N], row stride y_stride
  int64_t y_stride = 0;
  const float* x = nullptr;  // [M, K], row stride x_stride
  int64_t x_stride = 0;
  const void* w = nullptr;        // [N, K] contiguous, dtype wt (NVFP4: [N, K/2] packed codes)
  int wt = kWF32;                 // WType
  const void* w_scale = nullptr;  // FP8 block: [ceil(N/block), ceil(K/block)] f32;
                                  // NVFP4: [N, K/16] F8_E4M3
  int64_t w_block = 128;          // FP8 block edge
  float w_global_scale = 1.f;     // NVFP4 weight_scale_2
  int64_t M = 0, N = 0, K = 0;
};

void launch_linear(const LinearParams& p, Stream stream);

}  // namespace moe::cuda
