// Hopper (sm_90a) warpgroup-MMA tiled grouped GEMM for BF16 experts with many tokens per expert
// (prefill, hot experts): the same work as sm80_moe_tile_gemm.cuh (tile list of moe_group with
// 128-token tiles, sorted_slot, gathered activations; gate_up writes h = silu(gate) * up, down
// writes out[slot] = w[slot] * acc), with wgmma.mma_async reading both operands from shared memory
// instead of ldmatrix + mma.sync.
//
// Pipeline story: a persistent grid of one 256-thread CTA per SM (two warpgroups) walks work items
// (tile of 128 tokens, block of BN weight rows), n-block fastest. Per item, a ring of kStages
// stages of [128 tokens x 64 k] activations and [BN rows x 64 k] weights is filled by cp.async
// from every thread (gathered activation rows cannot use TMA tiles), two k-blocks ahead; each
// warpgroup issues 4 wgmma m64nBNk16 per k-block on its 64 tokens and keeps one k-block of wgmma in
// flight while the next stage is waited for. Staged rows are 128 bytes with 16-byte chunks
// XOR-swizzled by row (chunk ^ row % 8): exactly the 128-byte-swizzle K-major layout wgmma's
// descriptors describe (8-row atoms 1024 bytes apart; the k16 slices of a 64-k block are the atom
// start + 32 bytes each). cp.async writes go through the generic proxy, so every stage is fenced
// (fence.proxy.async) before the barrier that publishes it to the wgmma (async proxy).
// The next item's first stages are requested before the current item's epilogue, so its loads
// overlap the stores.
// gate_up: the BN rows of a CTA are BN/2 gate + BN/2 up rows interleaved by 8 (n8 blocks gate, up,
// gate, up...), so a thread's accumulators hold gate and up of the same output column.
// FP8 activations (F8: FP8 block-128 weights, GroupedLaunch::fp8_act): activations arrive as E4M3
// with an f32 scale per (row, 128 k) (moe_group for x, moe_quant_rows for h); a stage is then
// 128 k of both operands as stored (the same 128-byte rows), computed by wgmma e4m3 per quarter of
// 64 weight rows into a partial sum that is scaled by (activation scale x weight block scale) and
// added to the f32 accumulators while the tensor cores run the next quarter; BN 256 like the F16
// kernel (4 stages; 128 and 6 stages for a down GEMM with D % 256 != 0), scales loaded a stage
// ahead. (H200, glm5 FP8 T 2048 / 4096 / 8192: 5487 / 9044 / 15343 us with F16 activations ->
// 3380 / 5289 / 9484; docs/perf.md 2026-12-01.)
// With tensor maps of the weights (MoeGemmParams::tmap: FP8 weights, FP8 activations; built by
// grouped_weight_tmaps, CudaOps::prepare_experts), thread 0 loads each stage's weight rows as TMA
// tiles of 128 rows x 128 k onto the stage's mbarrier instead of every thread's cp.async (glm5 T
// 8192 9.1 -> 8.0-8.2 ms on the H200); activations stay on cp.async (gathered rows).
// Deterministic: every output element is written once.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/kernels/moe_grouped/moe_grouped_common.cuh"
#include "backends/cuda/kernels/moe_grouped/sm90_moe_wgmma_epilogue.cuh"
#include "backends/cuda/kernels/moe_grouped/stream_k.h"

