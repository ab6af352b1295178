// Rotary embedding in place on x [T, heads, R] (strided, R contiguous). inv_freq travels in the
// kernel parameters (R/2 <= kMaxRopeHalf), so no device table and nothing to upload per step.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

constexpr int kMaxRopeHalf = 128;

struct RopeKernelParams {
  float* x = nullptr;
  int64_t s0 = 0, s1 = 0;  // strides of the token and head dimensions
  int64_t T = 0, heads = 0, R = 0;
  const int32_t* positions = nullptr;  // [T]
  bool interleaved = true;
  float attention_factor = 1.f;
  float inv_freq[kMaxRopeHalf] = {};
};

void launch_rope(const RopeKernelParams& p, Stream stream);

}  // namespace moe::cuda
