// Integer side of the grouped MoE GEMMs' weight dequantization, host and device: the NVFP4
// nibble -> f16 bit placement, the activations' k order that matches it, and the scale factors
// that keep the f16 products exact. Plain C++ so the CPU tests check it against the e2m1 / e4m3
// definitions (tests/moe_config/dequant_bits_test.cc); moe_grouped_common.cuh uses it on the GPU.
#pragma once

#include <cstdint>

#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"

#if defined(__CUDACC__)
#define MOE_DQ_HD __host__ __device__ __forceinline__
#else
#define MOE_DQ_HD inline
#endif

namespace moe::cuda::grouped {

// (a & m) | (b & ~m): one LOP3 on the device (the compiler splits the expression in two).
MOE_DQ_HD uint32_t bitsel(uint32_t a, uint32_t b, uint32_t m) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xe4;" : "=r"(d) : "r"(a), "r"(b), "r"(m));
  return d;
#else
  return (a & m) | (b & ~m);
#endif
}

// e2m1 -> f16 by bit placement alone: sign -> bit 15, (e1 e0 m) -> bits 11..9 is the f16 of
// value * 2^-14 (e = 0 lands in the f16 subnormals, so all 16 codes are exact), two values 16
// bits apart per f16x2. For a word v of 8 nibbles (nibble i = k 8q + i, low nibble first):
// E = the even nibbles as {mag 0..2, sign 6} per byte, O = the odd ones as {mag 1..3, sign 7}
// (one LOP3 each; bits outside those patterns are don't-care), then one shift and one mask per
// pair: o[0] = (k0, k4), o[1] = (k2, k6), o[2] = (k1, k5), o[3] = (k3, k7) (low half first).
MOE_DQ_HD void nvfp4_word_to_f16x2(uint32_t v, uint32_t (&o)[4]) {
  constexpr uint32_t kM = 0x8e008e00u;
  const uint32_t e = bitsel(v, v << 3, 0x07070707u);
  const uint32_t od = bitsel(v >> 3, v, 0x0e0e0e0eu);
  o[0] = (e << 9) & kM;
  o[1] = (e << 1) & kM;
  o[2] = (od << 8) & kM;
  o[3] = od & kM;
}

// The e4m3 block scale is multiplied by 2^7 in f16 (<= 448 * 128 = 57344: no overflow) before
// it scales the value * 2^-14 above; the products (value * scale * 2^-7, >= 2^-17 with <= 6
// significant bits) are exact in f16, and the epilogues multiply by global scale * 2^7.
constexpr uint32_t kNvfp4ScaleMulF16x2 = 0x58005800u;  // (128, 128) as f16x2
constexpr float kNvfp4Unscale = 128.f;

// Storage index of activation k: the order in which the dequantization produces the weight
// pairs. nvfp4: k order [0,4,2,6,1,5,3,7] per group of 8 (an involution, so it is also the
// storage index of k); bf16 and fp8: natural.
MOE_DQ_HD int64_t act_index(GroupedFmt f, int64_t k) {
  if (f == GroupedFmt::kNvfp4) return (k & ~int64_t{7}) + (k & 1) * 4 + ((k >> 2) & 1) + (k & 2);
  return k;
}

// NVFP4 block scales of an [N, Kd] matrix (one e4m3 per row and 16-k group j < Kd/16), in one
// of two layouts:
// - row-major [N][Kd/16]: the checkpoint's;
// - tiled [N/16][Kd/128][16 rows][8 groups] (N % 16 == 0, Kd % 128 == 0): what
//   CudaOps::prepare_experts makes of grouped experts' scales at load. A warp's k-step (16 rows
//   x 128 k of one matrix) then reads 128 contiguous bytes and an item's scales are one
//   sequential stream, instead of 8 bytes from each of 16 rows Kd/16 bytes apart (H200, glm5
//   layer at T 8 / 64 / 256: 65 / 68 / 47% -> 71 / 75 / 56% of 4.8 TB/s, docs/perf.md).
// Both are offset(r, j) = (r / 16) * Kd + (j / 8) * kstep + (r % 16) * row + j % 8.
struct Nvfp4ScaleStrides {
  int64_t kstep;  // bytes between the 8-group blocks of one row (8 k-steps of 16)
  int64_t row;    // bytes between consecutive rows of a 16-row block
};
MOE_DQ_HD Nvfp4ScaleStrides nvfp4_scale_strides(bool tiled, int64_t Kd) {
  return tiled ? Nvfp4ScaleStrides{128, 8} : Nvfp4ScaleStrides{8, Kd / 16};
}
MOE_DQ_HD int64_t nvfp4_scale_offset(const Nvfp4ScaleStrides& s, int64_t Kd, int64_t r, int64_t j) {
  return (r >> 4) * Kd + (j >> 3) * s.kstep + (r & 15) * s.row + (j & 7);
}

}  // namespace moe::cuda::grouped

#undef MOE_DQ_HD