namespace moe::cuda::wgmma_gemm {

using grouped::cp_async16;
using grouped::cp_async_commit;
using grouped::cp_async_wait;
using grouped::swz;

constexpr int kThreads = 256;  // two warpgroups of 64 tokens each
constexpr int kBM = 128;       // tokens per tile
constexpr int kBK = 64;        // k per stage (one 128-byte swizzled row)
constexpr int kRowBytes = kBK * 2;
constexpr int kStages = 4;  // ring depth: loads run kStages - 2 k-blocks ahead
constexpr int kAhead = kStages - 2;
// FP8 activations (F8): stages of 128 k, as many bytes as the others' 64 k; as many stages as
// the 4 stages of BN 256 take (197,632 bytes with the alignment).
template <int BN>
constexpr int kStagesF8 = BN == 256 ? 4 : 6;

template <int BN>
constexpr int kStageBytes = (kBM + BN) * kRowBytes;
template <int BN>
constexpr int kSmemBytes = kStages* kStageBytes<BN> + 1024;  // + alignment of the swizzle atoms
template <int BN>
constexpr int kSmemBytesF8 = kStagesF8<BN>* kStageBytes<BN> + 1024;
// TMA (weights by tensor maps): one mbarrier per stage after the ring.
constexpr int kTmaBarBytes = 64;
template <int BN>
constexpr int kSmemBytesF8Tma = kSmemBytesF8<BN> + kTmaBarBytes;
// BF16 with TMA weight tiles (GroupedLaunch::bf16_tma): kSmemBytes<BN> + kTmaBarBytes.
static_assert(kStages * 8 <= kTmaBarBytes);
static_assert(kSmemBytesF8Tma<256> <= 232448 && kSmemBytesF8Tma<128> <= 232448);
static_assert(kSmemBytesF8<128> <= kSmemBytes<256> && kSmemBytesF8<256> == kSmemBytes<256>);
static_assert(kSmemBytes<256> == grouped_wgmma_smem_bytes(256) &&
              kSmemBytes<128> == grouped_wgmma_smem_bytes(128));

// MOE_WGMMA_ENABLED (sm_90a device code): sm90_moe_wgmma_epilogue.cuh.

// Shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row atoms 1024 bytes apart.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) |
         (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}
// The same for 64-byte rows, 64-byte swizzle (8-row atoms 512 bytes apart): the weight tiles the
// TMA kernel's tensor maps deliver.
__device__ __forceinline__ uint64_t smem_desc_sw64(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) |
         (uint64_t{512 >> 4} << 32) | (uint64_t{2} << 62);
}
__device__ __forceinline__ void wgmma_fence() {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}
// Keeps the compiler from moving accumulator reads or writes across the asynchronous wgmma.
template <int N>
__device__ __forceinline__ void fence_acc(float (&a)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(a[i])::"memory");
}
__device__ __forceinline__ void fence_proxy_async() {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

#ifdef MOE_WGMMA_ENABLED
// One wgmma.mma_async m64nNk16 (F32 accumulators d[N/2] of this thread, both operands from
// shared-memory descriptors, K-major, scale-d = 1) per (N, operand type): the operand lists are
// spelled once here. IA/IB/IS: operand numbers of the two descriptors and the scale-d flag.
#define MOE_WG_F4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define MOE_WG_F16(d, i) \
  MOE_WG_F4(d, i), MOE_WG_F4(d, i + 4), MOE_WG_F4(d, i + 8), MOE_WG_F4(d, i + 12)
#define MOE_WG_F64(d, i) \
  MOE_WG_F16(d, i), MOE_WG_F16(d, i + 16), MOE_WG_F16(d, i + 32), MOE_WG_F16(d, i + 48)
#define MOE_WG_ACC8(d) MOE_WG_F4(d, 0), MOE_WG_F4(d, 4)
#define MOE_WG_ACC16(d) MOE_WG_F16(d, 0)
#define MOE_WG_ACC32(d) MOE_WG_F16(d, 0), MOE_WG_F16(d, 16)
#define MOE_WG_REGS8 "%0, %1, %2, %3, %4, %5, %6, %7"
#define MOE_WG_REGS16 MOE_WG_REGS8 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define MOE_WG_ACC64(d) MOE_WG_F64(d, 0)
#define MOE_WG_ACC128(d) MOE_WG_F64(d, 0), MOE_WG_F64(d, 64)
#define MOE_WG_REGS32                                                    \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
  ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define MOE_WG_REGS64                                                                \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"             \
  ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
  ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47" \
  ", %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define MOE_WG_REGS128                                                                           \
  MOE_WG_REGS64                                                                                  \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"             \
  ", %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"             \
  ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111" \
  ", %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, " \
  "%127"
#define MOE_WGMMA_DEF(N, NACC, TYPE, IA, IB, IS)                                       \
  __device__ __forceinline__ void wgmma_m64n##N##_##TYPE(float(&d)[NACC], uint64_t da, \
                                                         uint64_t db) {                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IS                               \
                 ", 0;\n"                                                              \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #TYPE "." #TYPE     \
                 " {" MOE_WG_REGS##NACC "}, %" IA ", %" IB ", p, 1, 1, 0, 0;\n}\n"     \
                 : MOE_WG_ACC##NACC(d)                                                 \
                 : "l"(da), "l"(db), "r"(1));                                          \
  }
// FP8 (E4M3 x E4M3, k 32): scale-d from the last operand (0: d = A x B, 1: d += A x B).
#define MOE_WGMMA_F8_DEF(N, NACC, IA, IB, IS)                                           \
  __device__ __forceinline__ void wgmma_m64n##N##k32_e4m3(float(&d)[NACC], uint64_t da, \
                                                          uint64_t db, int scale_d) {   \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IS                                \
                 ", 0;\n"                                                               \
                 "wgmma.mma_async.sync.aligned.m64n" #N                                 \
                 "k32.f32.e4m3.e4m3"                                                    \
                 " {" MOE_WG_REGS##NACC "}, %" IA ", %" IB ", p, 1, 1;\n}\n"            \
                 : MOE_WG_ACC##NACC(d)                                                  \
                 : "l"(da), "l"(db), "r"(scale_d));                                     \
  }
MOE_WGMMA_F8_DEF(64, 32, "32", "33", "34")
// Wider and narrower FP8 tiles (bench/wgmma measures them against the kernel's n64 quarters).
MOE_WGMMA_F8_DEF(16, 8, "8", "9", "10")
MOE_WGMMA_F8_DEF(32, 16, "16", "17", "18")
MOE_WGMMA_F8_DEF(128, 64, "64", "65", "66")
MOE_WGMMA_F8_DEF(256, 128, "128", "129", "130")
#undef MOE_WGMMA_F8_DEF
// The same with A (the thread's 4 registers of E4M3 codes: rows g, g + 8 of its warp's 16 x k 4 c..
// and k 16 + 4 c.., the mma.sync m16n8k32 layout) from registers and B by descriptor
// (bench/wgmma's register-A patterns).
#define MOE_WGMMA_F8_RS_DEF(N, NACC, A0, A1, A2, A3, IB, IS)                            \
  __device__ __forceinline__ void wgmma_m64n##N##k32_e4m3_rs(                           \
      float(&d)[NACC], const uint32_t(&a)[4], uint64_t db, int scale_d) {               \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IS                                \
                 ", 0;\n"                                                               \
                 "wgmma.mma_async.sync.aligned.m64n" #N                                 \
                 "k32.f32.e4m3.e4m3"                                                    \
                 " {" MOE_WG_REGS##NACC "}, {%" A0 ", %" A1 ", %" A2 ", %" A3 "}, %" IB \
                                        ", p, 1, 1;\n}\n"                               \
                 : MOE_WG_ACC##NACC(d)                                                  \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));  \
  }
