// Routed experts, token-major: h[t, k, :] = silu(gate_e x_t) ⊙ (up_e x_t), then
// y[t, :] = sum_k w[t, k] · down_e h[t, k, :]. Expert weight pointers travel in the kernel
// parameters (E <= kMaxExperts; CUDA 12.1+ allows 32 KiB of parameters), so nothing is
// uploaded per step. Deterministic: no atomics, each output written once. Dense F32/BF16/F16
// experts, and FP8 block / NVFP4 experts the grouped kernels do not take (widths that are not
// multiples of 128: the tiny test models), dequantized per element exactly as linear's tile
// kernel does (kernels/quant_weight.cuh).
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
  int wt = kWF32;       // WType: a dense dtype, kWFp8Block or kWNvfp4 (all experts alike)
  int64_t block = 128;  // FP8 block edge
  float* h = nullptr;   // scratch [T * K, I]
  const void* gate[kMaxExperts] = {};  // [I, D] each (NVFP4: [I, D/2] packed codes)
  const void* up[kMaxExperts] = {};    // [I, D]
  const void* down[kMaxExperts] = {};  // [D, I]
  // Quantized formats only: scales (FP8: f32 [ceil(N/block), ceil(K/block)]; NVFP4: fp8
  // [N, K/16]) and NVFP4 global scales. Parameters stay under the 32 KiB launch limit.
  const void* gate_scale[kMaxExperts] = {};
  const void* up_scale[kMaxExperts] = {};
  const void* down_scale[kMaxExperts] = {};
  float gate_gs[kMaxExperts] = {};
  float up_gs[kMaxExperts] = {};
  float down_gs[kMaxExperts] = {};
};
static_assert(sizeof(MoeExpertsParams) <= 32764, "kernel parameters over the launch limit");

void launch_moe_experts(const MoeExpertsParams& p, Stream stream);

}  // namespace moe::cuda
