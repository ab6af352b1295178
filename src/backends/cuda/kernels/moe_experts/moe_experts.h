// Routed experts, token-major: h[t, k, :] = silu(gate_e x_t) ⊙ (up_e x_t), then
// y[t, :] = sum_k w[t, k] · down_e h[t, k, :]. Expert weight pointers travel in the kernel
// parameters (E <= kMaxExperts; CUDA 12.1+ allows 32 KiB of parameters), so nothing is
// uploaded per step. Deterministic: no atomics, each output written once.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

constexpr int kMaxExperts = 512;

struct MoeExpertsParams {
  float* y = nullptr;  // [T, D]
  int64_t y_stride = 0;
  const float* x = nullptr;  // [T, D]
  int64_t x_stride = 0;
  const int32_t* ids = nullptr;  // [T, K]
  int64_t ids_stride = 0;
  const float* weights = nullptr;  // [T, K]
  int64_t weights_stride = 0;
  int64_t T = 0, D = 0, K = 0, I = 0, E = 0;
  int wt = kWF32;
  float* h = nullptr;                  // scratch [T * K, I]
  const void* gate[kMaxExperts] = {};  // [I, D] each
  const void* up[kMaxExperts] = {};    // [I, D]
  const void* down[kMaxExperts] = {};  // [D, I]
};

void launch_moe_experts(const MoeExpertsParams& p, Stream stream);

}  // namespace moe::cuda
