#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/moe_experts/moe_experts.cuh"

namespace moe::cuda {
namespace {

template <typename W>
void launch_typed(const MoeExpertsParams& p, Stream stream) {
  const dim3 g1(static_cast<unsigned>(p.T * p.K),
                static_cast<unsigned>(ceil_div(p.I, kExpertWarps)));
  moe_gate_up_kernel<W><<<g1, kExpertThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("moe_experts/gate_up");
  const dim3 g2(static_cast<unsigned>(p.T), static_cast<unsigned>(ceil_div(p.D, kExpertWarps)));
  moe_down_kernel<W><<<g2, kExpertThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("moe_experts/down");
}

}  // namespace

void launch_moe_experts(const MoeExpertsParams& p, Stream stream) {
  if (p.T == 0) return;
  MOE_CHECK(p.E <= kMaxExperts) << "moe_experts: " << p.E
                                << " experts (supported: <= " << kMaxExperts << ")";
  MOE_CHECK(ceil_div(p.I, kExpertWarps) <= 65535 && ceil_div(p.D, kExpertWarps) <= 65535);
  switch (p.wt) {
    case kWF32:
      launch_typed<float>(p, stream);
      break;
    case kWBF16:
      launch_typed<__nv_bfloat16>(p, stream);
      break;
    case kWF16:
      launch_typed<__half>(p, stream);
      break;
    case kWFp8Block:
    case kWNvfp4:
      launch_typed<void>(p, stream);
      break;
    default:
      MOE_CHECK(false) << "moe_experts: weight dtype code " << p.wt
                       << " (supported: F32, BF16, F16, FP8 block, NVFP4)";
  }
}

}  // namespace moe::cuda
