// The integer side of the grouped MoE GEMMs' NVFP4 dequantization (kernels/moe_grouped/
// dequant_bits.h), checked on the CPU against the definitions: every e2m1 code in every nibble
// position lands as the f16 of value * 2^-14 in the documented pair, the f16 products with every
// e4m3 block scale * 2^7 are exact (what makes the GPU's f16 multiply lossless), and the
// activations' k order is the one the pairs need.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/kernels/moe_grouped/dequant_bits.h"
#include "tensor/quant/fp8_e4m3.h"

namespace moe::cuda::grouped {
namespace {

// IEEE binary16 bits -> value (subnormals included).
double f16_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  double v;
  if (exp == 0)
    v = std::ldexp(man, -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(1024 + man, exp - 25);
  return sign ? -v : v;
}

// True if x is a finite binary16 value (normal or subnormal), i.e. an f16 operation whose exact
// result is x rounds to x.
bool f16_exact(double x) {
  const double a = std::fabs(x);
  if (a == 0) return true;
  if (a > 65504) return false;
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const int ulp_exp = std::max(e - 1 - 10, -24);
  const double q = std::ldexp(a, -ulp_exp);
  return q == std::floor(q);
}

double e2m1_value(int code) {
  static const double kMag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (code & 8 ? -1 : 1) * kMag[code & 7];
}

double e4m3_value(int code) {  // OCP FP8 E4M3 (no infinities; 0x7f / 0xff are NaN)
  const int sign = code >> 7, exp = (code >> 3) & 15, man = code & 7;
  const double v = exp == 0 ? std::ldexp(man, -9) : std::ldexp(8 + man, exp - 10);
  return sign ? -v : v;
}

// Nibble i of the word (k = i within its group of 8) that f16 half h of output register r holds.
constexpr int kPairK[4][2] = {{0, 4}, {2, 6}, {1, 5}, {3, 7}};

void expect_word(uint32_t v) {
  uint32_t o[4];
  nvfp4_word_to_f16x2(v, o);
  for (int r = 0; r < 4; ++r)
    for (int h = 0; h < 2; ++h) {
      const int k = kPairK[r][h], code = (v >> (4 * k)) & 15;
      const uint16_t bits = static_cast<uint16_t>(o[r] >> (16 * h));
      const double want = e2m1_value(code) * std::ldexp(1.0, -14);
      ASSERT_EQ(f16_value(bits), want) << std::hex << "word 0x" << v << " k " << k;
      ASSERT_EQ(bits >> 15, code >> 3) << std::hex << "word 0x" << v << " k " << k;  // -0 too
    }
}

TEST(DequantBits, EveryNvfp4CodeInEveryPositionIsExact) {
  std::mt19937 rng(7);
  for (int k = 0; k < 8; ++k)
    for (int code = 0; code < 16; ++code)
      for (int rep = 0; rep < 64; ++rep) {  // the other nibbles random: no cross-talk
        uint32_t v = rng();
        v = (v & ~(15u << (4 * k))) | (static_cast<uint32_t>(code) << (4 * k));
        expect_word(v);
      }
  for (int i = 0; i < 100000; ++i) expect_word(rng());
  expect_word(0u);
  expect_word(0xffffffffu);
}

TEST(DequantBits, ScaledProductsAreExactInF16) {
  const double scale_mul = f16_value(static_cast<uint16_t>(kNvfp4ScaleMulF16x2 & 0xffffu));
  ASSERT_EQ(scale_mul, f16_value(static_cast<uint16_t>(kNvfp4ScaleMulF16x2 >> 16)));
  ASSERT_EQ(scale_mul * kNvfp4Unscale * std::ldexp(1.0, -14), 1.0);  // the epilogue undoes it
  for (int s = 0; s < 0x7f; ++s) {  // every non-negative finite e4m3 block scale
    const double scale = e4m3_value(s), sm = scale * scale_mul;
    ASSERT_TRUE(f16_exact(sm)) << "scale code " << s;  // the f16 scale * 2^7 itself
    for (int code = 0; code < 16; ++code) {
      const double w = e2m1_value(code) * std::ldexp(1.0, -14);  // the f16 operand
      ASSERT_TRUE(f16_exact(w * sm)) << "scale code " << s << " nibble " << code;
    }
  }
}

TEST(DequantBits, Nvfp4ActivationOrderMatchesThePairs) {
  // Register r of a 16-byte lane chunk word q holds storage positions 8q + 2r, 8q + 2r + 1:
  // the activations stored there must be the k of the pair.
  for (int64_t base : {int64_t{0}, int64_t{8}, int64_t{4096}})
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h)
        EXPECT_EQ(act_index(GroupedFmt::kNvfp4, base + kPairK[r][h]), base + 2 * r + h);
  for (int64_t k = 0; k < 64; ++k) {
    EXPECT_EQ(act_index(GroupedFmt::kNvfp4, act_index(GroupedFmt::kNvfp4, k)), k);  // involution
    EXPECT_EQ(act_index(GroupedFmt::kBf16, k), k);
    EXPECT_EQ(act_index(GroupedFmt::kFp8Block, k), k);
  }
}

TEST(DequantBits, ChunkTransposedActivationOrder) {
  // act_index_t: lane c's v-th 16-byte load of a k-step (logical k 32 c + 8 v .. + 7, in
  // act_index order) is stored at chunk 4 v + c of the step, so for each v the 4 lanes of a row
  // read the 64 contiguous bytes of chunks 4 v .. 4 v + 3.
  for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{47}})
    for (int c = 0; c < 4; ++c)
      for (int v = 0; v < 4; ++v)
        for (int i = 0; i < 8; ++i) {
          const int64_t k = 128 * step + 32 * c + 8 * v + i;
          EXPECT_EQ(act_index_t(GroupedFmt::kNvfp4, k),
                    128 * step + 8 * (4 * v + c) + (act_index(GroupedFmt::kNvfp4, k) & 7))
              << "k " << k;
        }
  std::vector<int> hits(512, 0);
  for (int64_t k = 0; k < 512; ++k) {
    const int64_t p = act_index_t(GroupedFmt::kNvfp4, k);
    ASSERT_GE(p, 0);
    ASSERT_LT(p, 512);
    ++hits[static_cast<size_t>(p)];
    EXPECT_EQ(act_index_t(GroupedFmt::kNvfp4, p), k);  // an involution
    EXPECT_EQ(act_chunk_t(act_chunk_t(k)), k);
    EXPECT_EQ(p >> 7, k >> 7);  // stays in its k-step
  }
  for (int n : hits) EXPECT_EQ(n, 1);  // a bijection
  EXPECT_EQ(act_chunk_t(1), 4);        // not the identity
}

