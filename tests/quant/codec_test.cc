// Host codecs against PyTorch: tests/fixtures/quant/codec.safetensors was written on the GPU
// machine by tools/golden/make_quant_golden.py from torch's own float8_e4m3fn conversions
// (CPU and CUDA). torch 2.11 cannot convert to float4_e2m1fn_x2, so E2M1 is checked against the
// OCP table and an independent brute-force nearest-even search.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "io/safetensors.h"
#include "quant_test_util.h"
#include "tensor/quant/e2m1.h"
#include "tensor/quant/fp8_e4m3.h"
#include "tensor/quant/nvfp4.h"

namespace moe::testing {
namespace {

class CodecFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = io::SafetensorsFile::open(quant_fixture("codec.safetensors"));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    file_ = *f;
  }
  template <typename T>
  std::vector<T> read(const std::string& name) {
    const io::TensorInfo* t = file_->find(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return {};
    auto b = file_->bytes(*t);
    std::vector<T> v(b.size() / sizeof(T));
    std::memcpy(v.data(), b.data(), b.size());
    return v;
  }
  std::shared_ptr<io::SafetensorsFile> file_;
};

TEST_F(CodecFixture, Fp8E4M3DecodesAll256CodesAsPyTorch) {
  std::vector<float> want = read<float>("e4m3_decode");
  ASSERT_EQ(want.size(), 256u);
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    const float got = quant::fp8_e4m3_to_f32(static_cast<uint8_t>(c));
    if (std::isnan(want[c])) {
      EXPECT_TRUE(std::isnan(got)) << c;
      ++nans;
    } else {
      EXPECT_EQ(got, want[c]) << "code " << c;
      EXPECT_EQ(std::signbit(got), std::signbit(want[c])) << "code " << c;
    }
  }
  EXPECT_EQ(nans, 2);  // 0x7F and 0xFF
  EXPECT_EQ(quant::fp8_e4m3_to_f32(0x7E), 448.f);
  EXPECT_EQ(quant::fp8_e4m3_to_f32(0x01), 0x1p-9f);
}

TEST_F(CodecFixture, Fp8E4M3EncodesLikePyTorchOnCpuAndCuda) {
  std::vector<float> x = read<float>("e4m3_inputs");
  ASSERT_GT(x.size(), 10000u);
  int checked_ranges = 0;
  for (const char* name : {"e4m3_codes_cpu", "e4m3_codes_cuda"}) {
    if (file_->find(name) == nullptr) continue;
    std::vector<uint8_t> want = read<uint8_t>(name);
    ASSERT_EQ(want.size(), x.size());
    int bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const uint8_t got = quant::f32_to_fp8_e4m3(x[i]);
      if (got != want[i] && ++bad <= 10)
        ADD_FAILURE() << name << ": x = " << x[i] << " got 0x" << std::hex << int(got)
                      << " torch 0x" << int(want[i]);
    }
    EXPECT_EQ(bad, 0) << name;
    ++checked_ranges;
  }
  EXPECT_EQ(checked_ranges, 2);
  // The fixture covers the cases the rounding rule is about.
  int ties = 0, nan_in = 0, big = 0, sub = 0;
  for (float v : x) {
    nan_in += std::isnan(v);
    big += std::fabs(v) >= 464.f;
    sub += v != 0.f && std::fabs(v) < 0x1p-6f;
    const float r = quant::fp8_e4m3_to_f32(quant::f32_to_fp8_e4m3(v));
    ties += std::isfinite(r) && r != v && std::fabs(v) < 448.f &&
            quant::fp8_e4m3_to_f32(quant::f32_to_fp8_e4m3(2 * v - r)) == 2 * v - r;
  }
  EXPECT_GT(ties, 100);
  EXPECT_GT(nan_in, 0);
  EXPECT_GT(big, 10);
  EXPECT_GT(sub, 500);
}

