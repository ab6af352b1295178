#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/embed/embed.cuh"

namespace moe::cuda {

void launch_embed(const EmbedParams& p, Stream stream) {
  if (p.T == 0) return;
  embed_kernel<<<static_cast<unsigned>(p.T), kEmbedThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("embed");
}

}  // namespace moe::cuda
