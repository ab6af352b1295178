// Multi-head latent attention over the paged latent cache [c_kv (L) | k_pe (R)], naive form
// (per-key K_nope / V expansion through W_UK / W_UV). Optional DSA selection ([T, sel_k]
// positions, -1 padded). The absorbed form is kernels/mla_decode.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

struct MlaAttentionParams {
  float* out = nullptr;  // [T, H, Dv]
  int64_t out_s0 = 0, out_s1 = 0;
  const float* q = nullptr;  // [T, H, Dn + R]
  int64_t q_s0 = 0, q_s1 = 0;
  const float* cache = nullptr;  // [pages, P, L + R]
  const void* kv_b = nullptr;    // [H * (Dn + Dv), L], dtype wt
  int wt = kWF32;
  const int32_t* selected = nullptr;  // [T, sel_k] or null
  int64_t sel_stride = 0, sel_k = 0;
  int64_t H = 0, Dn = 0, R = 0, Dv = 0, L = 0;
  float softmax_scale = 1.f;
  LayoutParams b;
  float* scores = nullptr;  // scratch [T * H, n_keys]
  int64_t n_keys = 0;       // sel_k, or max_pages * P without selection
};

// Dynamic shared memory the kernel needs (checked against the device's limit by the caller).
int64_t mla_attention_smem_bytes(const MlaAttentionParams& p);
void launch_mla_attention(const MlaAttentionParams& p, Stream stream);

}  // namespace moe::cuda
