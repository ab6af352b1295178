// One block per (token, head), naive form. Pipeline: stage q in shared memory; one warp per key
// computes its score into the scratch row (-inf for keys not attended), expanding
// k_nope[d] = W_UK[d] . c_kv per key; block max and exp-sum; one warp per output dim expands
// v_j = W_UV c_j per key and sums p_j v_j. (The absorbed form is kernels/mla_decode.)
#pragma once

#include <cmath>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/mla_attention/mla_attention.h"

namespace moe::cuda {

constexpr int kMlaThreads = 256;

// Position of key i of token t, or -1 when the slot is not attended.
__device__ __forceinline__ int64_t mla_key_pos(const MlaAttentionParams& p, int64_t t, int64_t i,
                                               int64_t pos_t) {
  if (p.selected) {
    const int32_t k = p.selected[t * p.sel_stride + i];
    return (k >= 0 && k <= pos_t) ? k : -1;
  }
  return i <= pos_t ? i : -1;
}

__global__ void __launch_bounds__(kMlaThreads) mla_attention_kernel(const MlaAttentionParams p) {
  extern __shared__ float smem[];
  __shared__ float red[32];
  const int64_t t = blockIdx.x / p.H, h = blockIdx.x % p.H;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  const int64_t LR = p.L + p.R;
  float* qn = smem;        // [Dn] q_nope
  float* qpe = qn + p.Dn;  // [R]
  const float* qrow = p.q + t * p.q_s0 + h * p.q_s1;
  for (int64_t d = threadIdx.x; d < p.Dn + p.R; d += blockDim.x) qn[d] = qrow[d];
  __syncthreads();
  const int64_t wbase = h * (p.Dn + p.Dv) * p.L;  // W_UK rows [Dn, L] then W_UV rows [Dv, L]
  const int64_t pos_t = p.b.positions[t], seq = p.b.token_seq[t];
  const int64_t n = p.selected ? p.sel_k : pos_t + 1;  // keys looked at
  float* sc = p.scores + blockIdx.x * p.n_keys;
  // Scores, one warp per key.
  for (int64_t i = warp; i < n; i += nwarps) {
    const int64_t kp = mla_key_pos(p, t, i, pos_t);
    const int64_t off = kp >= 0 ? cache_offset(p.b, seq, kp, LR) : -1;
    float s = -INFINITY;
    if (off >= 0) {
      const float* lat = p.cache + off;
      float acc = 0;
      for (int64_t d = 0; d < p.Dn; ++d) {  // k_nope[d] = W_UK[d] . c_kv
        float k = 0;
        for (int64_t c = lane; c < p.L; c += 32)
          k = fmaf(load_w(p.kv_b, p.wt, wbase + d * p.L + c), lat[c], k);
        k = warp_sum(k);
        if (lane == 0) acc = fmaf(qn[d], k, acc);
      }
      for (int64_t r = lane; r < p.R; r += 32) acc = fmaf(qpe[r], lat[p.L + r], acc);
      s = warp_sum(acc) * p.softmax_scale;
    }
    if (lane == 0) sc[i] = s;
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, sc[i]);
  mx = block_max(mx, red, -INFINITY);
  float sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float e = sc[i] == -INFINITY ? 0.f : expf(sc[i] - mx);
    sc[i] = e;
    sum += e;
  }
  sum = block_sum(sum, red);  // synchronises: sc is complete
  const float inv = sum > 0 ? 1.f / sum : 0.f;
  float* o = p.out + t * p.out_s0 + h * p.out_s1;
  for (int64_t d = warp; d < p.Dv; d += nwarps) {
    float acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (sc[i] == 0.f) continue;
      const int64_t kp = mla_key_pos(p, t, i, pos_t);
      const float* lat = p.cache + cache_offset(p.b, seq, kp, LR);
      float v = 0;  // v_j[d] = W_UV[d] . c_kv_j
      for (int64_t c = lane; c < p.L; c += 32)
        v = fmaf(load_w(p.kv_b, p.wt, wbase + (p.Dn + d) * p.L + c), lat[c], v);
      acc = fmaf(sc[i], warp_sum(v), acc);
    }
    if (lane == 0) o[d] = acc * inv;
  }
}

}  // namespace moe::cuda
