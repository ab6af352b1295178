// Embedding gather: y[t, :] = table[ids[t], :] as f32. Ids outside [0, V) give a NaN row.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

struct EmbedParams {
  float* y = nullptr;  // [T, D], row stride y_stride
  int64_t y_stride = 0;
  const int32_t* ids = nullptr;  // [T]
  const void* table = nullptr;   // [V, D] contiguous, dtype wt
  int wt = kWF32;
  int64_t T = 0, V = 0, D = 0;
};

void launch_embed(const EmbedParams& p, Stream stream);

}  // namespace moe::cuda
