// Two kernels. score: one warp per (token, key), f64 dot products cast to f32 before the ReLU
// (as the reference), keys past the token's position get -inf. select: one block per token
// sorts its row (bitonic, descending score, ascending position) and writes the first
// min(top_k, pos + 1) positions.
#pragma once

#include <cmath>

#include "backends/cuda/kernels/bitonic_sort.cuh"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/dsa_index_topk/dsa_index_topk.h"

namespace moe::cuda {

constexpr int kDsaScoreThreads = 256, kDsaSelectThreads = 1024;

__global__ void __launch_bounds__(kDsaScoreThreads) dsa_score_kernel(const DsaIndexTopkParams p) {
  const int64_t t = blockIdx.y;
  const int lane = threadIdx.x % 32;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * (kDsaScoreThreads / 32) + threadIdx.x / 32;
  if (j >= p.n_pad) return;
  const int64_t pos = p.b.positions[t];
  const int64_t off = j <= pos ? cache_offset(p.b, p.b.token_seq[t], j, p.Di) : -1;
  double acc = -INFINITY;
  if (off >= 0) {
    acc = 0;
    const float* k = p.k_cache + off;
    for (int64_t h = 0; h < p.Hi; ++h) {
      const float* qh = p.q + t * p.q_s0 + h * p.q_s1;
      double d = 0;
      for (int64_t c = lane; c < p.Di; c += 32) d += static_cast<double>(qh[c]) * k[c];
      d = static_cast<float>(warp_sum(d));
      acc += static_cast<double>(p.w[t * p.w_stride + h]) * (d > 0 ? d : 0.0);
    }
  }
  if (lane == 0) {
    p.score[t * p.n_pad + j] = acc;
    p.pos[t * p.n_pad + j] = static_cast<int32_t>(j);
  }
}

__global__ void __launch_bounds__(kDsaSelectThreads) dsa_select_kernel(const DsaIndexTopkParams p) {
  const int64_t t = blockIdx.x;
  double* score = p.score + t * p.n_pad;
  int32_t* pos = p.pos + t * p.n_pad;
  block_bitonic_sort_desc(score, pos, p.n_pad);
  const int64_t n = static_cast<int64_t>(p.b.positions[t]) + 1;
  const int64_t keep = n < p.top_k ? n : p.top_k;
  for (int64_t i = threadIdx.x; i < p.top_k; i += blockDim.x)
    p.out[t * p.out_stride + i] = i < keep ? pos[i] : -1;
}

}  // namespace moe::cuda