// Layouts: row-major is the checkpoint's [N][row bytes] data and [N][Kd/16] NVFP4 scales; the
// packed one is a permutation of each in which block (16 rows, 64 data bytes = 128 NVFP4 k) is
// 1024 data + 128 scale contiguous bytes (blocks of a row block in k order, row blocks in
// order), and mma lane L = 4 g + c finds its 16 bytes of rows g and g + 8 (bytes 16 c .. of the
// step) at 16 L and 16 (32 + L), their four scales at 4 L.
// One tensor of N rows x per_row elements in both layouts: offset(packed, r, i) is r * per_row + i
// row-major and want(r, i) packed, packed is a permutation, and `step` elements further along a
// row is kstep(packed) further in each layout.
template <class Offset, class Want, class Kstep>
void check_layouts(int64_t N, int64_t per_row, int64_t step, Offset offset, Want want, Kstep kstep,
                   const std::string& what) {
  std::vector<int> seen(N * per_row, 0);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t i = 0; i < per_row; ++i) {
      EXPECT_EQ(offset(false, r, i), r * per_row + i) << what;
      const int64_t o = offset(true, r, i);
      ASSERT_GE(o, 0) << what;
      ASSERT_LT(o, N * per_row) << what;
      ++seen[o];
      EXPECT_EQ(o, want(r, i)) << what << " row " << r << " element " << i;
      if (i >= step) {
        EXPECT_EQ(o - offset(true, r, i - step), kstep(true)) << what;
        EXPECT_EQ(offset(false, r, i) - offset(false, r, i - step), kstep(false)) << what;
      }
    }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), N * per_row) << "not a permutation, " << what;
}

TEST(DequantBits, PackedLayouts) {
  const int64_t N = 48;
  for (int64_t Kd : {int64_t{128}, int64_t{384}, int64_t{6144}}) {
    // NVFP4 scales: 8 groups per step, lane 4 g + c holds groups 2c, 2c + 1 of rows g, g + 8.
    check_layouts(
        N, Kd / 16, 8,
        [&](bool pk, int64_t r, int64_t j) { return nvfp4_scale_offset(pk, Kd, r, j); },
        [&](int64_t r, int64_t j) {
          const int64_t lane = 4 * (r % 8) + (j % 8) / 2;
          return ((r / 16) * (Kd / 128) + j / 8) * 128 + 4 * lane + 2 * ((r % 16) / 8) + j % 2;
        },
        nvfp4_scale_kstep, "scales, Kd " + std::to_string(Kd));
    // Data rows of any format: NVFP4 (Kd / 2 bytes), FP8 (Kd), BF16 (2 Kd); 64 bytes per step.
    for (int64_t rb : {Kd / 2, Kd, 2 * Kd})
      check_layouts(
          N, rb, 64,
          [&](bool pk, int64_t r, int64_t b) { return packed_data_offset(pk, rb, r, b); },
          [&](int64_t r, int64_t b) {
            const int64_t lane = 4 * (r % 8) + (b % 64) / 16;
            return ((r / 16) * (rb / 64) + b / 64) * 1024 + (32 * ((r % 16) / 8) + lane) * 16 +
                   b % 16;
          },
          packed_data_kstep, "data, row bytes " + std::to_string(rb));
  }
}

