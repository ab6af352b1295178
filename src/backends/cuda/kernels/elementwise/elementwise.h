// Elementwise ops over [T, N] f32 views with strided rows: y += x, y *= s, y = silu(g) ⊙ u.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

enum class ElementwiseOp : int { kAdd, kScale, kSiluMul };

struct ElementwiseParams {
  ElementwiseOp op = ElementwiseOp::kAdd;
  float* y = nullptr;
  int64_t y_stride = 0;
  const float* a = nullptr;  // add: x; silu_mul: gate
  int64_t a_stride = 0;
  const float* b = nullptr;  // silu_mul: up
  int64_t b_stride = 0;
  float s = 1.f;  // scale
  int64_t T = 0, N = 0;
};

void launch_elementwise(const ElementwiseParams& p, Stream stream);

}  // namespace moe::cuda
