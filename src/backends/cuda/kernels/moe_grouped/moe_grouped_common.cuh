// Device helpers the grouped MoE GEMMs share (moe_grouped.cuh, sm80_moe_tile_gemm.cuh,
// sm90_moe_wgmma_gemm.cuh): per-format step geometry (Fmt), streaming loads, the in-register
// dequantization of BF16 / FP8 block-128 / NVFP4 weight bytes to 16-bit mma operands, the
// activations' 16-bit encoding and k order, cp.async and the 128-byte row swizzle; with the
// grouping kernels (moe_group_kernels.cuh) the slot helpers and the E4M3 block quantization.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backends/cuda/kernels/moe_grouped/dequant_bits.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"

namespace moe::cuda::grouped {

template <GroupedFmt F>
struct Fmt;
template <>
struct Fmt<GroupedFmt::kBf16> {
  static constexpr int kStepK = 32, kActVec = 1, kMmas = 2;
};
template <>
struct Fmt<GroupedFmt::kFp8Block> {
  static constexpr int kStepK = 64, kActVec = 2, kMmas = 4;
};
template <>
struct Fmt<GroupedFmt::kNvfp4> {
  static constexpr int kStepK = 128, kActVec = 4, kMmas = 8;
};

// ---- slots: slot s = t*K + k is token t's k-th expert (moe_grouped.h) ----

// Expert of slot s, or -1 where the routed id is out of range (its token's row turns NaN in the
// combine). With p.shared, slot K-1 of every token is the shared expert E-1, and the routed ids
// (K-1 columns) must lie in [0, E-1).
// (T * K < 2^31, checked by launch_moe_group: 32-bit division.)
__device__ __forceinline__ int32_t slot_expert(const int32_t* ids, int64_t ids_stride, int64_t K,
                                               int64_t E, bool shared, int64_t s) {
  const uint32_t t = static_cast<uint32_t>(s) / static_cast<uint32_t>(K),
                 k = static_cast<uint32_t>(s) - t * static_cast<uint32_t>(K);
  if (shared && k == K - 1) return static_cast<int32_t>(E - 1);
  const int32_t e = ids[t * ids_stride + k];
  return e >= 0 && e < E - (shared ? 1 : 0) ? e : -1;
}
__device__ __forceinline__ int32_t slot_expert(const MoeGroupParams& p, int64_t s) {
  return slot_expert(p.ids, p.ids_stride, p.K, p.E, p.shared, s);
}
// Routing weight of slot s (1 on the shared expert's slot).
__device__ __forceinline__ float slot_route_weight(const MoeGroupParams& p, int64_t s) {
  const uint32_t t = static_cast<uint32_t>(s) / static_cast<uint32_t>(p.K),
                 k = static_cast<uint32_t>(s) - t * static_cast<uint32_t>(p.K);
  return p.shared && k == p.K - 1 ? 1.f : p.route_w[t * p.route_w_stride + k];
}

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
    // e2m1 -> f16 bits (value * 2^-14, dequant_bits.h), times (fp8 block scale * 2^7) in f16:
    // exact; the epilogues multiply by global scale * kNvfp4Unscale.
    // NOTE: measured on the H200 (2026-11-30, ncu, gate_up at T 64, 12 warps per SM): the
    // previous form (nibbles -> e4m3 bytes, 4 cvts to f16x2 per word: 14 integer ops, 12 on the
    // ALU pipe) kept the ALU pipe 52% busy, this one 42% (the left shifts go to the FMA pipe as
    // IMAD.SHL); the time was the same there (latency-bound), it counts once the cp.async ring
    // makes the kernel issue-bound (docs/moe-kernels.md).
    // (s0, s1) * 128; each half broadcast by the multiply's operand selector (no PRMT).
    const uint32_t s2 = hmul2(u16_to_h2(sc), kNvfp4ScaleMulF16x2);
    const __half2 m0 = __low2half2(u32_as_h2(s2)), m1 = __high2half2(u32_as_h2(s2));
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t b[4];
      nvfp4_word_to_f16x2(ws[q], b);
      const __half2 m = q < 2 ? m0 : m1;
#pragma unroll
      for (int j = 0; j < 4; ++j) o[4 * q + j] = h2_as_u32(__hmul2(u32_as_h2(b[j]), m));
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

// FP8 activations: one (row, 128 k) block, 8 values per lane over 16 consecutive lanes (gl =
// lane % 16; `mask` holds those 16 lanes, all active): s = amax / 448 (1 for an all-zero block),
// E4M3 codes of v * (448 / amax) (round to nearest even, saturated):
// quant::fp8_act_block_quantize's rule, bit for bit. Lane gl writes its 8 codes at q + 8 gl, lane 0
// of the 16 the scale.
__device__ __forceinline__ void quant_e4m3_block(const float (&v)[8], uint8_t* q, float* scale,
                                                 int gl, unsigned mask) {
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(mask, amax, o));
  const float s = amax > 0.f ? amax / 448.f : 1.f, inv = amax > 0.f ? 448.f / amax : 1.f;
  uint32_t w[2] = {0u, 0u};
#pragma unroll
  for (int i = 0; i < 8; i += 2)
    w[i / 4] |= static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(
                    make_float2(v[i] * inv, v[i + 1] * inv), __NV_SATFINITE, __NV_E4M3))
                << (8 * (i % 4));
  *reinterpret_cast<uint2*>(q + 8 * gl) = make_uint2(w[0], w[1]);
  if (gl == 0) *scale = s;
}

