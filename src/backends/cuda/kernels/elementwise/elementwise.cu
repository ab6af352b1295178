#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/elementwise/elementwise.cuh"

namespace moe::cuda {

void launch_elementwise(const ElementwiseParams& p, Stream stream) {
  const int64_t n = p.T * p.N;
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(n, kEltThreads), 4096));
  elementwise_kernel<<<blocks, kEltThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("elementwise");
}

}  // namespace moe::cuda
