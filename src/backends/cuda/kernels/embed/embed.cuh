// One block per token; threads stride over the hidden dimension (coalesced row copy).
#pragma once

#include <cmath>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/embed/embed.h"

namespace moe::cuda {

constexpr int kEmbedThreads = 256;

__global__ void __launch_bounds__(kEmbedThreads) embed_kernel(const EmbedParams p) {
  const int64_t t = blockIdx.x;
  const int32_t id = p.ids[t];
  float* y = p.y + t * p.y_stride;
  const bool ok = id >= 0 && id < p.V;
  for (int64_t k = threadIdx.x; k < p.D; k += blockDim.x)
    y[k] = ok ? load_w(p.table, p.wt, static_cast<int64_t>(id) * p.D + k) : NAN;
}

}  // namespace moe::cuda
