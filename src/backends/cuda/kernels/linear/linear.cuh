// Tiled SIMT GEMM: a 64x64 output tile per block, K in steps of 16 staged through shared memory
// (weights converted or dequantized to f32 on the way in, kernels/quant_weight.cuh), 4x4
// outputs per thread. Exact f32 path: F32 weights, BF16/F16 where cuBLASLt is not taken
// (K % 128 != 0, or no algorithm), FP8 / NVFP4 above the small-M kernel's M (linear_gemv.cuh).
#pragma once

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/linear/linear.h"
#include "backends/cuda/kernels/quant_weight.cuh"

namespace moe::cuda {

constexpr int kLinBM = 64, kLinBN = 64, kLinBK = 16, kLinThreads = 256;
static_assert(kLinBM * kLinBK == 4 * kLinThreads && kLinBN * kLinBK == 4 * kLinThreads,
              "each thread stages 4 elements of each operand");
static_assert((kLinBM / 4) * (kLinBN / 4) == kLinThreads, "4x4 outputs per thread");

// Weight element (n, k) as f32: W a dense element type, or void for the quantized formats
// (dequantized through QuantWeight, format p.wt).
template <typename W>
struct LinearWeightLoad {
  const W* w;
  int64_t K;
  __device__ explicit LinearWeightLoad(const LinearParams& p)
      : w(static_cast<const W*>(p.w)), K(p.K) {}
  __device__ float operator()(int64_t n, int64_t k) const { return to_f32<W>(w[n * K + k]); }
};
template <>
struct LinearWeightLoad<void> {
  QuantWeight q;
  __device__ explicit LinearWeightLoad(const LinearParams& p) {
    q.data = p.w;
    q.scale = p.w_scale;
    q.wt = p.wt;
    q.K = p.K;
    q.block = p.w_block;
    q.scale_cols = (p.K + p.w_block - 1) / p.w_block;
    q.global_scale = p.w_global_scale;
  }
  __device__ float operator()(int64_t n, int64_t k) const { return q.load(n, k); }
};

template <typename W>
__global__ void __launch_bounds__(kLinThreads) linear_kernel(const LinearParams p) {
  __shared__ float xs[kLinBK][kLinBM + 4];
  __shared__ float ws[kLinBK][kLinBN + 4];
  const LinearWeightLoad<W> wl(p);
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kLinBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kLinBN;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < p.K; k0 += kLinBK) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = tid + i * kLinThreads, r = e / kLinBK, c = e % kLinBK;
      const int64_t k = k0 + c, m = m0 + r, n = n0 + r;
      xs[c][r] = (m < p.M && k < p.K) ? p.x[m * p.x_stride + k] : 0.f;
      ws[c][r] = (n < p.N && k < p.K) ? wl(n, k) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kLinBK; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a[i] = xs[kk][ty * 4 + i];
        b[i] = ws[kk][tx * 4 + i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t m = m0 + ty * 4 + i;
    if (m >= p.M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t n = n0 + tx * 4 + j;
      if (n < p.N) p.y[m * p.y_stride + n] = acc[i][j];
    }
  }
}

}  // namespace moe::cuda
