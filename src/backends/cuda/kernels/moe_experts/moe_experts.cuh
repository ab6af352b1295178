// gate_up: grid (T*K, I/8), one warp per intermediate row i: two dot products over D, SiLU·up.
// down: grid (T, D/8), one warp per output element d: sum over k of w_k · (down_e[d] · h_k).
// Simple grouping (token-major); the expert-major grouped GEMM is the MoE-performance issue.
#pragma once

#include <cmath>
#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/moe_experts/moe_experts.h"
#include "backends/cuda/kernels/quant_weight.cuh"

namespace moe::cuda {

constexpr int kExpertThreads = 256, kExpertWarps = kExpertThreads / 32;

// Element (n, k) of an expert matrix with `cols` columns as f32: W a dense element type, or
// void for the quantized formats (p.wt), dequantized like linear's tile kernel.
template <typename W>
__device__ __forceinline__ float expert_w(const MoeExpertsParams& p, const void* data,
                                          const void* scale, float gs, int64_t n, int64_t k,
                                          int64_t cols) {
  if constexpr (std::is_void_v<W>) {
    QuantWeight q;
    q.data = data;
    q.scale = scale;
    q.wt = p.wt;
    q.K = cols;
    q.block = p.block;
    q.scale_cols = (cols + p.block - 1) / p.block;
    q.global_scale = gs;
    return q.load(n, k);
  } else {
    return to_f32<W>(static_cast<const W*>(data)[n * cols + k]);
  }
}

template <typename W>
__global__ void __launch_bounds__(kExpertThreads)
    moe_gate_up_kernel(const __grid_constant__ MoeExpertsParams p) {
  const int64_t tk = blockIdx.x, t = tk / p.K, k = tk % p.K;
  const int lane = threadIdx.x % 32;
  const int64_t i = static_cast<int64_t>(blockIdx.y) * kExpertWarps + threadIdx.x / 32;
  if (i >= p.I) return;
  const int32_t e = p.ids[t * p.ids_stride + k];
  float* h = p.h + tk * p.I;
  if (e < 0 || e >= p.E) {
    if (lane == 0) h[i] = NAN;
    return;
  }
  const float* x = p.x + t * p.x_stride;
  float g = 0, u = 0;
  for (int64_t d = lane; d < p.D; d += 32) {
    g = fmaf(x[d], expert_w<W>(p, p.gate[e], p.gate_scale[e], p.gate_gs[e], i, d, p.D), g);
    u = fmaf(x[d], expert_w<W>(p, p.up[e], p.up_scale[e], p.up_gs[e], i, d, p.D), u);
  }
  g = warp_sum(g);
  u = warp_sum(u);
  if (lane == 0) h[i] = g / (1.0f + expf(-g)) * u;
}

template <typename W>
__global__ void __launch_bounds__(kExpertThreads)
    moe_down_kernel(const __grid_constant__ MoeExpertsParams p) {
  const int64_t t = blockIdx.x;
  const int lane = threadIdx.x % 32;
  const int64_t d = static_cast<int64_t>(blockIdx.y) * kExpertWarps + threadIdx.x / 32;
  if (d >= p.D) return;
  float acc = 0;
  for (int64_t k = 0; k < p.K; ++k) {
    const int32_t e = p.ids[t * p.ids_stride + k];
    if (e < 0 || e >= p.E) {
      acc = NAN;
      continue;
    }
    const float* h = p.h + (t * p.K + k) * p.I;
    float o = 0;
    for (int64_t i = lane; i < p.I; i += 32)
      o = fmaf(h[i], expert_w<W>(p, p.down[e], p.down_scale[e], p.down_gs[e], d, i, p.I), o);
    acc += p.weights[t * p.weights_stride + k] * warp_sum(o);
  }
  if (lane == 0) p.y[t * p.y_stride + d] = acc;
}

}  // namespace moe::cuda