TEST(Fp8E4M3, RoundTripsEveryFiniteCodeAndFollowsTorchOutOfRangeRule) {
  for (int c = 0; c < 256; ++c) {
    const float v = quant::fp8_e4m3_to_f32(static_cast<uint8_t>(c));
    if (!std::isnan(v)) {
      EXPECT_EQ(quant::f32_to_fp8_e4m3(v), c) << c;
    }
  }
  EXPECT_EQ(quant::f32_to_fp8_e4m3(464.f), 0x7E);      // tie -> even (448)
  EXPECT_EQ(quant::f32_to_fp8_e4m3(470.f), 0x7F);      // rounds to the NaN code
  EXPECT_EQ(quant::f32_to_fp8_e4m3(-INFINITY), 0xFF);  // no Inf: NaN with sign
  EXPECT_EQ(quant::f32_to_fp8_e4m3(0x1p-10f), 0x00);   // half the smallest subnormal: even
  EXPECT_EQ(quant::f32_to_fp8_e4m3(0x1.8p-9f), 0x02);  // 1.5 x 2^-9: tie -> 2 x 2^-9
}

// Nearest E2M1 value by search, ties to the even code: an independent statement of the rule.
uint8_t e2m1_by_search(float x) {
  const float a = std::fabs(x);
  int best = 0;
  for (int c = 1; c < 8; ++c) {
    const float d = std::fabs(quant::kE2M1Table[c] - a),
                db = std::fabs(quant::kE2M1Table[best] - a);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return static_cast<uint8_t>(best | (std::signbit(x) ? 8 : 0));
}

TEST(E2M1, DecodesTheSixteenCodes) {
  const float want[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0f, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(quant::e2m1_to_f32(static_cast<uint8_t>(c)), want[c]) << c;
    EXPECT_EQ(std::signbit(quant::e2m1_to_f32(static_cast<uint8_t>(c))), c >= 8) << c;
    EXPECT_EQ(quant::f32_to_e2m1(want[c]), c) << c;
  }
}

TEST(E2M1, RoundsToNearestEvenAndSaturates) {
  // Every boundary (midpoint), one ulp either side, and random values.
  std::vector<float> xs = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.f, 6.f, 7.f, 1e30f, INFINITY};
  const size_t n = xs.size();
  for (size_t i = 0; i < n; ++i) {
    xs.push_back(std::nextafter(xs[i], 0.f));
    xs.push_back(std::nextafter(xs[i], INFINITY));
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (int i = 0; i < 20000; ++i) xs.push_back(nd(rng));
  for (float x : xs) {
    for (float v : {x, -x}) {
      const uint8_t want =
          std::fabs(v) > 6.f ? static_cast<uint8_t>(7 | (v < 0 ? 8 : 0)) : e2m1_by_search(v);
      EXPECT_EQ(quant::f32_to_e2m1(v), want) << v;
    }
  }
  EXPECT_EQ(quant::f32_to_e2m1(0.75f), 2);  // ModelOpt _cast_fp4: 0.75 rounds up to 1.0
  EXPECT_EQ(quant::f32_to_e2m1(2.5f), 4);   // 2.5 rounds down to 2
  EXPECT_EQ(quant::f32_to_e2m1(-0.1f), 8);  // -0 keeps the sign
}

TEST(Nvfp4, PacksLowNibbleEvenElement) {
  float w[16] = {0.5f, 6.f, -1.f, 0.f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  uint8_t packed[8], scale[1];
  // Global scale 1: the block scale is amax / 6 = 1 exactly, so the values are their own codes.
  quant::nvfp4_quantize_row(w, 16, 1.f, packed, scale);
  EXPECT_EQ(quant::fp8_e4m3_to_f32(scale[0]), 1.f);  // amax 6 / (6 * 1)
  EXPECT_EQ(packed[0], 0x71);                        // 6.0 (code 7) high, 0.5 (code 1) low
  EXPECT_EQ(packed[1], 0x0A);                        // 0 high, -1 (code 10) low
  float back[16];
  quant::nvfp4_dequantize_row(packed, scale, 1.f, 16, back);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(back[i], w[i]) << i;
}

}  // namespace
}  // namespace moe::testing
