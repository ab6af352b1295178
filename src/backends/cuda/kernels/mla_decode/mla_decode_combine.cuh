// Combine step of the split core (splits > 1): for each (token, head), with M = max_s m_s and
// w_s = exp2(m_s - M) (0 for a split that attended nothing), o^ = sum_s w_s o_s / sum_s w_s l_s,
// summed over s in order (deterministic). No attended key at all: o^ = 0.
#pragma once

#include <cmath>

#include "backends/cuda/kernels/mla_decode/mla_decode.h"

namespace moe::cuda::mla {

constexpr int kCombineThreads = 128;

__global__ void __launch_bounds__(kCombineThreads) decode_combine_kernel(const MlaDecodeParams p) {
  __shared__ float w[kMlaMaxSplits];
  __shared__ float inv_l;
  const int splits = p.splits;
  const int64_t L = p.L, th = blockIdx.x;  // th = t * H + h
  const float* ml = p.part_ml + th * splits * 2;
  float mx = -INFINITY;
  for (int s = 0; s < splits; ++s) mx = fmaxf(mx, ml[2 * s]);
  for (int s = threadIdx.x; s < splits; s += blockDim.x)
    w[s] = ml[2 * s] == -INFINITY ? 0.f : exp2f(ml[2 * s] - mx);
  __syncthreads();
  if (threadIdx.x == 0) {
    float l = 0.f;
    for (int s = 0; s < splits; ++s) l = fmaf(w[s], ml[2 * s + 1], l);
    inv_l = l > 0.f ? 1.f / l : 0.f;
  }
  __syncthreads();
  const float* po = p.part_o + th * splits * L;
  float* oh = p.ohat + th * L;
  for (int64_t c = threadIdx.x; c < L; c += blockDim.x) {
    float acc = 0.f;
    for (int s = 0; s < splits; ++s)
      if (w[s] != 0.f) acc = fmaf(w[s], po[s * L + c], acc);
    oh[c] = acc * inv_l;
  }
}

}  // namespace moe::cuda::mla