MOE_WGMMA_F8_RS_DEF(64, 32, "32", "33", "34", "35", "36", "37")
MOE_WGMMA_F8_RS_DEF(256, 128, "128", "129", "130", "131", "132", "133")
#undef MOE_WGMMA_F8_RS_DEF
MOE_WGMMA_DEF(128, 64, bf16, "64", "65", "66")
MOE_WGMMA_DEF(256, 128, bf16, "128", "129", "130")
MOE_WGMMA_DEF(128, 64, f16, "64", "65", "66")
MOE_WGMMA_DEF(256, 128, f16, "128", "129", "130")
#undef MOE_WGMMA_DEF
#undef MOE_WG_REGS128
#undef MOE_WG_REGS64
#undef MOE_WG_ACC128
#undef MOE_WG_ACC64
#undef MOE_WG_ACC32
#undef MOE_WG_REGS32
#undef MOE_WG_ACC16
#undef MOE_WG_REGS16
#undef MOE_WG_ACC8
#undef MOE_WG_REGS8
#undef MOE_WG_F64
#undef MOE_WG_F16
#undef MOE_WG_F4
#endif  // MOE_WGMMA_ENABLED

// acc += A (64 tokens x 16 k) x B (BN rows x 16 k)^T; BF16 operands for BF16 experts, F16 for
// FP8/NVFP4 (activations are F16 there, weights are dequantized to F16 on the way to shared).
template <GroupedFmt F, int BN>
__device__ __forceinline__ void wgmma_k16(float (&acc)[BN / 2], uint64_t da, uint64_t db) {
#ifdef MOE_WGMMA_ENABLED
  if constexpr (F == GroupedFmt::kBf16) {
    if constexpr (BN == 256)
      wgmma_m64n256_bf16(acc, da, db);
    else
      wgmma_m64n128_bf16(acc, da, db);
  } else {
    if constexpr (BN == 256)
      wgmma_m64n256_f16(acc, da, db);
    else
      wgmma_m64n128_f16(acc, da, db);
  }
#else
  __trap();  // built for an architecture without wgmma: the launcher never selects this kernel
#endif
}

// Weight bytes per row of one stage (64 k; 128 k with FP8 activations, F8), and the 16-byte global
// chunks of a stage's BN rows each thread loads (BF16 and F8 by cp.async; FP8 and NVFP4 with F16
// activations through registers, dequantized to F16).
template <GroupedFmt F, bool F8>
constexpr int kWRowBytes = F8 || F == GroupedFmt::kBf16 ? 128
                           : F == GroupedFmt::kFp8Block ? 64
                                                        : 32;
template <GroupedFmt F, int BN, bool F8>
constexpr int kWLoads = BN*(kWRowBytes<F, F8> / 16) / kThreads;

// Staged weight row r (0..BN-1) of n-block nblk: matrix and row in it. gate_up interleaves gate
// and up by 8 rows.
template <int BN, bool GU>
__device__ __forceinline__ void staged_row(int r, int64_t nblk, int* m, int64_t* row) {
  if constexpr (GU) {
    *m = (r >> 3) & 1;
    *row = nblk * (BN / 2) + (r >> 4) * 8 + (r & 7);
  } else {
    *m = 0;
    *row = nblk * BN + r;
  }
}

// Activation row of token `tok` of a tile: gate_up gathers token rows, down reads grouped rows.
template <bool GU>
__device__ __forceinline__ int64_t act_row(const MoeGemmParams& p, int pos0, int tok) {
  return GU ? p.sorted_slot[pos0 + tok] / p.K : pos0 + tok;
}

// One work item's identity (tile and n-block) and this thread's copy sources.
template <GroupedFmt F, int BN, bool GU, bool F8>
struct ItemSrc {
  int e, pos0, cnt;
  int64_t nblk;
  const uint8_t* a[kBM / 32];            // gathered activation rows crow + 32 i, chunk ch
  const uint8_t* w[kWLoads<F, BN, F8>];  // this thread's weight chunks (k-block 0)
  const void* s[kWLoads<F, BN, F8>];     // fp8: the block-scale row; nvfp4: the scale row
  // F8: the activation scale rows of this thread's two tokens (accumulators q < 2, q >= 2) and
  // the weight block-scale rows of its columns (gate_up: gate, up; down: staged rows 0..127,
  // 128..255).
  const float* sa[2];
  const float* sw[2];
  // F8: w[i] = w[0] + i * wstr (chunks i are 32 staged rows apart: the same matrix, 16 (gate_up)
  // or 32 rows further; one pointer instead of kWLoads for the registers).
  int64_t wstr;
};

