// Stage (a) of absorbed MLA: qa[t, h, :] = [W_UK[h]^T q_nope[t, h] | q_pe[t, h]] * scale, with
// scale = softmax_scale * log2(e) so the core's softmax runs on exp2.
// Block per (head h, 16 latent columns): the W_UK[h] columns are staged once, transposed to
// [16 columns][Dn] f32 in shared memory, then the block walks all tokens 16 at a time
// (q_nope tile [16 tokens][Dn]) through TileDot: kv_b's W_UK is read once per call, not once
// per token. Blocks of column chunk 0 also copy the scaled q_pe.
#pragma once

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/mla_decode/mla_decode.h"
#include "backends/cuda/kernels/mla_decode/mla_tile_dot.cuh"

namespace moe::cuda::mla {

// Row of the shared tiles: Dn rounded up to 4 floats, plus 4 so that the transposed W_UK
// stores of 16 consecutive columns spread over the banks (2-way instead of 16-way conflicts).
__host__ __device__ inline int64_t q_absorb_ld(int64_t Dn) { return (Dn + 3) / 4 * 4 + 4; }

__global__ void __launch_bounds__(kMlaDecodeThreads) q_absorb_kernel(const MlaDecodeParams p) {
  using Dot = TileDot<16>;
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int ld = static_cast<int>(q_absorb_ld(p.Dn));
  const int dn4 = static_cast<int>((p.Dn + 3) / 4);  // float4 columns summed (zero padded)
  float* ws = smem;                                  // [16 columns][ld]  W_UK[h][:, c0 + c]
  float* qs = ws + 16 * ld;                          // [16 tokens][ld]   q_nope
  const int64_t chunks = (p.L + 15) / 16;
  const int64_t h = blockIdx.x / chunks, c0 = blockIdx.x % chunks * 16;
  const int64_t T = p.b.num_tokens, LR = p.L + p.R;
  const float scale = p.softmax_scale * 1.4426950408889634f;  // log2(e)

  const int64_t wbase = h * (p.Dn + p.Dv) * p.L;  // W_UK[h] row 0
  for (int64_t i = threadIdx.x; i < 16 * 4 * dn4; i += blockDim.x) {
    const int64_t d = i / 16, c = i % 16;  // 16 consecutive columns of one row per half-warp
    float w = 0.f;
    if (d < p.Dn && c0 + c < p.L) w = load_w(p.kv_b, p.wt, wbase + d * p.L + c0 + c);
    ws[c * ld + d] = w;
  }
  for (int64_t t0 = 0; t0 < T; t0 += 16) {
    __syncthreads();  // ws staged / previous qs consumed
    for (int64_t i = threadIdx.x; i < 16 * 4 * dn4; i += blockDim.x) {
      const int64_t r = i / (4 * dn4), d = i % (4 * dn4);
      qs[r * ld + d] = (t0 + r < T && d < p.Dn) ? p.q[(t0 + r) * p.q_s0 + h * p.q_s1 + d] : 0.f;
    }
    __syncthreads();
    float c[4][4];
    Dot::run(qs, ld, ws, ld, dn4, c);
    if (Dot::leader()) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t t = t0 + Dot::row_a() + i;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int64_t col = c0 + Dot::row_b() + j;
          if (t < T && col < p.L) p.qa[(t * p.H + h) * LR + col] = c[i][j] * scale;
        }
      }
    }
  }
  if (c0 == 0) {
    for (int64_t i = threadIdx.x; i < T * p.R; i += blockDim.x) {
      const int64_t t = i / p.R, r = i % p.R;
      p.qa[(t * p.H + h) * LR + p.L + r] = p.q[t * p.q_s0 + h * p.q_s1 + p.Dn + r] * scale;
    }
  }
}

}  // namespace moe::cuda::mla
