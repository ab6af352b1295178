// noaux_tc router in one kernel: sigmoid, + correction bias, group-limited top-k, normalise,
// scale. E <= kMaxRouteExperts, n_group <= 64.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

constexpr int kMaxRouteExperts = 1024;

struct MoeRouteKernelParams {
  int32_t* ids = nullptr;  // [T, K]
  int64_t ids_stride = 0;
  float* weights = nullptr;  // [T, K]
  int64_t weights_stride = 0;
  const float* logits = nullptr;  // [T, E]
  int64_t logits_stride = 0;
  const void* bias = nullptr;  // [E]
  int bias_wt = kWF32;
  int64_t T = 0, E = 0, K = 0, n_group = 1, topk_group = 1;
  bool norm_topk_prob = true;
  float routed_scaling_factor = 1.f;
};

void launch_moe_route(const MoeRouteKernelParams& p, Stream stream);

}  // namespace moe::cuda
