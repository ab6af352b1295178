// One block per token. Threads compute s = sigmoid(logit) and choice = s + bias into shared
// memory and one thread per group its top-2 sum; thread 0 then picks groups and experts by
// repeated argmax (ties to the lower index, as the reference's stable sort) and writes the
// weights. K * E serial steps (8 * 256) are negligible next to the expert GEMMs.
#pragma once

#include <cmath>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/moe_route/moe_route.h"

namespace moe::cuda {

constexpr int kRouteThreads = 128;
constexpr int kMaxRouteGroups = 64;

__global__ void __launch_bounds__(kRouteThreads) moe_route_kernel(const MoeRouteKernelParams p) {
  __shared__ float s[kMaxRouteExperts], choice[kMaxRouteExperts];
  __shared__ bool taken[kMaxRouteExperts];
  __shared__ float gscore[kMaxRouteGroups];
  const int64_t t = blockIdx.x;
  const float* lg = p.logits + t * p.logits_stride;
  for (int64_t e = threadIdx.x; e < p.E; e += blockDim.x) {
    s[e] = 1.0f / (1.0f + expf(-lg[e]));
    choice[e] = s[e] + load_w(p.bias, p.bias_wt, e);
    taken[e] = false;
  }
  __syncthreads();
  const int64_t per_group = p.E / p.n_group;
  if (p.n_group > 1) {
    for (int64_t g = threadIdx.x; g < p.n_group; g += blockDim.x) {
      float m1 = -INFINITY, m2 = -INFINITY;
      for (int64_t e = g * per_group; e < (g + 1) * per_group; ++e) {
        const float v = choice[e];
        if (v > m1) {
          m2 = m1;
          m1 = v;
        } else if (v > m2) {
          m2 = v;
        }
      }
      gscore[g] = m1 + (per_group > 1 ? m2 : 0.f);
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  if (p.n_group > 1) {
    uint64_t keep = 0;  // bit g: group g stays eligible
    for (int64_t i = 0; i < p.topk_group; ++i) {
      int64_t best = -1;
      for (int64_t g = 0; g < p.n_group; ++g)
        if (!((keep >> g) & 1) && (best < 0 || gscore[g] > gscore[best])) best = g;
      keep |= uint64_t{1} << best;
    }
    for (int64_t e = 0; e < p.E; ++e)
      if (!((keep >> (e / per_group)) & 1)) choice[e] = -INFINITY;
  }
  int32_t* ids = p.ids + t * p.ids_stride;
  float* w = p.weights + t * p.weights_stride;
  double sum = 0;
  for (int64_t k = 0; k < p.K; ++k) {
    int64_t best = -1;
    for (int64_t e = 0; e < p.E; ++e)
      if (!taken[e] && (best < 0 || choice[e] > choice[best])) best = e;
    taken[best] = true;
    ids[k] = static_cast<int32_t>(best);
    sum += s[best];
  }
  for (int64_t k = 0; k < p.K; ++k) {
    double v = s[ids[k]];
    if (p.norm_topk_prob) v /= (sum + 1e-20);
    w[k] = static_cast<float>(v * p.routed_scaling_factor);
  }
}

}  // namespace moe::cuda
