#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/norm/norm.cuh"

namespace moe::cuda {

void launch_rms_norm(const NormParams& p, Stream stream) {
  if (p.T == 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(p.T), kNormThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("rms_norm");
}

void launch_layer_norm(const NormParams& p, Stream stream) {
  if (p.T == 0) return;
  layer_norm_kernel<<<static_cast<unsigned>(p.T), kNormThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("layer_norm");
}

}  // namespace moe::cuda
