#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/moe_route/moe_route.cuh"

namespace moe::cuda {

void launch_moe_route(const MoeRouteKernelParams& p, Stream stream) {
  MOE_CHECK(p.E <= kMaxRouteExperts && p.n_group <= kMaxRouteGroups)
      << "moe_route: " << p.E << " experts in " << p.n_group
      << " groups (supported: E <= " << kMaxRouteExperts << ", n_group <= " << kMaxRouteGroups
      << ")";
  if (p.T == 0) return;
  moe_route_kernel<<<static_cast<unsigned>(p.T), kRouteThreads, 0, stream>>>(p);
  MOE_CUDA_CHECK_LAUNCH("moe_route");
}

}  // namespace moe::cuda
