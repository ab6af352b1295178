// FP8 E4M3 ("float8_e4m3fn"): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities,
// 0x7F/0xFF are NaN, largest finite 448, smallest subnormal 2^-9. Decoding is an inline table
// lookup (hot in per-row dequantization); encoding matches PyTorch's `.to(torch.float8_e4m3fn)`
// bit for bit (c10/util/Float8_e4m3fn.h), checked against a fixture made by PyTorch itself.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>

namespace moe::quant {

inline constexpr float kFp8E4M3Max = 448.f;

namespace detail {
constexpr float fp8_e4m3_decode_slow(uint8_t b) {
  const bool neg = (b & 0x80) != 0;
  const int e = (b >> 3) & 0xF, m = b & 7;
  float v = 0.f;
  if (e == 0xF && m == 7) return std::numeric_limits<float>::quiet_NaN();
  if (e == 0) {
    v = static_cast<float>(m) / 512.f;  // subnormal: m * 2^-9
  } else {
    v = 1.f + static_cast<float>(m) / 8.f;
    for (int i = 7; i < e; ++i) v *= 2.f;
    for (int i = e; i < 7; ++i) v /= 2.f;
  }
  return neg ? -v : v;
}
constexpr std::array<float, 256> make_fp8_e4m3_table() {
  std::array<float, 256> t{};
  for (int i = 0; i < 256; ++i) t[i] = fp8_e4m3_decode_slow(static_cast<uint8_t>(i));
  return t;
}
}  // namespace detail

// All 256 codes decoded (NaN for 0x7F and 0xFF; 0x80 is -0).
inline constexpr std::array<float, 256> kFp8E4M3Table = detail::make_fp8_e4m3_table();

inline float fp8_e4m3_to_f32(uint8_t b) { return kFp8E4M3Table[b]; }

// Round-to-nearest-even with PyTorch's out-of-range rule: |f| >= 480 (448 plus half an ulp
// of the top binade), +-Inf and NaN become NaN (0x7F, sign kept); values in (464, 480) round
// up to the NaN code as well, exactly as c10 does. Callers that need saturation clamp first.
inline uint8_t f32_to_fp8_e4m3(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t sign = bits & 0x80000000u;
  bits ^= sign;
  uint8_t result;
  if (bits >= (1087u << 20)) {  // 480.0, Inf, NaN
    result = 0x7F;
  } else if (bits < (121u << 23)) {  // below 2^-6: subnormal range, round by float addition
    constexpr uint32_t kDenormMask = 141u << 23;
    float denorm, sum;
    std::memcpy(&denorm, &kDenormMask, 4);
    float a;
    std::memcpy(&a, &bits, 4);
    sum = a + denorm;
    uint32_t s;
    std::memcpy(&s, &sum, 4);
    result = static_cast<uint8_t>(s - kDenormMask);
  } else {
    const uint32_t mant_odd = (bits >> 20) & 1u;
    bits += (static_cast<uint32_t>(7 - 127) << 23) + 0x7FFFFu;
    bits += mant_odd;
    result = static_cast<uint8_t>(bits >> 20);
  }
  return static_cast<uint8_t>(result | (sign >> 24));
}

}  // namespace moe::quant