template <GroupedFmt F, int BN, bool GU, bool F8>
__device__ __forceinline__ ItemSrc<F, BN, GU, F8> item_src(const MoeGemmParams& p, int64_t item,
                                                           int64_t n_blocks, int tid) {
  constexpr int kChunks = kWRowBytes<F, F8> / 16;  // global 16-byte chunks per row per k-block
  ItemSrc<F, BN, GU, F8> s;
  const int64_t tile = item / n_blocks;
  s.nblk = item % n_blocks;
  const int4 td = reinterpret_cast<const int4*>(p.tiles)[tile];
  s.e = td.x, s.pos0 = td.y, s.cnt = td.z;
  const uint8_t* act = static_cast<const uint8_t*>(p.act);
  const int64_t act_row_bytes = p.Kd * (F8 ? 1 : 2);
  const int ch = tid & 7, crow = tid >> 3;
#pragma unroll
  for (int i = 0; i < kBM / 32; ++i) {
    const int tok = min(crow + 32 * i, s.cnt - 1);
    s.a[i] = act + act_row<GU>(p, s.pos0, tok) * act_row_bytes + ch * 16;
  }
  if constexpr (F8) {
    const int warp = tid >> 5;
    const int64_t kb = p.Kd / 128;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int tok =
          min((warp >> 2) * 64 + (warp & 3) * 16 + ((tid & 31) >> 2) + 8 * hh, s.cnt - 1);
      s.sa[hh] = p.act_scale + act_row<GU>(p, s.pos0, tok) * kb;
    }
#pragma unroll
    for (int m = 0; m < 2; ++m) {  // gate_up: BN / 2 <= 128 rows of each matrix, 128-aligned
      const int64_t row0 = GU ? s.nblk * (BN / 2) : s.nblk * BN + (BN == 256 ? 128 * m : 0);
      s.sw[m] = static_cast<const float*>(p.s[GU ? m : 0][s.e]) + (row0 / 128) * kb;
    }
  }
  const int64_t row_bytes = grouped::grouped_row_bytes(F, p.Kd);
#pragma unroll
  for (int i = 0; i < kWLoads<F, BN, F8>; ++i) {
    const int u = tid + i * kThreads, r = u / kChunks, q = u % kChunks;
    int m;
    int64_t wr;
    staged_row<BN, GU>(r, s.nblk, &m, &wr);
    s.w[i] = static_cast<const uint8_t*>(p.w[m][s.e]) +
             grouped::packed_data_offset(p.packed, row_bytes, wr, q * 16);
    if constexpr (F == GroupedFmt::kFp8Block && !F8)
      s.s[i] = static_cast<const float*>(p.s[m][s.e]) + (wr / 128) * (p.Kd / 128);
    else if constexpr (F == GroupedFmt::kNvfp4)
      s.s[i] = static_cast<const uint8_t*>(p.s[m][s.e]) +
               grouped::nvfp4_scale_offset(p.packed, p.Kd, wr, q * 2);
    else
      s.s[i] = nullptr;
  }
  if constexpr (F8) s.wstr = s.w[1] - s.w[0];
  return s;
}

// F8, one quarter of a staged k-block of 128 (both operands in shared memory: descriptor da for
// this warpgroup's 64 tokens, db for the BN staged rows, 128-byte swizzle, or the TMA tiles'
// 64-byte swizzle when TMA): staged rows 64 qd.. (64 rows x 128 B = 512 x 16 B) by four wgmma
// m64n64k32 e4m3 into part (one commit group).
template <bool TMA>
__device__ __forceinline__ void f8_issue(float (&part)[32], uint64_t da, uint64_t db, int qd) {
#ifdef MOE_WGMMA_ENABLED
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    // TMA: quarter qd in box qd / 2 (16 KB), rows 64 (qd % 2) (4 KB), k half kk / 2 (8 KB), 32
    // bytes into the 64-byte rows for odd kk. The stage's descriptor plus the tile's offset in its
    // start-address field (bytes / 16; no carry: shared addresses stay below 2^18), so each
    // wgmma's operand costs one add, not a descriptor built anew.
    const int off = (qd >> 1) * 16384 + (qd & 1) * 4096 + (kk >> 1) * 8192 + (kk & 1) * 32;
    const uint64_t b = TMA ? db + off / 16 : db + 512 * qd + 2 * kk;
    wgmma_m64n64k32_e4m3(part, da + 2 * kk, b, kk);
  }
  wgmma_commit();
#else
  __trap();
