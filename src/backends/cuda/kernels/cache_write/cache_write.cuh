// One block per token; positions outside the page table are skipped (the host validated them).
#pragma once

#include "backends/cuda/kernels/cache_write/cache_write.h"
#include "backends/cuda/kernels/common.cuh"

namespace moe::cuda {

constexpr int kCacheWriteThreads = 128;

__global__ void __launch_bounds__(kCacheWriteThreads) cache_write_kernel(const CacheWriteParams p) {
  const int64_t t = blockIdx.x;
  const int64_t off = cache_offset(p.b, p.b.token_seq[t], p.b.positions[t], p.W);
  if (off < 0) return;
  const float* s = p.src + t * p.src_stride;
  for (int64_t k = threadIdx.x; k < p.W; k += blockDim.x) p.cache[off + k] = s[k];
}

}  // namespace moe::cuda
