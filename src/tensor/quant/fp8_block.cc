// FP8 block-128 quantization (DeepSeek's weight_scale_inv layout), partial edge tiles included.
#include "tensor/quant/fp8_block.h"

#include <algorithm>
#include <cmath>

namespace moe::quant {

void fp8_block_quantize(const float* w, int64_t N, int64_t K, int64_t block, uint8_t* q,
                        float* scale_inv) {
  const int64_t KB = ceil_div(K, block);
  for (int64_t n0 = 0; n0 < N; n0 += block) {
    const int64_t n1 = std::min(N, n0 + block);
    for (int64_t k0 = 0; k0 < K; k0 += block) {
      const int64_t k1 = std::min(K, k0 + block);
      float amax = 0.f;
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(w[n * K + k]));
      const float s = amax > 0.f ? amax / kFp8E4M3Max : 1.f;
      scale_inv[(n0 / block) * KB + k0 / block] = s;
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t k = k0; k < k1; ++k)
          q[n * K + k] = f32_to_fp8_e4m3(std::clamp(w[n * K + k] / s, -kFp8E4M3Max, kFp8E4M3Max));
    }
  }
}

void fp8_act_block_quantize(const float* x, int64_t rows, int64_t K, int64_t block, uint8_t* q,
                            float* scale) {
  const int64_t KB = ceil_div(K, block);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k0 = 0; k0 < K; k0 += block) {
      const int64_t k1 = std::min(K, k0 + block);
      float amax = 0.f;
      for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(x[r * K + k]));
      scale[r * KB + k0 / block] = amax > 0.f ? amax / kFp8E4M3Max : 1.f;
      const float inv = amax > 0.f ? kFp8E4M3Max / amax : 1.f;
      for (int64_t k = k0; k < k1; ++k)
        q[r * K + k] = f32_to_fp8_e4m3(std::clamp(x[r * K + k] * inv, -kFp8E4M3Max, kFp8E4M3Max));
    }
}

}  // namespace moe::quant
