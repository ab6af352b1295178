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

// __byte_perm (prmt.b32 with 3-bit selectors): byte n of the result is byte (s >> 4 n) & 7 of the
// 8 bytes {y, x} (x bytes 0..3, y 4..7).
MOE_DQ_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t in = (uint64_t{y} << 32) | x;
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n)
    r |= static_cast<uint32_t>((in >> (8 * ((s >> (4 * n)) & 7))) & 0xffu) << (8 * n);
  return r;
#endif
}

// NVFP4 to E4M3 by table (NVFP4 computed in FP8): the 8 e2m1 codes of word v (nibble i = k i, low
// first) with the magnitude table of their block scale (lut_lo bytes m = 0..3, lut_hi m = 4..7:
// the E4M3 code of e2m1 magnitude m times the scale / 8) -> the E4M3 codes of code x scale / 8 in
// k order (q[0]: k 0..3, q[1]: k 4..7). Each code's magnitude is a byte-permute selector into the
// table (selectors masked to 3 bits), and its sign is XORed into the E4M3 sign bit (rounding to
// nearest even is symmetric; -0 gives 0x80): v << 4 holds the even nibbles' signs at bit 7 of
// each byte, v the odd ones'. 10 integer operations per 8 codes.
MOE_DQ_HD void nvfp4_word_to_e4m3(uint32_t v, uint32_t lut_lo, uint32_t lut_hi, uint32_t (&q)[2]) {
  const uint32_t a = v << 4;
  const uint32_t m0 = byte_perm(lut_lo, lut_hi, v & 0x7777u);
  const uint32_t m1 = byte_perm(lut_lo, lut_hi, (v >> 16) & 0x7777u);
  q[0] = m0 ^ (byte_perm(a, v, 0x5140u) & 0x80808080u);
  q[1] = m1 ^ (byte_perm(a, v, 0x7362u) & 0x80808080u);
}

// NVFP4 decode on warpgroup MMA with the weights in registers (the design measured by
// bench/wgmma/rs_probe; built and not kept: experiments/2026-12-04-nvfp4-e4m3-decode.patch): a
// warpgroup's 4 warps hold 64 weight rows as the A operand of wgmma m64nNk32 E4M3 (A from
// registers), the N tokens are B in shared memory. Lane 4 g + c of a warp reads its packed bytes as
// the ring does (rows g, g + 8, k 32 c .. 32 c + 31 of the 128-k step) and converts each 8-code
// word in k order (nvfp4_word_to_e4m3: out register R of a row = k 32 c + 4 R .. + 3); wgmma j (k
// 32 j .. of the step's positions) takes the row's out registers 2 j and 2 j + 1 as its fragment
// registers a0 / a2 (row g) and a1 / a3 (row g + 8), whose elements sit at columns 4 c + b and 16 +
// 4 c + b (the m16n8k32 8-bit A layout per warp). So k lands at position wgmma_rs_act_pos(k) of the
// step, and the activations must be stored (quantized) in that order inside every 128-k block:
// position 32 j + 16 h + 4 c + b holds k 32 c + 8 j + 4 h + b. A bijection of 0..127
// (wgmma_rs_act_k is its inverse); the NVFP4 scale groups follow k, so the lane's scale word serves
// unchanged (words 0, 1: group 2 c; 2, 3: 2 c + 1).
MOE_DQ_HD int wgmma_rs_act_pos(int k) {
  const int c = (k >> 5) & 3, j = (k >> 3) & 3, h = (k >> 2) & 1, b = k & 3;
  return (k & ~127) + 32 * j + 16 * h + 4 * c + b;
}
MOE_DQ_HD int wgmma_rs_act_k(int p) {
  const int j = (p >> 5) & 3, h = (p >> 4) & 1, c = (p >> 2) & 3, b = p & 3;
  return (p & ~127) + 32 * c + 8 * j + 4 * h + b;
}

