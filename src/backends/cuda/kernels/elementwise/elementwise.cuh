// Grid-stride loop over T*N elements; each element is read and written by one thread, so the
// output may alias an input.
#pragma once

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/elementwise/elementwise.h"

namespace moe::cuda {

constexpr int kEltThreads = 256;

__global__ void __launch_bounds__(kEltThreads) elementwise_kernel(const ElementwiseParams p) {
  const int64_t n = p.T * p.N;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / p.N, k = i % p.N;
    float* y = p.y + t * p.y_stride + k;
    switch (p.op) {
      case ElementwiseOp::kAdd:
        *y += p.a[t * p.a_stride + k];
        break;
      case ElementwiseOp::kScale:
        *y *= p.s;
        break;
      case ElementwiseOp::kSiluMul: {
        const float g = p.a[t * p.a_stride + k], u = p.b[t * p.b_stride + k];
        *y = g / (1.0f + expf(-g)) * u;
        break;
      }
    }
  }
}

}  // namespace moe::cuda
