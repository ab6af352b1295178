// One block per row. Greedy: block argmax. Otherwise: bitonic sort of (logit, id) descending
// with ties to the lower id (the reference's stable sort), then thread 0 walks the sorted row in
// the reference's order of f64 operations (softmax over the top-k, nucleus cut, draw).
#pragma once

#include <cmath>

#include "backends/cuda/kernels/bitonic_sort.cuh"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/sample/sample.h"

namespace moe::cuda {

constexpr int kSampleThreads = 512;  // 1024 would spill (64 registers)

// Same as ops::splitmix64 / ops::sampling_uniform (host); the tests check they agree.
__device__ __forceinline__ uint64_t splitmix64_dev(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ double sampling_uniform_dev(uint64_t seed, uint64_t step) {
  const uint64_t r = splitmix64_dev(splitmix64_dev(seed) ^ (step * 0xd1b54a32d192ed03ull));
  return static_cast<double>(r >> 11) * 0x1.0p-53;
}

__global__ void __launch_bounds__(kSampleThreads)
    sample_kernel(const __grid_constant__ SampleParams p) {
  __shared__ float red_v[32];
  __shared__ int32_t red_i[32];
  const int64_t s = blockIdx.x;
  const SampleRow r = p.rows[s];
  const float* lg = p.logits + s * p.logits_stride;
  if (r.temperature <= 0.f || r.top_k == 1) {
    float best = -INFINITY;
    int32_t bid = 0;
    bool have = false;
    for (int64_t v = threadIdx.x; v < p.V; v += blockDim.x) {
      const float x = lg[v];
      if (!have || x > best) {  // ascending v per thread: first max wins
        best = x;
        bid = static_cast<int32_t>(v);
        have = true;
      }
    }
    if (!have) bid = INT32_MAX;
    // Warp then block reduction on (value desc, id asc).
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best, o);
      const int32_t oi = __shfl_xor_sync(0xffffffffu, bid, o);
      if (ov > best || (ov == best && oi < bid) || (bid == INT32_MAX && oi != INT32_MAX)) {
        best = ov;
        bid = oi;
      }
    }
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
      red_v[warp] = best;
      red_i[warp] = bid;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
        if (red_i[w] != INT32_MAX &&
            (red_v[w] > best || (red_v[w] == best && red_i[w] < bid) || bid == INT32_MAX)) {
          best = red_v[w];
          bid = red_i[w];
        }
      p.out[s] = bid == INT32_MAX ? 0 : bid;
    }
    return;
  }
  float* keys = p.keys + s * p.v_pad;
  int32_t* ids = p.ids + s * p.v_pad;
  for (int64_t v = threadIdx.x; v < p.v_pad; v += blockDim.x) {
    keys[v] = v < p.V ? lg[v] : -INFINITY;
    ids[v] = static_cast<int32_t>(v);
  }
  block_bitonic_sort_desc(keys, ids, p.v_pad);
  if (threadIdx.x != 0) return;
  int64_t keep = r.top_k > 0 ? (r.top_k < p.V ? r.top_k : p.V) : p.V;
  const double mx = keys[0] / r.temperature;
  double sum = 0;
  for (int64_t i = 0; i < keep; ++i) sum += exp(static_cast<double>(keys[i] / r.temperature) - mx);
  auto prob = [&](int64_t i) {
    return exp(static_cast<double>(keys[i] / r.temperature) - mx) / sum;
  };
  double mass = 1.0;
  const bool nucleus = r.top_p < 1.f;
  if (nucleus) {
    double cum = 0;
    int64_t n = 0;
    while (n < keep && cum < r.top_p) cum += prob(n++);
    keep = n > 1 ? n : 1;
    mass = 0;
    for (int64_t i = 0; i < keep; ++i) mass += prob(i);
  }
  const double u = sampling_uniform_dev(r.seed, r.step);
  double cum = 0;
  int32_t chosen = ids[keep - 1];
  for (int64_t i = 0; i < keep; ++i) {
    cum += nucleus ? prob(i) / mass : prob(i);
    if (u < cum) {
      chosen = ids[i];
      break;
    }
  }
  p.out[s] = chosen;
}

}  // namespace moe::cuda
