// Stage (c) of absorbed MLA: out[t, h, :] = W_UV[h] o^[t, h, :]. Block per (head h, 16 rows of
// W_UV): the rows are staged once as f32 [16][L] in shared memory, then the block walks all
// tokens 16 at a time (o^ tile [16 tokens][L]) through TileDot, so kv_b's W_UV is read once
// per call.
#pragma once

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/mla_decode/mla_decode.h"
#include "backends/cuda/kernels/mla_decode/mla_tile_dot.cuh"

namespace moe::cuda::mla {

__host__ __device__ inline int64_t v_project_ld(int64_t L) { return (L + 3) / 4 * 4; }

__global__ void __launch_bounds__(kMlaDecodeThreads) v_project_kernel(const MlaDecodeParams p) {
  using Dot = TileDot<16>;
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int ld = static_cast<int>(v_project_ld(p.L));
  float* ws = smem;          // [16 rows][ld]   W_UV[h][d0 + r, :]
  float* os = ws + 16 * ld;  // [16 tokens][ld] o^
  const int64_t chunks = (p.Dv + 15) / 16;
  const int64_t h = blockIdx.x / chunks, d0 = blockIdx.x % chunks * 16;
  const int64_t T = p.b.num_tokens;

  const int64_t wbase = (h * (p.Dn + p.Dv) + p.Dn + d0) * p.L;  // W_UV[h] row d0
  for (int64_t i = threadIdx.x; i < 16 * ld; i += blockDim.x) {
    const int64_t r = i / ld, c = i % ld;
    ws[i] = (d0 + r < p.Dv && c < p.L) ? load_w(p.kv_b, p.wt, wbase + r * p.L + c) : 0.f;
  }
  for (int64_t t0 = 0; t0 < T; t0 += 16) {
    __syncthreads();  // ws staged / previous os consumed
    for (int64_t i = threadIdx.x; i < 16 * ld; i += blockDim.x) {
      const int64_t r = i / ld, c = i % ld;
      os[i] = (t0 + r < T && c < p.L) ? p.ohat[((t0 + r) * p.H + h) * p.L + c] : 0.f;
    }
    __syncthreads();
    float c[4][4];
    Dot::run(os, ld, ws, ld, ld / 4, c);
    if (Dot::leader()) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t t = t0 + Dot::row_a() + i;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int64_t d = d0 + Dot::row_b() + j;
          if (t < T && d < p.Dv) p.out[t * p.out_s0 + h * p.out_s1 + d] = c[i][j];
        }
      }
    }
  }
}

}  // namespace moe::cuda::mla
