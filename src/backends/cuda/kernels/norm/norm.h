// Row-wise RMSNorm and LayerNorm (f32 rows, gamma/beta of any float dtype); y may alias x.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

struct NormParams {
  float* y = nullptr;  // [T, N], row stride y_stride
  int64_t y_stride = 0;
  const float* x = nullptr;  // [T, N], row stride x_stride
  int64_t x_stride = 0;
  const void* gamma = nullptr;  // [N]
  int gamma_wt = kWF32;
  const void* beta = nullptr;  // [N] (LayerNorm only)
  int beta_wt = kWF32;
  int64_t T = 0, N = 0;
  float eps = 0.f;
};

void launch_rms_norm(const NormParams& p, Stream stream);
void launch_layer_norm(const NormParams& p, Stream stream);

}  // namespace moe::cuda
