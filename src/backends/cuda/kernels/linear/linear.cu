#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/linear/linear.cuh"

namespace moe::cuda {

void launch_linear(const LinearParams& p, Stream stream) {
  if (p.M == 0 || p.N == 0) return;
  MOE_CHECK(ceil_div(p.M, kLinBM) <= 65535) << "linear: " << p.M << " rows exceed the grid";
  const dim3 grid(static_cast<unsigned>(ceil_div(p.N, kLinBN)),
                  static_cast<unsigned>(ceil_div(p.M, kLinBM)));
  switch (p.wt) {
    case kWF32:
      linear_kernel<float><<<grid, kLinThreads, 0, stream>>>(p);
      break;
    case kWBF16:
      linear_kernel<__nv_bfloat16><<<grid, kLinThreads, 0, stream>>>(p);
      break;
    case kWF16:
      linear_kernel<__half><<<grid, kLinThreads, 0, stream>>>(p);
      break;
    case kWFp8Block:
    case kWNvfp4:
      linear_kernel<void><<<grid, kLinThreads, 0, stream>>>(p);
      break;
    default:
      MOE_CHECK(false) << "linear: weight type code " << p.wt
                       << " (supported: F32, BF16, F16, FP8 block, NVFP4)";
  }
  MOE_CUDA_CHECK_LAUNCH("linear");
}

}  // namespace moe::cuda