// NVFP4 to E4M3 by table (nvfp4_word_to_e4m3): every e2m1 code in every nibble position, with
// every e4m3 block scale (NaN ones included), gives the E4M3 code of code x scale / 8 rounded to
// nearest even (quant::f32_to_fp8_e4m3 of the exact f32 product), the sign included.
TEST(DequantBits, Nvfp4ToE4m3ByTableIsTheRoundedProduct) {
  std::mt19937 rng(5);
  for (int sc = 0; sc < 256; ++sc) {
    const bool nan = (sc & 0x7f) == 0x7f;  // NaN scales: NaN entries (the device's cvt)
    uint8_t lut[8];
    for (int m = 0; m < 8; ++m)
      lut[m] = nan ? 0x7f
                   : quant::f32_to_fp8_e4m3(static_cast<float>(e2m1_value(m) * e4m3_value(sc) / 8));
    uint32_t lo = 0, hi = 0;
    for (int m = 0; m < 4; ++m)
      lo |= uint32_t{lut[m]} << (8 * m), hi |= uint32_t{lut[m + 4]} << (8 * m);
    std::vector<uint32_t> words;
    for (int pos = 0; pos < 8; ++pos)
      for (uint32_t c = 0; c < 16; ++c)
        words.push_back((rng() & ~(0xfu << (4 * pos))) | (c << (4 * pos)));
    for (int i = 0; i < 64; ++i) words.push_back(rng());
    for (uint32_t v : words) {
      uint32_t q[2];
      nvfp4_word_to_e4m3(v, lo, hi, q);
      for (int k = 0; k < 8; ++k) {
        const int code = (v >> (4 * k)) & 15;
        const uint8_t want =
            quant::f32_to_fp8_e4m3(static_cast<float>(e2m1_value(code) * e4m3_value(sc) / 8));
        const uint8_t got = (q[k / 4] >> (8 * (k % 4))) & 0xffu;
        if (nan) {  // NaN either way (0x7f / 0xff)
          ASSERT_EQ(got & 0x7f, 0x7f) << "scale " << sc << " word " << v << " k " << k;
        } else {
          ASSERT_EQ(got, want) << "scale " << sc << " word " << std::hex << v << " k " << k;
        }
      }
    }
  }
}

// The activation order of the warpgroup-MMA decode design (wgmma_rs_act_pos): a bijection of each
// 128-k block, its inverse; and, composing three descriptions made apart, for every lane (g, c)
// of a warp, wgmma j and fragment element e: the m16n8k32 8-bit A layout (element e of register
// e / 4: row g + 8 ((e / 4) % 2), column 4 c + e % 4 + 16 (e / 8)), the register the design feeds
// it (row g or g + 8, out register 2 j + e / 8 of nvfp4_word_to_e4m3 on the lane's words) and the
// packed layout (the lane's code t of a row is byte 16 c + t / 2 of the row's step, k 32 c + t):
// the weight at (row, k) meets the activation stored at the position the fragment column names.
TEST(DequantBits, WgmmaRsActivationOrder) {
  std::vector<int> seen(256, 0);
  for (int k = 0; k < 256; ++k) {
    const int p = wgmma_rs_act_pos(k);
    ASSERT_GE(p, k & ~127);
    ASSERT_LT(p, (k & ~127) + 128);
    ++seen[p];
    EXPECT_EQ(wgmma_rs_act_k(p), k);
  }
  for (int p = 0; p < 256; ++p) EXPECT_EQ(seen[p], 1) << "position " << p;
  const int64_t row_bytes = 64;  // one 128-k step
  for (int g = 0; g < 8; ++g)
    for (int c = 0; c < 4; ++c) {
      const int lane = 4 * g + c;
      for (int j = 0; j < 4; ++j)
        for (int e = 0; e < 16; ++e) {
          const int row = g + 8 * ((e / 4) % 2);
          const int col = 4 * c + e % 4 + 16 * (e / 8);  // the fragment's column in wgmma j
          // The design: out register R = 2 j + e / 8 of the row, byte e % 4: code t = 4 R + e % 4
          // of the lane's 32 codes of that row.
          const int t = 4 * (2 * j + e / 8) + e % 4;
          // Where that code lives in the packed step and which k it is: the lane's bytes of the
          // row are at (32 * (row / 8) + lane) * 16 + 0..15, byte t / 2, nibble t % 2.
          const int64_t off = (32 * (row / 8) + lane) * 16 + t / 2;
          int64_t b = -1;
          for (int64_t bb = 0; bb < row_bytes; ++bb)
            if (packed_data_offset(true, row_bytes, row, bb) == off) b = bb;
          ASSERT_GE(b, 0);
          const int k = static_cast<int>(2 * b + t % 2);
          EXPECT_EQ(wgmma_rs_act_pos(k), 32 * j + col)
              << "lane " << lane << " wgmma " << j << " element " << e;
          // ... and its NVFP4 scale is the lane's scale-word byte of (row, group k / 16).
          EXPECT_EQ(k / 16, 2 * c + (t >= 16 ? 1 : 0));
        }
    }
}

}  // namespace
}  // namespace moe::cuda::grouped
