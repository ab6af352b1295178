// Device helpers the grouped MoE GEMMs share (moe_grouped.cuh, sm80_moe_tile_gemm.cuh,
// sm90_moe_wgmma_gemm.cuh): per-format step geometry (Fmt), streaming loads, the in-register
// dequantization of BF16 / FP8 block-128 / NVFP4 weight bytes to 16-bit mma operands, the
// activations' 16-bit encoding and k order, cp.async and the 128-byte row swizzle.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"

namespace moe::cuda::grouped {

template <GroupedFmt F>
struct Fmt;
template <>
struct Fmt<GroupedFmt::kBf16> {
  static constexpr int kStepK = 32, kActVec = 1, kMmas = 2;
  __host__ __device__ static constexpr int64_t row_bytes(int64_t k) { return k * 2; }
};
template <>
struct Fmt<GroupedFmt::kFp8Block> {
  static constexpr int kStepK = 64, kActVec = 2, kMmas = 4;
  __host__ __device__ static constexpr int64_t row_bytes(int64_t k) { return k; }
};
template <>
struct Fmt<GroupedFmt::kNvfp4> {
  static constexpr int kStepK = 128, kActVec = 4, kMmas = 8;
  __host__ __device__ static constexpr int64_t row_bytes(int64_t k) { return k / 2; }
};

// ---- small device helpers ----

__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ uint32_t u16_to_h2(uint16_t fp8x2) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(fp8x2), __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}

__device__ __forceinline__ __half2 u32_as_h2(uint32_t v) {
  __half2 h;
  memcpy(&h, &v, 4);
  return h;
}
__device__ __forceinline__ uint32_t h2_as_u32(__half2 h) {
  uint32_t v;
  memcpy(&v, &h, 4);
  return v;
}

__device__ __forceinline__ uint32_t hmul2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// Bit select in one LOP3: (a & m) | (b & ~m) (the compiler splits the expression in two).
__device__ __forceinline__ uint32_t bitsel(uint32_t a, uint32_t b, uint32_t m) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xe4;" : "=r"(d) : "r"(a), "r"(b), "r"(m));
  return d;
}

template <GroupedFmt F>
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  if constexpr (F == GroupedFmt::kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// 16 weight bytes -> 2*kMmas registers of bf16x2/f16x2 pairs (see the file comment for order).
// sc: nvfp4 scale bytes of this lane's two 16-k groups (low byte = first group).
template <GroupedFmt F>
__device__ __forceinline__ void dequant(const uint4& w, uint16_t sc,
                                        uint32_t (&o)[2 * Fmt<F>::kMmas]) {
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
  if constexpr (F == GroupedFmt::kBf16) {
#pragma unroll
    for (int q = 0; q < 4; ++q) o[q] = ws[q];
  } else if constexpr (F == GroupedFmt::kFp8Block) {
    // NOTE: measured on the H200 (2026-11-30): this cvt beats an integer unpacking (value *
    // 2^-8 by shifts and masks) by 6-8% at T = 64..256.
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      o[2 * q] = u16_to_h2(static_cast<uint16_t>(ws[q] & 0xffffu));
      o[2 * q + 1] = u16_to_h2(static_cast<uint16_t>(ws[q] >> 16));
    }
  } else {
    // e2m1 -> f16 by bit placement alone: sign -> bit 15, (e1 e0 m) -> bits 11..9 is the f16 of
    // value * 2^-14 (e = 0 lands in the f16 subnormals, so all 16 codes are exact), two values
    // 16 bits apart per f16x2. Per word v (nibble i = k 8q + i): E = the even nibbles as
    // {mag 0..2, sign 6} per byte, O = the odd ones as {mag 1..3, sign 7} (one LOP3 each; bits
    // outside those patterns are don't-care), then one shift and one mask per pair:
    // (k0, k4) = E << 9, (k2, k6) = E << 1, (k1, k5) = O << 8, (k3, k7) = O.
    // Times (fp8 block scale * 2^7) in f16: exact (<= 6 significant bits, >= 2^-17); the
    // epilogues multiply by global scale * kNvfp4Unscale.
    // NOTE: measured on the H200 (2026-11-30, ncu, gate_up at T 64, 12 warps per SM): the
    // previous form (nibbles -> e4m3 bytes, 4 cvts to f16x2 per word: 14 integer ops, 12 on the
    // ALU pipe) kept the ALU pipe 52% busy, this one 42% (the left shifts go to the FMA pipe as
    // IMAD.SHL); the time was the same there (latency-bound), it counts once the cp.async ring
    // makes the kernel issue-bound (docs/moe-kernels.md).
    // (s0, s1) * 128; each half broadcast by the multiply's operand selector (no PRMT).
    const uint32_t s2 = hmul2(u16_to_h2(sc), 0x58005800u);
    const __half2 m0 = __low2half2(u32_as_h2(s2)), m1 = __high2half2(u32_as_h2(s2));
    constexpr uint32_t kM = 0x8e008e00u;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t v = ws[q];
      const uint32_t e = bitsel(v, v << 3, 0x07070707u);
      const uint32_t od = bitsel(v >> 3, v, 0x0e0e0e0eu);
      const __half2 m = q < 2 ? m0 : m1;
      o[4 * q + 0] = h2_as_u32(__hmul2(u32_as_h2((e << 9) & kM), m));
      o[4 * q + 1] = h2_as_u32(__hmul2(u32_as_h2((e << 1) & kM), m));
      o[4 * q + 2] = h2_as_u32(__hmul2(u32_as_h2((od << 8) & kM), m));
      o[4 * q + 3] = h2_as_u32(__hmul2(u32_as_h2(od & kM), m));
    }
  }
}

// The NVFP4 dequantization above yields value * block scale * 2^-7: epilogues multiply by this.
constexpr float kNvfp4Unscale = 128.f;

__device__ __forceinline__ uint16_t act_bits(float v, bool f16) {
  if (f16) {
    if (!isnan(v)) v = fminf(fmaxf(v, -65504.f), 65504.f);
    return __half_as_ushort(__float2half_rn(v));
  }
  return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

// Storage index of activation k: the order in which dequant<F> produces the weight pairs.
// nvfp4: k order [0,4,2,6,1,5,3,7] per group of 8 (an involution, so it is also the storage
// index of k); bf16 and fp8: natural.
__host__ __device__ __forceinline__ int64_t act_index(GroupedFmt f, int64_t k) {
  if (f == GroupedFmt::kNvfp4) return (k & ~int64_t{7}) + (k & 1) * 4 + ((k >> 2) & 1) + (k & 2);
  return k;
}

// cp.async: 16 bytes global -> shared (L2 only), groups, waits.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Byte offset of 16-byte chunk `ch` of a staged 128-byte row `row`, XOR-swizzled over 8 rows
// (ldmatrix conflict-free; the 128-byte-swizzle layout of wgmma's shared-memory descriptors).
__device__ __forceinline__ uint32_t swz(int row, int ch) {
  return static_cast<uint32_t>(row * 128 + ((ch ^ (row & 7)) << 4));
}

}  // namespace moe::cuda::grouped
