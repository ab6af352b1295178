#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/sample/sample.cuh"

namespace moe::cuda {

void launch_sample(const SampleParams& p, Stream stream) {
  if (p.S == 0) return;
  MOE_CHECK(p.S <= kMaxSampleRows) << "sample: " << p.S << " rows in one launch";
  sample_kernel<<<static_cast<unsigned>(p.S), kSampleThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("sample");
}

}  // namespace moe::cuda
