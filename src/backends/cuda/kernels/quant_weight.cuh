// Device-side weight element loads for every ops::WeightFormat (ops/weight.h): dense
// F32/BF16/F16, FP8 block-128 (DeepSeek weight_scale_inv) and NVFP4 (ModelOpt: E2M1 codes,
// F8_E4M3 per-16 scales, F32 global scale). Dequantization is exact f32 arithmetic in the same
// order as the reference (tensor/quant): fp8(q) * scale_inv, e2m1 * (fp8(s) * global_scale),
// so a dequantized weight equals the reference's bit for bit.
#pragma once

#include <cstdint>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

// float8_e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa; 0x7F/0xFF NaN; subnormals m * 2^-9.
__device__ __forceinline__ float fp8_e4m3_to_f32(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t e = (b >> 3) & 0xFu, m = b & 7u;
  if (e == 0xF && m == 7) return __uint_as_float(0x7fc00000u | sign);
  if (e == 0) {
    const float v = static_cast<float>(m) * (1.f / 512.f);  // exact
    return sign ? -v : v;
  }
  return __uint_as_float(sign | ((e + 120u) << 23) | (m << 20));
}

// E2M1 code (low 4 bits): magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6}, bit 3 the sign. The doubled
// magnitudes {0,1,2,3,4,6,8,12} are the nibbles of 0xC8643210.
__device__ __forceinline__ float e2m1_to_f32(uint32_t code) {
  const float mag = static_cast<float>((0xC8643210u >> (4 * (code & 7u))) & 0xFu) * 0.5f;
  return (code & 8u) ? -mag : mag;
}

// A weight matrix [N, K] as kernels see it; element (n, k) dequantized to f32.
struct QuantWeight {
  const void* data = nullptr;   // dense [N, K]; FP8 [N, K] codes; NVFP4 [N, K/2] packed codes
  const void* scale = nullptr;  // FP8: [ceil(N/block), scale_cols] f32; NVFP4: [N, K/16] fp8
  int wt = kWF32;               // WType
  int64_t K = 0;
  int64_t scale_cols = 0;  // FP8: ceil(K / block)
  int64_t block = 128;     // FP8 block edge
  float global_scale = 1.f;

  __device__ __forceinline__ float load(int64_t n, int64_t k) const {
    switch (wt) {
      case kWFp8Block: {
        const uint8_t q = static_cast<const uint8_t*>(data)[n * K + k];
        const float s = static_cast<const float*>(scale)[(n / block) * scale_cols + k / block];
        return fp8_e4m3_to_f32(q) * s;
      }
      case kWNvfp4: {
        const uint8_t byte = static_cast<const uint8_t*>(data)[n * (K / 2) + k / 2];
        const uint8_t s8 = static_cast<const uint8_t*>(scale)[n * (K / 16) + k / 16];
        const float s = fp8_e4m3_to_f32(s8) * global_scale;
        return e2m1_to_f32((k & 1) ? (byte >> 4) : (byte & 0xFu)) * s;
      }
      default:
        return load_w(data, wt, n * K + k);
    }
  }
};

}  // namespace moe::cuda
