// One thread per rotated pair (t, h, i); angles in f32 as PyTorch (and the reference) compute them.
#pragma once

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/rope/rope.h"

namespace moe::cuda {

constexpr int kRopeThreads = 256;

__global__ void __launch_bounds__(kRopeThreads)
    rope_kernel(const __grid_constant__ RopeKernelParams p) {
  const int64_t half = p.R / 2;
  const int64_t n = p.T * p.heads * half;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e % half, h = (e / half) % p.heads, t = e / (half * p.heads);
    const float pos = static_cast<float>(p.positions[t]);
    const float ang = p.inv_freq[i] * pos;
    const float cs = cosf(ang) * p.attention_factor, sn = sinf(ang) * p.attention_factor;
    float* v = p.x + t * p.s0 + h * p.s1;
    const int64_t a = p.interleaved ? 2 * i : i, b = p.interleaved ? 2 * i + 1 : i + half;
    const float va = v[a], vb = v[b];
    v[a] = va * cs - vb * sn;
    v[b] = vb * cs + va * sn;
  }
}

}  // namespace moe::cuda