#endif
}
// The scales of a k-block for f8_promote: sca the thread's two tokens' activation scales, scw
// the weight block scales of gate, up (gate_up) or staged rows 0..127, 128..255 (down).
__device__ __forceinline__ void f8_scales(float (&sc)[4], const float (&sca)[2],
                                          const float (&scw)[2]) {
  sc[0] = sca[0] * scw[0], sc[1] = sca[1] * scw[0], sc[2] = sca[0] * scw[1],
  sc[3] = sca[1] * scw[1];
}
// Quarter qd's finished partial sum, scaled, into acc. Accumulator 4 j + q: token half q >> 1,
// staged row 8 j + 2 c + (q & 1) (gate_up: matrix j & 1, or j / 16 with TMA; down: 128-row block
// j / 16); part[i] is accumulator 32 qd + i.
template <int BN, bool GU, bool TMA>
__device__ __forceinline__ void f8_promote(float (&acc)[BN / 2], float (&part)[32], int qd,
                                           const float (&sc)[4]) {
  fence_acc(part);
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int j = 8 * qd + i / 4, q = i % 4;
    const int m = GU && !TMA ? (j & 1) : (BN == 256 ? j / 16 : 0);
    acc[32 * qd + i] = fmaf(part[i], sc[2 * m + (q >> 1)], acc[32 * qd + i]);
  }
}
#ifdef MOE_WGMMA_ENABLED
// A in registers (bench/wgmma's register-A patterns): the warp's 16 rows of its warpgroup's 64 x
// 128-byte activation tile at shared address `tile` (1024-aligned, 128-byte swizzle as smem_desc
// describes it) for the 4 k32 slices of a k-block, by 4 ldmatrix.x4 (b16 matrices of 8 rows x 16
// bytes, lane l of each 8 giving row l): matrices (rows 0-7, bytes 0-15), (8-15, 0-15), (0-7,
// 16-31), (8-15, 16-31) of a slice are wgmma's a0..a3 for 8-bit types (row lane / 4, k 4 (lane %
// 4)..). The k-block's A is then read from shared memory once instead of once per quarter (40 KB
// a warpgroup and k-block instead of 64). Measured and not kept for the GEMMs (session 64,
// docs/moe-kernels.md: ~1% of clock at the power cap, and the loads before each k-block's first
// wgmma cost more; experiments/2026-12-07-register-a.patch).
__device__ __forceinline__ void load_a_regs(uint32_t (&a)[4][4], uint32_t tile) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3;
  const int row = 16 * w + (lane & 7) + 8 * ((lane >> 3) & 1);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const int chunk = 2 * kk + (lane >> 4);
    const uint32_t addr = tile + row * 128 + ((chunk ^ (row & 7)) << 4);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a[kk][0]), "=r"(a[kk][1]), "=r"(a[kk][2]), "=r"(a[kk][3])
                 : "r"(addr)
                 : "memory");
  }
}
#endif
// F8: one staged k-block into acc: per quarter of 64 rows f8_issue into part[qd & 1], two quarters
// in flight, each finished quarter promoted (f8_promote) while the tensor cores run the next.
// Ends with every wgmma complete.
template <int BN, bool GU, bool TMA>
__device__ __forceinline__ void f8_kblock(float (&acc)[BN / 2], float (&part)[2][32], uint64_t da,
                                          uint64_t db, const float (&sca)[2],
                                          const float (&scw)[2]) {
  constexpr int kQuarters = BN / 64;
  float sc[4];
  f8_scales(sc, sca, scw);
  wgmma_fence();
  f8_issue<TMA>(part[0], da, db, 0);
  f8_issue<TMA>(part[1], da, db, 1);
#pragma unroll
  for (int qd = 0; qd < kQuarters; ++qd) {
    if (qd + 1 < kQuarters)
      wgmma_wait<1>();
    else
      wgmma_wait<0>();
    f8_promote<BN, GU, TMA>(acc, part[qd & 1], qd, sc);
    if (qd + 2 < kQuarters) {
      wgmma_fence();  // part[qd & 1] was just read
      f8_issue<TMA>(part[qd & 1], da, db, qd + 2);
    }
  }
}

// F8 narrow k-block (tiles of 64 tokens or fewer): warpgroup w computes quarters w and w + 2 of the
// staged rows (TMA gate_up: gate and up of the same 64 columns) for tokens 0..63 (da), two groups
// in flight; with the other warpgroup on the other two quarters the tile has no padding warpgroup.
// The quarters are picked at run time in the weight descriptor only: their sums go to the
// accumulator slots of quarters 0 and 2 (the same scales: quarters w and w + 2 are in blocks 0
// and 1 as 0 and 2 are), and the epilogue writes them to columns 64 w on (its nw), so the kernel
// has one narrow k-loop for both warpgroups (two, one per compile-time quarter, spilled the F4
// instance's registers: 232 bytes stored; docs/moe-kernels.md).
template <int BN, bool GU>
__device__ __forceinline__ void f8_kblock_narrow(float (&acc)[BN / 2], float (&part)[2][32],
                                                 uint64_t da, uint64_t db, int w,
                                                 const float (&sca)[2], const float (&scw)[2]) {
  static_assert(BN == 256);
  float sc[4];
  f8_scales(sc, sca, scw);
  wgmma_fence();
  f8_issue<true>(part[0], da, db, w);
  f8_issue<true>(part[1], da, db, w + 2);
  wgmma_wait<1>();
  f8_promote<BN, GU, true>(acc, part[0], 0, sc);
  wgmma_wait<0>();
  f8_promote<BN, GU, true>(acc, part[1], 2, sc);
}

// TMA: the weight rows of k-block ks (128 k) of item (expert e, n-block nblk) into the stage's
// weight tile at dst, as boxes of 128 rows (gate_up: gate, up; down: rows nblk * BN + 128 b) on
// the stage's mbarrier (arrival with the expected bytes included). One thread.
template <int BN, bool GU>
__device__ __forceinline__ void tma_weights(const MoeGemmParams& p, int e, int64_t nblk, int64_t ks,
                                            uint32_t dst, uint32_t bar) {
  grouped::mbar_arrive_expect_tx(bar, BN * 128);
#pragma unroll
  for (int b = 0; b < BN / 128; ++b) {
    const int m = GU ? b : 0;
    const int64_t row0 = GU ? nblk * 128 : nblk * BN + 128 * b;
    grouped::tma_load_4d(dst + b * 16384,
                         static_cast<const uint8_t*>(p.tmap) + (m * p.tmap_e + e) * 128, 0, 0,
                         static_cast<int>(row0 / 16), static_cast<int>(2 * ks), bar);
  }
}

// BF16 with TMA weight tiles (GroupedLaunch::bf16_tma): one staged k-block of 64 into acc. A
// stage's 128-row boxes land as two k halves of [128 rows][64 bytes], 64-byte swizzled (32 bf16 of
// k per row; the bytes of FP8's 128-k boxes): per k16 slice kk (32 bytes: half kk / 2, 32 bytes in
// for odd kk) one wgmma m64n128k16 per box b into accumulators 64 b.. (n8 blocks 16 b..: staged
// rows 128 b.., the register layout of the n256 wgmma's). gate_up: box 0 gate, box 1 up (the
// epilogue's TMA layout); down: rows nblk * BN + 128 b. One commit group.
template <int BN>
__device__ __forceinline__ void bf16_tma_kblock(float (&acc)[BN / 2], uint64_t da, uint64_t db) {
#ifdef MOE_WGMMA_ENABLED
#pragma unroll
  for (int kk = 0; kk < kBK / 16; ++kk)
#pragma unroll
    for (int b = 0; b < BN / 128; ++b) {
      const int off = b * 16384 + (kk >> 1) * 8192 + (kk & 1) * 32;
      wgmma_m64n128_bf16(*reinterpret_cast<float(*)[64]>(acc + 64 * b), da + 2 * kk, db + off / 16);
    }
  wgmma_commit();
#else
  __trap();
#endif
}

