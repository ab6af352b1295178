// FP8 block quantization (DeepSeek-V3/R1, Kimi-K2 checkpoints): W [N, K] is cut into
// block x block tiles (128 x 128 as shipped; the last row/column of tiles may be partial), each
// with one FP32 multiplier `weight_scale_inv` [ceil(N/block), ceil(K/block)]:
//   W[n, k] = fp8(q[n, k]) * scale_inv[n / block, k / block]
#pragma once

#include <cstdint>

#include "tensor/quant/fp8_e4m3.h"

namespace moe::quant {

inline constexpr int64_t kFp8BlockDefault = 128;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Quantizes W [N, K] (row-major f32): per tile scale_inv = amax / 448 (1 for an all-zero tile),
// q = fp8(w / scale_inv) with round-to-nearest-even. q gets N*K codes, scale_inv
// ceil(N/block) * ceil(K/block) values.
void fp8_block_quantize(const float* w, int64_t N, int64_t K, int64_t block, uint8_t* q,
                        float* scale_inv);

// Activations (the FP8 warpgroup-MMA GEMM's x and h rows, on the device): per row and block of
// `block` values, scale = amax / 448 (1 for an all-zero block) as above, but codes of v * (448 /
// amax): one division per block and a multiply per value instead of a division per value (the
// codes may differ from fp8_block_quantize's where v / scale falls within an ulp of an E4M3
// rounding boundary). x [rows, K]; q rows * K codes, scale rows * ceil(K / block).
void fp8_act_block_quantize(const float* x, int64_t rows, int64_t K, int64_t block, uint8_t* q,
                            float* scale);

// Dequantizes row n: `q_row` its K codes, `scale_row` the scale_inv row n / block.
inline void fp8_block_dequantize_row(const uint8_t* q_row, const float* scale_row, int64_t K,
                                     int64_t block, float* out) {
  for (int64_t k0 = 0, b = 0; k0 < K; k0 += block, ++b) {
    const int64_t k1 = k0 + block < K ? k0 + block : K;
    const float s = scale_row[b];
    for (int64_t k = k0; k < k1; ++k) out[k] = fp8_e4m3_to_f32(q_row[k]) * s;
  }
}

}  // namespace moe::quant
