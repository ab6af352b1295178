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

__device__ __forceinline__ uint32_t hmul2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
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
    // NOTE: measured on the H200 (2026-11-30): an integer-only unpacking (nibble -> f16 bits =
    // value * 2^-14 by shifts and masks, scale * 2^7) was 1-3% slower than these cvts at
    // T = 8..256, so the cvt unit is not what limits NVFP4 (docs/moe-kernels.md).
    const uint32_t s2 = hmul2(u16_to_h2(sc), 0x54005400u);  // (s0, s1) * 64
    const uint32_t m0 = __byte_perm(s2, 0, 0x1010), m1 = __byte_perm(s2, 0, 0x3232);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t v = ws[q];
      // e4m3 byte of nibble n: sign bit 3 -> 7, magnitude bits 0..2 -> 2..4.
      const uint32_t lo = ((v << 4) & 0x80808080u) | ((v << 2) & 0x1c1c1c1cu);  // k 0,2,4,6
      const uint32_t hi = (v & 0x80808080u) | ((v >> 2) & 0x1c1c1c1cu);         // k 1,3,5,7
      const uint32_t m = q < 2 ? m0 : m1;
      o[4 * q + 0] = hmul2(u16_to_h2(static_cast<uint16_t>(lo & 0xffffu)), m);
      o[4 * q + 1] = hmul2(u16_to_h2(static_cast<uint16_t>(lo >> 16)), m);
      o[4 * q + 2] = hmul2(u16_to_h2(static_cast<uint16_t>(hi & 0xffffu)), m);
      o[4 * q + 3] = hmul2(u16_to_h2(static_cast<uint16_t>(hi >> 16)), m);
    }
  }
}

__device__ __forceinline__ uint16_t act_bits(float v, bool f16) {
  if (f16) {
    if (!isnan(v)) v = fminf(fmaxf(v, -65504.f), 65504.f);
    return __half_as_ushort(__float2half_rn(v));
  }
  return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

// Storage index of activation k: the order in which dequant<F> produces the weight pairs.
// nvfp4: [0,2,4,6,1,3,5,7] per group of 8; bf16 and fp8: natural.
__host__ __device__ __forceinline__ int64_t act_index(GroupedFmt f, int64_t k) {
  if (f == GroupedFmt::kNvfp4) return (k & ~int64_t{7}) + (k & 1) * 4 + ((k & 7) >> 1);
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
