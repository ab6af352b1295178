// NVFP4 block quantization (ModelOpt NVFP4QTensor semantics).
#include "tensor/quant/nvfp4.h"

#include <algorithm>
#include <cmath>

namespace moe::quant {

float nvfp4_global_scale(float amax) {
  if (!(amax > 0.f) || !std::isfinite(amax)) return 1.f;
  return amax / (kE2M1Max * kFp8E4M3Max);  // amax / 2688
}

void nvfp4_quantize_row(const float* w, int64_t K, float global_scale, uint8_t* packed,
                        uint8_t* scale) {
  constexpr float kMinScale = 0x1p-9f;  // smallest FP8 E4M3 subnormal
  for (int64_t g = 0; g < K / kNvfp4Group; ++g) {
    const float* x = w + g * kNvfp4Group;
    float amax = 0.f;
    for (int64_t j = 0; j < kNvfp4Group; ++j) amax = std::max(amax, std::fabs(x[j]));
    float s = amax / (kE2M1Max * global_scale);
    if (s == 0.f) s = 1.f;
    s = std::clamp(s, kMinScale, kFp8E4M3Max);
    scale[g] = f32_to_fp8_e4m3(s);
    const float denom = fp8_e4m3_to_f32(scale[g]) * global_scale;
    uint8_t* p = packed + g * (kNvfp4Group / 2);
    for (int64_t j = 0; j < kNvfp4Group / 2; ++j) {
      const uint8_t lo = f32_to_e2m1(x[2 * j] / denom);
      const uint8_t hi = f32_to_e2m1(x[2 * j + 1] / denom);
      p[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

}  // namespace moe::quant
