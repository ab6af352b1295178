// NVFP4 computed in FP8 (GroupedLaunch::nvfp4_f8): the producer side of moe_wgmma_f4ws_kernel
// (sm90_moe_wgmma_ws.cuh, F4): the ring's sizes, which bytes each producer thread copies into its
// raw stages, and their dequantization to E4M3 into a stage in the layout TMA gives FP8 weights.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/moe_grouped/moe_grouped_common.cuh"
#include "backends/cuda/kernels/moe_grouped/sm90_moe_wgmma_gemm.cuh"

namespace moe::cuda::wgmma_gemm {

// F4: 3 ring stages of [128 tokens + 256 rows] x 128 k (48 KB, kStageBytes<256>) and 3 raw stages
// of NVFP4 codes (16 KB: 8 x 16 bytes per producer thread) and scale words (4 KB).
constexpr int kF4Stages = 3;
constexpr int kF4RawStages = 3;
constexpr int kF4RawCodeBytes = 8 * 128 * 16;
constexpr int kF4RawBytes = kF4RawCodeBytes + 8 * 128 * 4;
// The E4M3 magnitude tables of the 256 e4m3 block scales (f4_build_lut), after the raw stages.
constexpr int kF4LutBytes = 256 * 8;
constexpr int kSmemBytesF4 =
    kF4Stages * kStageBytes<256> + kF4RawStages * kF4RawBytes + kF4LutBytes + 16 * kF4Stages + 1024;
static_assert(kSmemBytesF4 <= 232448 && kSmemBytesF4 == grouped_wgmma_f4_smem_bytes());
// P2 (moe_wgmma_f4p2_kernel): 4 ring stages of [64 tokens + 256 rows] x 128 k (40 KB) and 3 raw
// stages. NOTE: measured on an H100 (docs/perf.md, 2026-12-06 session 50; moe_bench --wg 1 --ab
// "--wip-p2cfg N" of experiments/2026-12-06-p2-depth.patch / -p2-half-a.patch): with stages of
// 128 activation rows, 2 ring stages instead of 3 cost 2-3.5% at any raw depth (5 raw stages
// gave back 0.5-1%); stages of 64 rows leave room for a fourth ring stage, which against 3 of 128
// rows (docs/perf.md, 2026-12-06 session 51; interleaved) made glm5 / dsv3 T 512..1536 0.981-0.992
// of the time, EP8 0.988-0.995, TP8 0.996-0.999.
constexpr int kF4P2Stages = 4;
constexpr int kF4P2RawStages = 3;
constexpr int kSmemBytesF4P2 = kF4P2Stages * (kGroupedF4p2Tile + 256) * kRowBytes +
                               kF4P2RawStages * kF4RawBytes + kF4LutBytes + 16 * kF4P2Stages + 1024;
static_assert(kSmemBytesF4P2 <= 232448 && kSmemBytesF4P2 == grouped_wgmma_f4p2_smem_bytes());
// E4M3 weight value * 2^3 = value * scale (F4's tiles hold value * scale * 2^-3).
constexpr float kF4Unscale = 8.f;

// F4: the producer threads' units of a stage. Unit i (0..7) of thread tid is staged row
// R0 + 32 i (gate_up: rows 0..127 gate, 128..255 up; down: 256 rows) and 32-k chunk c of the
// stage's 128 k, with R0 = 16 (tid / 64) + 8 ((tid / 32) % 2) + (tid / 4) % 8 and c = tid % 4: the
// 32 threads of a warp take one half (8 rows) of a 16-row block, 4 chunks per row, i.e. in the
// packed layout (dequant_bits.h) 512 contiguous code bytes and 128 scale bytes per warp and unit.
// 32 rows further is 32 rows' bytes further in both layouts (data: 16-row blocks of row_bytes *
// 16; scales: of Kd / 16 * 16), and a k-step is packed_data_kstep / nvfp4_scale_kstep further.
struct F4Thread {
  int R0, c;
  bool hi;         // the unit's two scales are the high half of its scale word
  uint32_t st[2];  // stage offsets of unit 0's two 16-byte E4M3 chunks (k 32 c.., 32 c + 16..)
};
__device__ __forceinline__ F4Thread f4_thread(int tid, bool packed) {
  F4Thread t;
  t.R0 = ((tid >> 6) << 4) + (((tid >> 5) & 1) << 3) + ((tid >> 2) & 7);
  t.c = tid & 3;
  // Scale word at the aligned 4 bytes holding groups 2c, 2c + 1 of the row: packed, rows 8..15 of
  // a 16-row block take the high half; row-major, odd chunks.
  t.hi = packed ? ((t.R0 >> 3) & 1) : (t.c & 1);
  // The TMA tiles' layout (tma_weights): box R / 128 (16 KB), k half c / 2 (8 KB), row R % 128 (64
  // bytes), 16-byte chunk j at (j ^ ((row >> 1) & 3)) * 16 (64-byte swizzle). Unit i adds
  // f4_unit_offset(i): row R0 + 32 i keeps (row >> 1) & 3.
  const int sz = (t.R0 >> 1) & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h)
    t.st[h] = (t.c >> 1) * 8192 + t.R0 * 64 + ((((t.c & 1) * 2 + h) ^ sz) << 4);
  return t;
}
__device__ __forceinline__ constexpr uint32_t f4_unit_offset(int i) {
  return (i >> 2) * 16384 + (i & 3) * 2048;
}
// F4: the producer's copy cursor: item, k-step and the code / scale sources of this thread's
// unit 0 (gate_up: per matrix, gate and up; the units 32 rows apart follow by stride).
struct F4Cursor {
  int unit, ks;
  const uint8_t* wd[2];
  const uint8_t* sd[2];
};
// F4: the cursor's k-step into raw stage `raw`: 16 code bytes of each unit at [unit][thread], then
// the unit's scale word at [unit][thread].
// (Two producer warpgroups, GroupedLaunch::f4p2_max_mean: units i0 .. i0 + NU - 1 only.)
template <bool GU, int NU = 8>
__device__ __forceinline__ void f4_copy(const MoeGemmParams& p, const F4Cursor& q, int tid,
                                        uint32_t raw, int i0 = 0) {
  const int64_t wstep = 16 * p.Kd, sstep = 2 * p.Kd;  // 32 rows
  static_assert(NU == 8 || NU == 4, "all 8 units, or 4 from i0 = 0 or 4");
  // (NU 4: gate_up's units 0..3 are gate's, 4..7 up's; the matrix by a select, not an index, which
  // would put the cursor in local memory.)
  const uint8_t* wd = NU == 8 || !GU ? q.wd[0] : i0 ? q.wd[1] : q.wd[0];
  const uint8_t* sd = NU == 8 || !GU ? q.sd[0] : i0 ? q.sd[1] : q.sd[0];
  if (NU == 4 && !GU) wd += i0 * wstep, sd += i0 * sstep;
#pragma unroll
  for (int u = 0; u < NU; ++u) {
    const int i = i0 + u;
    const int m = GU && NU == 8 ? u / 4 : 0, ii = GU ? u % 4 : u;
    grouped::cp_async16(raw + (i * 128 + tid) * 16, (m ? q.wd[1] : wd) + ii * wstep);
    grouped::cp_async4(raw + kF4RawCodeBytes + (i * 128 + tid) * 4,
                       (m ? q.sd[1] : sd) + ii * sstep);
  }
}
// F4: the magnitude tables of every e4m3 block scale s into shared memory at `lut` (8 bytes per
// s: byte m = E4M3 of e2m1 magnitude m x s / 8, the exact product rounded once: the same codes as
// value * scale * 2^-7 in f16 times 16, the first form) by the 128 producer threads.
__device__ __forceinline__ void f4_build_lut(uint32_t lut, int tid) {
  for (int e = tid; e < 256 * 4; e += 128) {  // two magnitudes each
    const int sc = e >> 2, m = (e & 3) * 2;
    const __half_raw hs = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(sc), __NV_E4M3);
    const float s = __half2float(__half(hs)) * 0.125f;
    auto mag = [](int c) {
      return c < 2 ? 0.5f * c : (1.f + 0.5f * (c & 1)) * (1 << ((c >> 1) - 1));
    };
    uint16_t r;  // first operand -> high byte
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(mag(m + 1) * s), "f"(mag(m) * s));
    asm volatile("st.shared.u16 [%0], %1;" ::"r"(lut + sc * 8 + m), "h"(r) : "memory");
  }
}
// F4: this thread's 8 units of raw stage `raw` (landed) into the stage's weight tiles at `tile`,
// by the magnitude tables at `lut` (grouped::nvfp4_word_to_e4m3; words 0, 1 of a unit in the
// scale word's first group, 2, 3 in its second). In two batches of 4 units whose shared-memory
// loads are issued together (codes and scale words, then the tables they select): one producer
// warp per scheduler has no other warp to hide a load's latency behind (ncu, session 33: one unit
// at a time, its loads then its arithmetic, left the producer issuing 19% of its cycles, waiting
// on shared-memory results 36%, and the consumers waiting on `full` 40% of theirs).
struct F4Raw {
  uint4 w[4];
  uint32_t sw[4];
};
__device__ __forceinline__ void f4_load_raw(F4Raw& r, int tid, uint32_t raw, int i0) {
#pragma unroll
  for (int b = 0; b < 4; ++b)
    asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.w[b].x), "=r"(r.w[b].y), "=r"(r.w[b].z), "=r"(r.w[b].w)
                 : "r"(raw + ((i0 + b) * 128 + tid) * 16));
