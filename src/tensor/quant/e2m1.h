// FP4 E2M1 (the NVFP4/MXFP4 element): 1 sign, 2 exponent, 1 mantissa bit; 16 codes, no NaN or
// Inf. Magnitudes by code & 7: {0, 0.5, 1, 1.5, 2, 3, 4, 6}; bit 3 is the sign. Two codes
// share a byte in checkpoints: low nibble = even element, high nibble = odd element.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace moe::quant {

inline constexpr float kE2M1Max = 6.f;

inline constexpr std::array<float, 16> kE2M1Table = {
    0.f,  0.5f,  1.f,  1.5f,  2.f,  3.f,  4.f,  6.f,  //
    -0.f, -0.5f, -1.f, -1.5f, -2.f, -3.f, -4.f, -6.f};

inline float e2m1_to_f32(uint8_t code) { return kE2M1Table[code & 0xF]; }

// Nearest E2M1 code, ties to the even code (ModelOpt's _cast_fp4: values on a boundary at
// 0.25, 1.25, 2.5, 5 round down, at 0.75, 1.75, 3.5 round up); |f| > 6 saturates to 6; the
// sign is kept, so small negatives give code 8 (-0). NaN gives code 7 (6): callers reject
// non-finite weights before quantizing.
inline uint8_t f32_to_e2m1(float f) {
  const uint8_t sign = std::signbit(f) ? 8 : 0;
  const float a = std::fabs(f);
  uint8_t code;
  if (!(a <= 5.f)) {
    code = 7;  // (5, inf] and NaN
  } else if (a >= 3.5f) {
    code = 6;  // [3.5, 5] -> 4
  } else if (a >= 2.5f) {
    code = a > 2.5f ? 5 : 4;  // (2.5, 3.5) -> 3; 2.5 -> 2
  } else if (a > 1.75f) {
    code = 4;  // (1.75, 2.5)
  } else if (a > 1.25f) {
    code = a >= 1.75f ? 4 : 3;  // (1.25, 1.75) -> 1.5
  } else if (a >= 0.75f) {
    code = 2;  // [0.75, 1.25]
  } else if (a > 0.25f) {
    code = 1;  // (0.25, 0.75)
  } else {
    code = 0;  // [0, 0.25]
  }
  return static_cast<uint8_t>(code | sign);
}

}  // namespace moe::quant