// A quantized stage's weights in registers between their global load and the shared store.
template <GroupedFmt F, int BN, bool F8>
struct WRegs {
  uint4 w[kWLoads<F, BN, F8>];
  float sf[kWLoads<F, BN, F8>];     // fp8 block scale
  uint16_t sn[kWLoads<F, BN, F8>];  // nvfp4: the two e4m3 scales of the chunk's 32 k
};

// F8 (FP8 weights, p.act E4M3 with p.act_scale): a stage is 128 k of both operands as they are
// (128-byte rows, the same swizzle); per quarter of 64 staged rows four wgmma m64n64k32 e4m3 into
// a partial sum, which is then scaled by (activation scale of its token) x (weight scale of its
// 128-row block) and added to the F32 accumulators while the tensor cores run the next quarter
// (two partial-sum buffers).
//
// TMA (F8; BF16 with GroupedLaunch::bf16_tma, bf16_tma_kblock: the same boxes are 64 k of
// BF16): thread 0 loads each stage's weights with TMA tiles of 128 rows x 128 k (tensor
// maps p.tmap, grouped_weight_tmaps) onto the stage's mbarrier instead of every thread's cp.async;
// a tile lands as two k halves of [128 rows][64 bytes], 64-byte swizzled, and gate_up stages 128
// gate then 128 up rows (not interleaved): quarters 0-1 gate, 2-3 up. The same wgmma on the same
// values in the same order: bit-identical to the cp.async kernel.
// SPLIT: split-K where the items fill less than half the grid (MoeGemmParams::split_partials,
// stream_k.h's ws_split_count / ws_split_range; gate_up at 256 rows): unit u = item u / S,
// k-range u % S; every range's CTA stores its f32 sums, the last to arrive on the item's counter
// adds the S of them in range order and runs the epilogue.
template <GroupedFmt F, int BN, bool GU, bool F8 = false, bool TMA = false, bool SPLIT = false>
__global__ void __launch_bounds__(kThreads, 1)
    moe_wgmma_gemm_kernel(const __grid_constant__ MoeGemmParams p) {
  // GroupedLaunch::pdl / hybrid_pdl (no-op otherwise); sibling_defer not in the split-K instances
  // (the FP8 one spilled 32 bytes more with it).
  const bool defer = !SPLIT && p.defer_wait;
  grouped::pdl_start(defer);
  static_assert(!F8 || F == GroupedFmt::kFp8Block);
  static_assert(!SPLIT || (GU && BN == 256));
  static_assert(!TMA || ((F8 || F == GroupedFmt::kBf16) && (BN == 256 || !GU)));
  constexpr int kAStage = kBM * kRowBytes;
  constexpr int kNAcc = BN / 2;  // f32 accumulators per thread (m64nBN over 128 threads)
  constexpr int kChunks = kWRowBytes<F, F8> / 16;
  constexpr bool kQuant = F != GroupedFmt::kBf16 && !F8;
  constexpr int kStageK = F8 ? 128 : kBK;                           // k per stage
  constexpr int kSt = F8 ? kStagesF8<BN> : kStages, kAh = kSt - 2;  // ring depth, ahead
  extern __shared__ uint8_t smem_raw[];
  const uint32_t smem_s =
      (static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) + 1023u) & ~1023u;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wg = warp >> 2, wq = warp & 3;  // warpgroup (64 tokens each), warp in it
  const int g = lane >> 2, c = lane & 3;
  const int64_t n_blocks = GU ? p.N / (BN / 2) : p.N / BN;
  const int64_t n_items = static_cast<int64_t>(*p.num_tiles) * n_blocks;
  const int64_t ksteps = p.Kd / kStageK;
  // Split-K: S ranges per item (ws_split_count counts 128-k steps; ranges in stages of kStageK).
  const int S = SPLIT ? grouped::ws_split_count(static_cast<int>(n_items), gridDim.x,
                                                static_cast<int>(p.Kd / 128), p.split_bytes,
                                                p.split_counters_cap)
                      : 1;
  const int64_t n_units = n_items * S;
  // Bytes from k-block 0's weights and scales to those of k-block ks (either layout,
  // dequant_bits.h): a k-block is kWRowBytes of a row, i.e. two (BF16, F8), one (FP8) or half
  // (NVFP4) a layout step of 64 bytes; within a step, 32 bytes further are 32 bytes further.
  static_assert(kBK == 64);
  const bool packed = p.packed;
  const int64_t w_kstep = grouped::packed_data_kstep(packed),
                s_kstep = grouped::nvfp4_scale_kstep(packed),
                s_half = grouped::nvfp4_scale_offset(packed, p.Kd, 0, 4);
  auto w_off = [&](int64_t ks) {
    return (ks * kWRowBytes<F, F8> / 64) * w_kstep + (ks * kWRowBytes<F, F8>) % 64;
  };
  const uint32_t a_dst = swz(tid >> 3, tid & 7);
  // NVFP4 gate_up on 16-bit x with MoeGemmParams::act_t: x's 16-byte chunks are transposed per
  // 128 k (act_index_t), so this thread's chunk ch of an even / odd k-block of 64 lies at chunk
  // act_chunk_t(ch) / act_chunk_t(8 + ch) of its 128-k block: bytes from the natural place.
  const bool a_t = F == GroupedFmt::kNvfp4 && !F8 && GU && p.act_t;
  const int a_ch = tid & 7;
  const int a_off0 = a_t ? 16 * static_cast<int>(grouped::act_chunk_t(a_ch) - a_ch) : 0,
            a_off1 = a_t ? 16 * static_cast<int>(grouped::act_chunk_t(8 + a_ch) - 8 - a_ch) : 0;
  // TMA: stage s's mbarrier (one arrival: thread 0's expect_tx); bit s of `phase`: the parity of
  // its next completion.
  const uint32_t bars = smem_s + kSt * kStageBytes<BN>;
  uint32_t phase = 0;
  if constexpr (TMA) {
    if (tid == 0) {
      for (int st = 0; st < kSt; ++st) grouped::mbar_init(bars + 8 * st, 1);
      grouped::mbar_init_fence();
    }
    __syncthreads();
  }

  auto load_a = [&](const ItemSrc<F, BN, GU, F8>& s, int64_t ks, int stage) {
    const uint32_t base = smem_s + stage * kStageBytes<BN>;
#pragma unroll
    for (int i = 0; i < kBM / 32; ++i)
      cp_async16(base + a_dst + i * 32 * kRowBytes,
                 s.a[i] + ks * kRowBytes + ((ks & 1) ? a_off1 : a_off0));
    if constexpr (TMA) {
      if (tid == 0) tma_weights<BN, GU>(p, s.e, s.nblk, ks, base + kAStage, bars + 8 * stage);
    } else if constexpr (!kQuant) {
#pragma unroll
      for (int i = 0; i < kWLoads<F, BN, F8>; ++i) {
        const int u = tid + i * kThreads;
        cp_async16(base + kAStage + swz(u >> 3, u & 7),
                   (F8 ? s.w[0] + i * s.wstr : s.w[i]) + w_off(ks));
      }
    }
  };
  // Quantized weights: global -> registers (one k-block ahead) -> F16 in shared memory.
  auto load_w = [&](const ItemSrc<F, BN, GU, F8>& s, int64_t ks, WRegs<F, BN, F8>& R) {
    if constexpr (kQuant) {
#pragma unroll
      for (int i = 0; i < kWLoads<F, BN, F8>; ++i) {
        R.w[i] = grouped::ld_stream(s.w[i] + w_off(ks));
        if constexpr (F == GroupedFmt::kFp8Block)
          R.sf[i] = __ldg(static_cast<const float*>(s.s[i]) + (ks * kBK) / 128);
        else
          R.sn[i] = __ldg(reinterpret_cast<const uint16_t*>(
              static_cast<const uint8_t*>(s.s[i]) + (ks >> 1) * s_kstep + (ks & 1) * s_half));
      }
    }
  };
  auto store_w = [&](const WRegs<F, BN, F8>& R, int stage) {
    if constexpr (kQuant) {
      const uint32_t base = smem_s + stage * kStageBytes<BN> + kAStage;
#pragma unroll
      for (int i = 0; i < kWLoads<F, BN, F8>; ++i) {
        const int u = tid + i * kThreads, r = u / kChunks, q = u % kChunks;
        uint32_t o[2 * grouped::Fmt<F>::kMmas];
        if constexpr (F == GroupedFmt::kFp8Block) {
          grouped::dequant<F>(R.w[i], 0, o);  // 16 e4m3 -> 8 f16x2, exact; then * block scale
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&o[j]));
            const __half2 h = __floats2half2_rn(f.x * R.sf[i], f.y * R.sf[i]);
            o[j] = *reinterpret_cast<const uint32_t*>(&h);
          }
        } else {
          grouped::dequant<F>(R.w[i], R.sn[i], o);  // 32 nibbles -> 16 f16x2 (act_index order)
        }
        constexpr int kOut = F == GroupedFmt::kFp8Block ? 2 : 4;  // 16-byte chunks written
