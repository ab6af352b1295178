// Scatter of each token's vector into its sequence's page: cache[page, pos % P, :] = src[t, :].
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

struct CacheWriteParams {
  float* cache = nullptr;      // [pages, P, W]
  const float* src = nullptr;  // [T, W], row stride src_stride
  int64_t src_stride = 0;
  int64_t W = 0;
  LayoutParams b;
};

void launch_cache_write(const CacheWriteParams& p, Stream stream);

}  // namespace moe::cuda