// cp.async: 16 bytes global -> shared (L2 only), 4 bytes, groups, waits.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
// 16 bytes, of which the first n (0 or 16) from src, the rest zeros.
__device__ __forceinline__ void cp_async16_n(uint32_t dst, const void* src, int n) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(n)
               : "memory");
}
// 4 bytes (through L1).
__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Bulk copies (sm_90 and later; the launchers check the device): global -> shared by the copy
// engine, completion counted in bytes on an mbarrier in shared memory (addresses and sizes
// multiples of 16).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define MOE_NO_BULK 1  // the helpers below trap
#endif
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
#ifdef MOE_NO_BULK
  __trap();
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
#endif
}
// Makes initialised barriers visible to the copy engine.
__device__ __forceinline__ void mbar_init_fence() {
#ifndef MOE_NO_BULK
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#ifndef MOE_NO_BULK
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
#endif
}
// Adds `bytes` to the barrier's expected transaction count of the current phase (no arrival).
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
#ifndef MOE_NO_BULK
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
#endif
}
// One tile of a 2-D tensor map (CUtensorMap, 128 bytes, 64-byte aligned: global or kernel
// parameter memory) into shared memory at dst, completion counted in bytes on the mbarrier at bar.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const void* tmap, int c0, int c1,
                                            uint32_t bar) {
#ifndef MOE_NO_BULK
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], [%4];" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
#else
  __trap();
#endif
}
// One arrival (release, CTA scope).
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
#ifndef MOE_NO_BULK
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
#endif
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#ifndef MOE_NO_BULK
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "waitloop:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra waitloop;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes,
                                          uint32_t bar) {
#ifndef MOE_NO_BULK
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
#endif
}

// One TMA tile of a 4-D tensor map (CUtensorMap, 128 bytes, 64-byte aligned, in global memory)
// into shared memory at dst, completion counted in bytes on the mbarrier at bar.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const void* tmap, int c0, int c1, int c2,
                                            int c3, uint32_t bar) {
#ifndef MOE_NO_BULK
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3, %4, %5}], [%6];" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
#else
  __trap();
#endif
}

// Programmatic dependent launch (sm_90; no-ops when a kernel was launched without it,
// GroupedLaunch::pdl): wait until the grid this one depends on completed and its memory is
// visible; let the next grid in the stream launch (its CTAs then wait in their own pdl_wait).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// A GEMM kernel's PDL at its start: wait (unless `defer`, GroupedLaunch::sibling_defer: then at
// its end, pdl_end), and let the next grid launch.
__device__ __forceinline__ void pdl_start(bool defer) {
  if (!defer) pdl_wait();
  pdl_launch_dependents();
}
// ... and at its end (every path out of the kernel): the deferred wait, so the grid completes only
// after its predecessor.
__device__ __forceinline__ void pdl_end(bool defer) {
  if (defer) pdl_wait();
}

// Byte offset of 16-byte chunk `ch` of a staged 128-byte row `row`, XOR-swizzled over 8 rows
// (ldmatrix conflict-free; the 128-byte-swizzle layout of wgmma's shared-memory descriptors).
__device__ __forceinline__ uint32_t swz(int row, int ch) {
  return static_cast<uint32_t>(row * 128 + ((ch ^ (row & 7)) << 4));
}

}  // namespace moe::cuda::grouped
