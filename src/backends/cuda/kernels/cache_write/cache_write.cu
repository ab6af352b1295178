#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/cache_write/cache_write.cuh"

namespace moe::cuda {

void launch_cache_write(const CacheWriteParams& p, Stream stream) {
  if (p.b.num_tokens == 0) return;
  cache_write_kernel<<<static_cast<unsigned>(p.b.num_tokens), kCacheWriteThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("cache_write");
}

}  // namespace moe::cuda
