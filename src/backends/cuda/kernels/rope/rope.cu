#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/rope/rope.cuh"

namespace moe::cuda {

void launch_rope(const RopeKernelParams& p, Stream stream) {
  const int64_t n = p.T * p.heads * (p.R / 2);
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(n, kRopeThreads), 4096));
  rope_kernel<<<blocks, kRopeThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("rope");
}

}  // namespace moe::cuda
