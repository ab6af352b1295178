// NVFP4 (NVIDIA ModelOpt) weight blocks: 16 consecutive elements of a row share one FP8 E4M3
// scale, and the whole matrix shares an FP32 global scale (weight_scale_2):
//   W[n, k] = e2m1(code[n, k]) * (fp8(scale[n, k / 16]) * global_scale)
// Codes are packed two per byte, low nibble = even k. Formulas: glm5-model.md §4.3-4.4.
#pragma once

#include <cstdint>

#include "tensor/quant/e2m1.h"
#include "tensor/quant/fp8_e4m3.h"

namespace moe::quant {

inline constexpr int64_t kNvfp4Group = 16;

// Global scale ModelOpt derives from amax|W|: amax / (6 * 448). An all-zero (or non-finite)
// amax gives 1 so that dequantization never divides by zero.
float nvfp4_global_scale(float amax);

// Quantizes one row of K (a multiple of 16) values: packed gets K/2 bytes, scale K/16 FP8 codes.
//   s_blk = fp8(clamp(amax_blk / (6 * global_scale), 2^-9, 448))   (an all-zero block: 1)
//   code  = e2m1(w / (float(s_blk) * global_scale))                 (nearest, ties to even)
void nvfp4_quantize_row(const float* w, int64_t K, float global_scale, uint8_t* packed,
                        uint8_t* scale);

// Dequantizes one row (K values) into out; see the formula at the top.
inline void nvfp4_dequantize_row(const uint8_t* packed, const uint8_t* scale, float global_scale,
                                 int64_t K, float* out) {
  for (int64_t g = 0; g < K / kNvfp4Group; ++g) {
    const float s = fp8_e4m3_to_f32(scale[g]) * global_scale;
    const uint8_t* p = packed + g * (kNvfp4Group / 2);
    float* o = out + g * kNvfp4Group;
    for (int64_t j = 0; j < kNvfp4Group / 2; ++j) {
      o[2 * j] = e2m1_to_f32(p[j] & 0xF) * s;
      o[2 * j + 1] = e2m1_to_f32(p[j] >> 4) * s;
    }
  }
}

}  // namespace moe::quant
