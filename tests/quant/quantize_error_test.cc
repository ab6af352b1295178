// Quantize -> dequantize stays within each format's error bound, block by block, including
// partial FP8 edge tiles, all-zero blocks and outliers; and the scales follow the formulas of
// glm5-model.md §4.4 (NVFP4) and DeepSeek's weight_scale_inv (FP8 block).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tensor/quant/fp8_block.h"
#include "tensor/quant/nvfp4.h"

namespace moe::testing {
namespace {

std::vector<float> random_matrix(int64_t N, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 0.05f);
  std::vector<float> w(static_cast<size_t>(N * K));
  for (auto& v : w) v = nd(rng);
  w[3] = 1.7f;                                                                      // an outlier
  for (int64_t k = 0; k < std::min<int64_t>(K, 32); ++k) w[(N - 1) * K + k] = 0.f;  // zero blocks
  return w;
}

TEST(Nvfp4Quantize, ErrorWithinHalfAnE2M1StepPerBlock) {
  const int64_t N = 37, K = 96;
  std::vector<float> w = random_matrix(N, K, 1);
  float amax = 0.f;
  for (float v : w) amax = std::max(amax, std::fabs(v));
  const float s2 = quant::nvfp4_global_scale(amax);
  EXPECT_FLOAT_EQ(s2, amax / 2688.f);
  std::vector<uint8_t> packed(N * K / 2), scale(N * K / 16);
  std::vector<float> back(K);
  for (int64_t n = 0; n < N; ++n) {
    quant::nvfp4_quantize_row(&w[n * K], K, s2, &packed[n * K / 2], &scale[n * K / 16]);
    quant::nvfp4_dequantize_row(&packed[n * K / 2], &scale[n * K / 16], s2, K, back.data());
    for (int64_t g = 0; g < K / 16; ++g) {
      float bmax = 0.f;
      for (int j = 0; j < 16; ++j) bmax = std::max(bmax, std::fabs(w[n * K + g * 16 + j]));
      const float sb = quant::fp8_e4m3_to_f32(scale[n * K / 16 + g]);
      // Block scale: fp8(amax_blk / (6 * s2)) (1 for an all-zero block).
      const float want_sb =
          bmax == 0.f ? 1.f : quant::fp8_e4m3_to_f32(quant::f32_to_fp8_e4m3(bmax / (6.f * s2)));
      EXPECT_EQ(sb, want_sb) << n << "," << g;
      const double step = static_cast<double>(sb) * s2;  // one unit of the E2M1 grid
      for (int j = 0; j < 16; ++j) {
        const double x = w[n * K + g * 16 + j], y = back[g * 16 + j];
        const double a = std::fabs(x) / step;
        // Half the gap between neighbouring E2M1 values at |x| (0.5 / 1 / 2 apart), plus the
        // saturation above 6 that a rounded-down block scale allows (6 * 2^-4).
        const double bound = (a < 2 ? 0.25 : a < 4 ? 0.5 : 1.0) * step * (1 + 1e-6);
        EXPECT_LE(std::fabs(x - y), bound) << "row " << n << " k " << g * 16 + j << " x " << x;
        if (bmax == 0.f) {
          EXPECT_EQ(y, 0.0);
        }
      }
    }
  }
}

TEST(Fp8BlockQuantize, ErrorWithinHalfAnUlpPerTileIncludingPartialEdges) {
  const int64_t N = 300, K = 200, B = 128;  // tiles: 3 x 2, the last row/column partial
  std::vector<float> w = random_matrix(N, K, 2);
  for (int64_t k = 128; k < K; ++k) w[299 * K + k] *= 50.f;  // a loud edge tile
  std::vector<uint8_t> q(N * K);
  std::vector<float> s(quant::ceil_div(N, B) * quant::ceil_div(K, B));
  ASSERT_EQ(s.size(), 6u);
  quant::fp8_block_quantize(w.data(), N, K, B, q.data(), s.data());
  std::vector<float> back(K);
  for (int64_t bn = 0; bn < 3; ++bn) {
    for (int64_t bk = 0; bk < 2; ++bk) {
      float amax = 0.f;
      for (int64_t n = bn * B; n < std::min(N, (bn + 1) * B); ++n)
        for (int64_t k = bk * B; k < std::min(K, (bk + 1) * B); ++k)
          amax = std::max(amax, std::fabs(w[n * K + k]));
      EXPECT_EQ(s[bn * 2 + bk], amax / 448.f) << bn << "," << bk;  // weight_scale_inv
    }
  }
  for (int64_t n = 0; n < N; ++n) {
    quant::fp8_block_dequantize_row(&q[n * K], &s[(n / B) * 2], K, B, back.data());
    for (int64_t k = 0; k < K; ++k) {
      const double x = w[n * K + k], y = back[k], sc = s[(n / B) * 2 + k / B];
      // E4M3: 3 mantissa bits -> relative error <= 2^-4 for normals; subnormal spacing 2^-9.
      const double bound = sc * std::max(std::fabs(x) / sc * 0x1p-4, 0x1p-10) * (1 + 1e-6);
      EXPECT_LE(std::fabs(x - y), bound) << n << "," << k;
    }
  }
  // The largest element of each tile maps to exactly +-448.
  EXPECT_EQ(std::fabs(quant::fp8_e4m3_to_f32(q[3])), 448.f);
}

// The activation rule (per row and block, codes of v * (448 / amax)): the same scales as the
// division rule, codes equal to it except within an ulp of an E4M3 rounding boundary (then one
// code apart), the block's largest magnitude exactly +-448, an all-zero block scale 1 and codes 0,
// and a partial last block.
TEST(Fp8ActBlockQuantize, MultiplyRuleMatchesTheDivisionRule) {
  const int64_t R = 40, K = 300, B = 128;  // blocks per row: 128, 128, 44
  std::vector<float> x = random_matrix(R, K, 7);
  for (int64_t r = 0; r < R; ++r)  // magnitudes 1e-3 .. 1e3 from row to row
    for (int64_t k = 0; k < K; ++k) x[r * K + k] *= std::pow(10.f, -3.f + 6.f * r / (R - 1));
  for (int64_t k = 128; k < 256; ++k) x[5 * K + k] = 0.f;  // an all-zero block
  std::vector<uint8_t> q(R * K), qd(R * K);
  std::vector<float> s(R * 3), sd(R * 3);
  quant::fp8_act_block_quantize(x.data(), R, K, B, q.data(), s.data());
  int64_t same = 0, one_apart = 0;
  for (int64_t r = 0; r < R; ++r) {
    quant::fp8_block_quantize(x.data() + r * K, 1, K, B, qd.data() + r * K, sd.data() + r * 3);
    for (int64_t b = 0; b < 3; ++b) {
      EXPECT_EQ(s[r * 3 + b], sd[r * 3 + b]) << r << "," << b;
      float amax = 0.f;
      int64_t at = -1;
      for (int64_t k = b * B; k < std::min(K, (b + 1) * B); ++k)
        if (std::fabs(x[r * K + k]) > amax) amax = std::fabs(x[r * K + k]), at = k;
      if (at >= 0) {
        EXPECT_EQ(std::fabs(quant::fp8_e4m3_to_f32(q[r * K + at])), 448.f) << r;
      }
    }
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t a = q[r * K + k], d = qd[r * K + k];
      same += a == d;
      // same sign, magnitude codes adjacent (E4M3 codes are ordered by magnitude)
      one_apart += a != d && (a & 0x80) == (d & 0x80) && std::abs((a & 0x7f) - (d & 0x7f)) == 1;
    }
  }
  EXPECT_EQ(same + one_apart, R * K);
  EXPECT_GE(same, R * K * 999 / 1000);
  EXPECT_EQ(s[5 * 3 + 1], 1.f);
  for (int64_t k = 128; k < 256; ++k) EXPECT_EQ(q[5 * K + k], 0) << k;
}

TEST(Nvfp4Quantize, AllZeroMatrixKeepsFiniteScales) {
  std::vector<float> w(32, 0.f);
  uint8_t packed[16], scale[2];
  const float s2 = quant::nvfp4_global_scale(0.f);
  EXPECT_EQ(s2, 1.f);
  quant::nvfp4_quantize_row(w.data(), 32, s2, packed, scale);
  float back[32];
  quant::nvfp4_dequantize_row(packed, scale, s2, 32, back);
  for (float v : back) EXPECT_EQ(v, 0.f);
}

}  // namespace
}  // namespace moe::testing