// Storage index of activation k: the order in which the dequantization produces the weight
// pairs. nvfp4: k order [0,4,2,6,1,5,3,7] per group of 8 (an involution, so it is also the
// storage index of k); bf16 and fp8: natural.
MOE_DQ_HD int64_t act_index(GroupedFmt f, int64_t k) {
  if (f == GroupedFmt::kNvfp4) return (k & ~int64_t{7}) + (k & 1) * 4 + ((k >> 2) & 1) + (k & 2);
  return k;
}
// The streaming GEMMs' chunk-transposed order (GroupedLaunch::act_transpose, NVFP4): inside every
// 128-k block (a k-step), chunk 4 c + v of 8 activations (lane c's v-th 16-byte load) is stored
// at chunk 4 v + c, so the 4 lanes of a row read 64 contiguous bytes with each load. act_chunk_t:
// the chunk position (an involution); act_index_t: the storage index of k (act_index inside the
// chunk; also an involution).
MOE_DQ_HD int64_t act_chunk_t(int64_t q) {
  return (q & ~int64_t{15}) + ((q & 3) << 2) + ((q >> 2) & 3);
}
MOE_DQ_HD int64_t act_index_t(GroupedFmt f, int64_t k) {
  return act_chunk_t(k >> 3) * 8 + (act_index(f, k) & 7);
}

// Bytes of one expert matrix row of k weights: BF16 2 k, FP8 k, NVFP4 k / 2 (two e2m1 per byte).
MOE_DQ_HD int64_t grouped_row_bytes(GroupedFmt f, int64_t k) {
  return f == GroupedFmt::kBf16 ? k * 2 : f == GroupedFmt::kNvfp4 ? k / 2 : k;
}

// Where the bytes of an expert matrix live (N rows of row_bytes bytes: BF16 2 Kd, FP8 Kd, NVFP4
// Kd / 2 with two e2m1 per byte; NVFP4 block scales: one e4m3 per row and 16-k group j < Kd/16),
// in one of two layouts:
// - row-major: the checkpoint's [N][row_bytes] (and [N][Kd/16] scales);
// - packed (N % 16 == 0, row_bytes % 64 == 0): what CudaOps::prepare_experts makes of grouped
//   experts at load, in place (same sizes). The data is cut into blocks of 16 rows x 64 bytes (a
//   warp's k-step in the grouped GEMMs: 128 k NVFP4, 64 k FP8, 32 k BF16), stored block row by
//   block row, k-steps in order: block (r / 16, b / 64) at ((r / 16) * (row_bytes / 64) + b / 64)
//   * 1024. Inside a block, mma lane L = 4 g + c (rows g + 8 h, h = 0, 1; bytes 16 c .. 16 c + 15
//   of the step) finds its 16 bytes of row g + 8 h at (32 h + L) * 16, in the row's order.
//   NVFP4 scales: the same blocks of 16 rows x 128 k, 128 bytes each at the same index * 128;
//   lane L's four scales at 4 L: (row g, group 2c), (row g, 2c + 1), (row g + 8, 2c),
//   (row g + 8, 2c + 1).
// A warp's k-step then reads 1024 contiguous data bytes (+ 128 NVFP4 scale bytes) per matrix,
// an item's bytes are sequential streams, and each lane loads exactly its own A-fragment bytes
// (H200, glm5 layer at T 8 / 64, % of 4.8 TB/s, rows apart -> packed: NVFP4 71.8 / 75.0 ->
// 75.5 / 80.3, BF16 81.8 / 84.8 -> 86.2 / 88.9, FP8 80.2 / 85.0 -> 83.3 / 87.9; docs/perf.md).
// Moving a row's position by one step (64 data bytes, 8 scale groups) moves it by the same amount
// in both layouts (*_kstep), so the GEMMs keep one running pointer per row.
MOE_DQ_HD int64_t packed_data_offset(bool packed, int64_t row_bytes, int64_t r, int64_t b) {
  if (!packed) return r * row_bytes + b;
  const int64_t blk = (r >> 4) * (row_bytes / 64) + (b >> 6);
  const int64_t lane = (r & 7) * 4 + ((b >> 4) & 3);
  return blk * 1024 + (((r >> 3) & 1) * 32 + lane) * 16 + (b & 15);
}
MOE_DQ_HD int64_t nvfp4_scale_offset(bool packed, int64_t Kd, int64_t r, int64_t j) {
  if (!packed) return r * (Kd / 16) + j;
  const int64_t blk = (r >> 4) * (Kd / 128) + (j >> 3);
  const int64_t lane = (r & 7) * 4 + ((j >> 1) & 3);
  return blk * 128 + lane * 4 + ((r >> 3) & 1) * 2 + (j & 1);
}
// Bytes between one step of a row and the next: data (64 bytes of the row), NVFP4 scales (8).
MOE_DQ_HD int64_t packed_data_kstep(bool packed) { return packed ? 1024 : 64; }
MOE_DQ_HD int64_t nvfp4_scale_kstep(bool packed) { return packed ? 128 : 8; }

}  // namespace moe::cuda::grouped

#undef MOE_DQ_HD