#pragma unroll
  for (int b = 0; b < 4; ++b)
    asm volatile("ld.shared.u32 %0, [%1];"
                 : "=r"(r.sw[b])
                 : "r"(raw + kF4RawCodeBytes + ((i0 + b) * 128 + tid) * 4));
}
// The tables of the batch's scales: [unit][group][word].
__device__ __forceinline__ void f4_load_lut(const F4Thread& t, const F4Raw& r, uint32_t lut,
                                            uint32_t (&l)[4][2][2]) {
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const uint32_t sc = t.hi ? r.sw[b] >> 16 : r.sw[b] & 0xffffu;
#pragma unroll
    for (int g = 0; g < 2; ++g)
      asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];"
                   : "=r"(l[b][g][0]), "=r"(l[b][g][1])
                   : "r"(lut + ((sc >> (8 * g)) & 0xffu) * 8));
  }
}
__device__ __forceinline__ void f4_convert_store(const F4Thread& t, const F4Raw& r,
                                                 const uint32_t (&l)[4][2][2], uint32_t tile,
                                                 int i0) {
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const uint32_t ws[4] = {r.w[b].x, r.w[b].y, r.w[b].z, r.w[b].w};
    uint32_t q[8];  // E4M3 of k 32 c + 0..31 in order
#pragma unroll
    for (int wd = 0; wd < 4; ++wd) {
      uint32_t o[2];
      grouped::nvfp4_word_to_e4m3(ws[wd], l[b][wd >> 1][0], l[b][wd >> 1][1], o);
      q[2 * wd] = o[0], q[2 * wd + 1] = o[1];
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
      asm volatile(
          "st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(tile + t.st[h] + f4_unit_offset(i0 + b)),
          "r"(q[4 * h]), "r"(q[4 * h + 1]), "r"(q[4 * h + 2]), "r"(q[4 * h + 3])
          : "memory");
  }
}
template <int NU = 8>
__device__ __forceinline__ void f4_dequant(const F4Thread& t, int tid, uint32_t raw, uint32_t tile,
                                           uint32_t lut, int u0 = 0) {
#pragma unroll
  for (int i0 = u0; i0 < u0 + NU; i0 += 4) {
    F4Raw r;
    uint32_t l[4][2][2];
    f4_load_raw(r, tid, raw, i0);
    f4_load_lut(t, r, lut, l);
    f4_convert_store(t, r, l, tile, i0);
  }
}

}  // namespace moe::cuda::wgmma_gemm
