// One block per token. Threads compute s = sigmoid(logit) and choice = s + bias into shared
// memory; with groups, one thread per group its top-2 sum and warp 0 keeps the topk_group best
// groups (repeated warp argmax); then K rounds of a block argmax over the experts not taken
// yet (each thread its strided experts, a shuffle reduction per warp, thread 0 over the warps).
// Ties go to the lower index everywhere, as the reference's stable sorts.
// NOTE: the previous form picked experts by thread 0 alone (K * E serial shared-memory steps);
// on the H200 that was ~93 us per call (bench/decode_step: moe_route 0.28 ms of a 3-layer step).
#pragma once

#include <cmath>
#include <cstdint>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/moe_route/moe_route.h"

namespace moe::cuda {

constexpr int kRouteThreads = 128;
constexpr int kRouteWarps = kRouteThreads / 32;
constexpr int kMaxRouteGroups = 64;

// (v, i) ranks above (bv, bi): larger value, ties to the lower index; bi < 0 is "none yet".
__device__ __forceinline__ bool route_better(float v, int i, float bv, int bi) {
  return bi < 0 || v > bv || (v == bv && i < bi);
}

// Argmax over the warp's (v, i) pairs (i < 0: no candidate); every lane returns lane 0's result.
__device__ __forceinline__ void route_warp_argmax(float& v, int& i) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (oi >= 0 && route_better(ov, oi, v, i)) v = ov, i = oi;
  }
  v = __shfl_sync(0xffffffffu, v, 0);
  i = __shfl_sync(0xffffffffu, i, 0);
}

__global__ void __launch_bounds__(kRouteThreads) moe_route_kernel(const MoeRouteKernelParams p) {
  __shared__ float s[kMaxRouteExperts], choice[kMaxRouteExperts];
  __shared__ bool taken[kMaxRouteExperts];
  __shared__ float gscore[kMaxRouteGroups];
  __shared__ float warp_v[kRouteWarps];
  __shared__ int warp_i[kRouteWarps];
  __shared__ unsigned long long keep_groups;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int E = static_cast<int>(p.E);
  const int64_t t = blockIdx.x;
  const float* lg = p.logits + t * p.logits_stride;
  for (int e = tid; e < E; e += blockDim.x) {
    s[e] = 1.0f / (1.0f + expf(-lg[e]));
    choice[e] = s[e] + load_w(p.bias, p.bias_wt, e);
    taken[e] = false;
  }
  __syncthreads();
  if (p.n_group > 1) {
    const int G = static_cast<int>(p.n_group), per_group = E / G;
    for (int g = tid; g < G; g += blockDim.x) {
      float m1 = -INFINITY, m2 = -INFINITY;
      for (int e = g * per_group; e < (g + 1) * per_group; ++e) {
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
    if (warp == 0) {
      unsigned long long keep = 0;  // bit g: group g stays eligible
      for (int64_t r = 0; r < p.topk_group; ++r) {
        float bv = 0.f;
        int bi = -1;
        for (int g = lane; g < G; g += 32)
          if (!((keep >> g) & 1ull) && route_better(gscore[g], g, bv, bi)) bv = gscore[g], bi = g;
        route_warp_argmax(bv, bi);
        keep |= 1ull << bi;
      }
      if (lane == 0) keep_groups = keep;
    }
    __syncthreads();
    for (int e = tid; e < E; e += blockDim.x)
      if (!((keep_groups >> (e / per_group)) & 1ull)) choice[e] = -INFINITY;
    __syncthreads();
  }
  int32_t* ids = p.ids + t * p.ids_stride;
  double sum = 0;  // thread 0
  for (int64_t k = 0; k < p.K; ++k) {
    float bv = 0.f;
    int bi = -1;
    for (int e = tid; e < E; e += blockDim.x)
      if (!taken[e] && route_better(choice[e], e, bv, bi)) bv = choice[e], bi = e;
    route_warp_argmax(bv, bi);
    if (lane == 0) warp_v[warp] = bv, warp_i[warp] = bi;
    __syncthreads();
    if (tid == 0) {
      float v = 0.f;
      int best = -1;
      for (int w = 0; w < kRouteWarps; ++w)
        if (warp_i[w] >= 0 && route_better(warp_v[w], warp_i[w], v, best))
          v = warp_v[w], best = warp_i[w];
      taken[best] = true;  // K <= E: some expert is always left
      ids[k] = best;
      sum += s[best];
    }
    __syncthreads();
  }
  if (tid != 0) return;
  float* w = p.weights + t * p.weights_stride;
  for (int64_t k = 0; k < p.K; ++k) {
    double v = s[ids[k]];
    if (p.norm_topk_prob) v /= (sum + 1e-20);
    w[k] = static_cast<float>(v * p.routed_scaling_factor);
  }
}

}  // namespace moe::cuda