#pragma unroll
        for (int j = 0; j < kOut; ++j) {
          const uint32_t dst = base + swz(r, q * kOut + j);
          asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(dst), "r"(o[4 * j]),
                       "r"(o[4 * j + 1]), "r"(o[4 * j + 2]), "r"(o[4 * j + 3])
                       : "memory");
        }
      }
    }
  };
  WRegs<F, BN, F8> R;
  // The k-steps [kb0, kb1) of unit u (the whole k-loop without a split).
  auto range = [&](int64_t u, int64_t& kb0, int64_t& kb1) {
    if constexpr (SPLIT) {
      int b0, b1;
      grouped::ws_split_range(static_cast<int>(u % S), S, static_cast<int>(ksteps), &b0, &b1);
      kb0 = b0, kb1 = b1;
    } else {
      kb0 = 0, kb1 = ksteps;
    }
  };
  auto prologue = [&](const ItemSrc<F, BN, GU, F8>& s, int64_t kb0, int64_t kb1) {
    if constexpr (kQuant) {
      load_w(s, kb0, R);
      store_w(R, 0);
      if (kb1 - kb0 > 1) load_w(s, kb0 + 1, R);
    }
#pragma unroll
    for (int st = 0; st < kAh; ++st) {
      if (st < kb1 - kb0) load_a(s, kb0 + st, st);
      cp_async_commit();
    }
  };

  int64_t unit = blockIdx.x;
  if (unit >= n_units) return grouped::pdl_end(defer);
  ItemSrc<F, BN, GU, F8> cur = item_src<F, BN, GU, F8>(p, unit / S, n_blocks, tid);
  int64_t kb0, kb1;
  range(unit, kb0, kb1);
  prologue(cur, kb0, kb1);
  float acc[kNAcc];
  // F8: the scales of the next stage (activation: the thread's two tokens; weights: gate, up /
  // down), loaded a stage ahead of their use.
  float nsa[2] = {0.f, 0.f}, nsw[2] = {0.f, 0.f};
  auto load_scales = [&](int64_t ks) {
#pragma unroll
    for (int i = 0; i < 2; ++i) nsa[i] = __ldg(cur.sa[i] + ks), nsw[i] = __ldg(cur.sw[i] + ks);
  };
  // F8: partial sums of a quarter of 64 staged rows (two buffers: one is scaled while the tensor
  // cores fill the other).
  float part[2][F8 ? 32 : 1];
  while (true) {
#pragma unroll
    for (int i = 0; i < kNAcc; ++i) acc[i] = 0.f;
    fence_acc(acc);
    if constexpr (F8) load_scales(kb0);
    int stage = 0;
    for (int64_t ks = kb0; ks < kb1; ++ks) {
      if constexpr (kQuant) {
        // k-block ks + 1 into its stage (last read by the wgmma of ks - 3: done everywhere), then
        // the loads of ks + 2.
        if (ks + 1 < kb1) store_w(R, stage + 1 == kSt ? 0 : stage + 1);
        if (ks + 2 < kb1) load_w(cur, ks + 2, R);
      }
      // F8: this stage's scales, and the next stage's requested (one stage ahead).
      const float sca[2] = {nsa[0], nsa[1]}, scw[2] = {nsw[0], nsw[1]};
      if (F8 && ks + 1 < kb1) load_scales(ks + 1);
      cp_async_wait<kAh - 1>();
      fence_proxy_async();
      __syncthreads();      // stage ks visible to all; the wgmma of ks - 2 are done in every warp
      if constexpr (TMA) {  // the stage's weight tiles
        grouped::mbar_wait(bars + 8 * stage, (phase >> stage) & 1u);
        phase ^= 1u << stage;
      }
      {
        const int64_t nk = ks + kAh;
        int ns = stage + kAh;
        if (ns >= kSt) ns -= kSt;
        if (nk < kb1) load_a(cur, nk, ns);
        cp_async_commit();
      }
      const uint32_t sa = smem_s + stage * kStageBytes<BN> + wg * 64 * kRowBytes;
      const uint32_t sb = smem_s + stage * kStageBytes<BN> + kAStage;
      const uint64_t da = smem_desc(sa);
      if constexpr (F8) {
        // TMA weight tiles: 64-byte swizzle (f8_kblock adds each tile's offset).
        f8_kblock<BN, GU, TMA>(acc, part, da, TMA ? smem_desc_sw64(sb) : smem_desc(sb), sca, scw);
      } else if constexpr (TMA) {  // BF16 (GroupedLaunch::bf16_tma)
        wgmma_fence();
        bf16_tma_kblock<BN>(acc, da, smem_desc_sw64(sb));
        wgmma_wait<1>();
      } else {
        const uint64_t db = smem_desc(sb);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBK / 16; ++kk) wgmma_k16<F, BN>(acc, da + 2 * kk, db + 2 * kk);
        wgmma_commit();
        wgmma_wait<1>();
      }
      stage = stage + 1 == kSt ? 0 : stage + 1;
    }
    wgmma_wait<0>();
    fence_acc(acc);
    __syncthreads();  // every warpgroup is done reading the ring
    const ItemSrc<F, BN, GU, F8> done = cur;
    [[maybe_unused]] const int64_t item = unit / S;
    const int64_t next = unit + gridDim.x;
    if (next < n_units) {
      cur = item_src<F, BN, GU, F8>(p, next / S, n_blocks, tid);
      range(next, kb0, kb1);
      prologue(cur, kb0, kb1);  // overlaps the epilogue below
    }
    bool last = true;
    if constexpr (SPLIT) {
      __shared__ int split_last;  // whether this CTA adds up the item's partial sums
      if (S > 1) {
        // Every range's CTA stores its sums (thread-major, coalesced); the last to arrive adds
        // the S of them in range order (the same bits whichever CTA that is).
        float* mine = p.split_partials + unit * kNAcc * kThreads;
#pragma unroll
        for (int i = 0; i < kNAcc; ++i) __stcg(mine + i * kThreads + tid, acc[i]);
        __threadfence();
        __syncthreads();
        if (tid == 0) split_last = atomicAdd(p.split_counters + item, 1) == S - 1;
        __syncthreads();
        last = split_last;
        if (last) {
          __threadfence();
          const float* all = p.split_partials + item * S * kNAcc * kThreads;
#pragma unroll
          for (int i = 0; i < kNAcc; ++i) acc[i] = __ldcg(all + i * kThreads + tid);
          for (int r = 1; r < S; ++r) {
            const float* pr = all + static_cast<int64_t>(r) * kNAcc * kThreads;
#pragma unroll
            for (int i = 0; i < kNAcc; ++i) acc[i] += __ldcg(pr + i * kThreads + tid);
          }
        }
      }
    }
    if (last)
      epilogue<F, BN, GU, TMA>(p, done.e, done.pos0, done.cnt, done.nblk, acc,
                               wg * 64 + wq * 16 + g, c);
    if (next >= n_units) break;
    unit = next;
  }
  grouped::pdl_end(defer);
}

}  // namespace moe::cuda::wgmma_gemm
