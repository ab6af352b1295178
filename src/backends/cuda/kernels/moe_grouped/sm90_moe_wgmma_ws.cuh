// Warp-specialized form of the FP8 warpgroup-MMA GEMM (sm90_moe_wgmma_gemm.cuh, F8 with weight
// tiles by TMA, 256 weight rows per CTA): the same wgmma on the same staged values in the same
// order per accumulator (f8_kblock, epilogue), so bit-identical to it; what changes is who loads
// and how the stages are handed over.
//
// A CTA is three warpgroups (384 threads). Warpgroup 0 produces: thread 0 issues each stage's
// weight tiles by TMA (tma_weights) onto the stage's `full` mbarrier, and the 128 threads gather
// the stage's 128 activation rows (128 k of E4M3 each, the 128-byte-swizzle rows of the F8
// kernel) by cp.async, 8 16-byte chunks each, each thread's arrival on `full` triggered when its
// copies have landed (cp.async.mbarrier.arrive.noinc), so a producer never waits for its own
// copies. cp.async writes through the generic proxy and the wgmma reads through the async proxy:
// a consumer fences (fence.proxy.async) after its wait on `full`. Warpgroups 1 and 2 consume,
// each its 64 tokens, one k-block at a time (f8_kblock: quarters of 64 weight rows, two in flight,
// each promoted while the next runs), and release the stage, one arrival per thread on its `empty`
// mbarrier, once its wgmma completed; the producer waits on that before refilling it. No CTA-wide
// barrier after the start: the producer runs up to a ring ahead (4 stages of 48 KB) across item
// boundaries, so the next item's first stages land during the epilogue, and no thread that issues
// wgmma issues a copy.
// Registers: the producer gives registers back (setmaxnreg 40), the consumers take them
// (setmaxnreg 232: 128 f32 accumulators + 64 of partial sums).
//
// Pairs (moe_wgmma_f8pair_kernel, GroupedLaunch::wgmma_pairs): 2-CTA clusters over the pair units
// of moe_group (MoeGroupParams::pair_units). Cluster item i is unit i / (n_blocks / 2), n-block
// pair q = i % (n_blocks / 2). A kPairEven / kPairOdd unit (a chunk of 129..256 tokens of one
// expert): CTA r computes tokens 128 r.. of it for n-block 2 q (even) or 2 q + 1 (odd), and each
// CTA's producer loads one of the two 128-row weight boxes with TMA multicast into both CTAs (the
// same offset in each, each CTA's `full` barrier expecting the whole tile); a kLone unit (128
// tokens or fewer): CTA r computes all of them for n-block 2 q + r with its own weights. A stage is
// refilled only once the consumers of both CTAs released it (their 512 threads arrive on the
// `empty` barriers of both), and the CTAs end together (cluster barrier) so that no arrival or
// multicast targets a CTA that has exited. The token tiles are those of the 128-token list, so the
// results are the same bits.
//
// NVFP4 computed in FP8 (F4, moe_wgmma_f4ws_kernel, GroupedLaunch::nvfp4_f8): the consumers are
// those of the FP8 kernel on the same stage layout (the TMA tiles' 64-byte swizzle); the producer
// warpgroup makes the weight tiles. Its threads copy each stage's NVFP4 codes (16 bytes per row
// and 32 k) and their scale words by cp.async into a raw ring of their own (kF4RawStages deep,
// two stages ahead, each thread reading back only its own copies after cp.async.wait_group),
// dequantize them to f16 (value * scale * 2^-7, exact; grouped::dequant) and then to E4M3 of
// value * scale * 2^-3 (x 16 exact in f16, one rounding: cvt.rn.satfinite), and store them into
// the stage; each thread arrives on `full` once more after its stores. The weight block scale the
// consumers apply is then 8 * the global scale (per matrix), the activations are E4M3 as for FP8
// experts. Lossy: each weight rounded to 4 significant bits (e2m1 times e4m3 has up to 6), like
// the FP8 activations. 3 stages of 48 KB + 3 raw stages of 20 KB. The producer's pieces:
// sm90_moe_wgmma_f4.cuh.
#pragma once

#include <type_traits>

#include "backends/cuda/kernels/moe_grouped/sm90_moe_wgmma_f4.cuh"
#include "backends/cuda/kernels/moe_grouped/sm90_moe_wgmma_gemm.cuh"
#include "backends/cuda/kernels/moe_grouped/stream_k.h"

namespace moe::cuda::wgmma_gemm {

// The FP8 warp-specialized kernels' stage headers (after the mbarriers, one per ring stage; F4
// has none): what a consumer warpgroup reads besides the staged operands. The item {e, pos0, cnt,
// nblk} (16 bytes), the k-block's weight block scales of the two 128-row halves (gate / up, or
// down's rows; 8 bytes + 8 of padding), the activation scales of the 128 staged tokens at
// kWsHdrAct, and at kWsHdrEpi (down, an item's last stage) each token's slot and routing weight.
constexpr int kWsHdrAct = 32;
constexpr int kWsHdrEpi = kWsHdrAct + 128 * 4;
constexpr int kWsHdrBytes = kWsHdrEpi + 128 * 8;
static_assert(kWsHdrBytes % 16 == 0);
constexpr int kWsThreads = 384;  // producer warpgroup + two consumer warpgroups
constexpr int kWsStages = 4;     // ring of [128 tokens + 256 rows] x 128 k (48 KB each)
// Ring, then a `full` and an `empty` mbarrier per stage, the stage headers, + the alignment of
// the swizzle atoms.
constexpr int kSmemBytesWs =
    kWsStages * kStageBytes<256> + 16 * kWsStages + kWsStages * kWsHdrBytes + 1024;
static_assert(kSmemBytesWs <= 232448);

// Shared-memory words (volatile: ordered with the mbarrier waits and arrivals around them).
__device__ __forceinline__ int lds_s32(uint32_t a) {
  int v = 0;
#ifdef MOE_WGMMA_ENABLED
  asm volatile("ld.shared.s32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
#endif
  return v;
}
__device__ __forceinline__ float lds_f32(uint32_t a) { return __int_as_float(lds_s32(a)); }
__device__ __forceinline__ int4 lds_v4(uint32_t a) {
  int4 v = make_int4(0, 0, 0, 0);
#ifdef MOE_WGMMA_ENABLED
  asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(a)
               : "memory");
#endif
  return v;
}
__device__ __forceinline__ void sts_v4(uint32_t a, int x, int y, int z, int w) {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("st.shared.v4.s32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(x), "r"(y), "r"(z), "r"(w)
               : "memory");
#endif
}

// Registers per thread of a warpgroup from here on (setmaxnreg; a multiple of 8 in 24..256).
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N) : "memory");
#endif
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N) : "memory");
#endif
}

// Barrier 1 of the two consumer warpgroups (256 threads; the producer runs on).
__device__ __forceinline__ void consumers_sync() {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("bar.sync 1, 256;" ::: "memory");
#endif
}

// An arrival on the mbarrier at `bar` once every cp.async this thread issued before has landed
// (no pending-count increment: the barrier's count includes it).
__device__ __forceinline__ void cp_async_arrive_noinc(uint32_t bar) {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
#endif
}
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r = 0;
#ifdef MOE_WGMMA_ENABLED
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
  return r;
}
__device__ __forceinline__ void cluster_sync() {
#ifdef MOE_WGMMA_ENABLED
  asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
#endif
}
// An arrival on the mbarrier at shared offset `bar` of cluster CTA `rank`.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
#ifdef MOE_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}" ::"r"(bar),
      "r"(rank)
      : "memory");
#endif
}
// TMA tile of a 4-D tensor map multicast to the cluster CTAs in `mask`: lands at shared offset dst
// of each, counted on the mbarrier at offset bar of each.
__device__ __forceinline__ void tma_load_4d_multicast(uint32_t dst, const void* tmap, int c0,
                                                      int c1, int c2, int c3, uint32_t bar,
                                                      uint16_t mask) {
#ifdef MOE_WGMMA_ENABLED
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::"
      "cluster [%0], [%1, {%2, %3, %4, %5}], [%6], %7;" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "h"(mask)
      : "memory");
#endif
}

// What a CTA computes for work item `item`: expert, token tile (first position, count), n-block,
// and whether its weight tile is shared with the cluster's other CTA (mc).
struct WsItem {
  int e, pos0, cnt;
  int nblk;
  bool mc;
};
template <bool PAIRS>
__device__ __forceinline__ WsItem ws_item(const MoeGemmParams& p, int item, int n_blocks,
                                          int rank) {
  WsItem w;
  if constexpr (PAIRS) {
    const int half = n_blocks / 2;
    const int4 td = reinterpret_cast<const int4*>(p.tiles)[item / half];
    const int q = item % half;
    w.e = td.x;
    w.mc = td.w != kLone;
    if (w.mc) {
      w.pos0 = td.y + 128 * rank, w.cnt = min(128, td.z - 128 * rank);
      w.nblk = 2 * q + (td.w == kPairOdd ? 1 : 0);
    } else {
      w.pos0 = td.y, w.cnt = td.z, w.nblk = 2 * q + rank;
    }
  } else {
    const int4 td = reinterpret_cast<const int4*>(p.tiles)[item / n_blocks];
    w.e = td.x, w.pos0 = td.y, w.cnt = td.z, w.nblk = item % n_blocks, w.mc = false;
  }
  return w;
}

// A producer thread's part of the stage headers: token tok = r0 + 16 ch of the tile, its
// activation row (row[ch], selected without dynamic indexing; tokens past cnt have the last
// token's) and, down, that position's slot (loaded at the item's start, used at its last stage).
struct HdrTok {
  int32_t tok, row, slot;
};
template <bool GU>
__device__ __forceinline__ HdrTok hdr_token(const MoeGemmParams& p, const int32_t (&row)[kBM / 16],
                                            int r0, int ch) {
  HdrTok h{r0 + 16 * ch, row[0], 0};
#pragma unroll
  for (int i = 1; i < kBM / 16; ++i)
    if (i == ch) h.row = row[i];
  if constexpr (!GU) h.slot = __ldg(p.sorted_slot + h.row);  // down: row = position
  return h;
}
// The thread's header copies of k-block ks into the header at hd: its token's activation scale
// and (down, the item's last stage) the token's slot and routing weight.
// (BF: no activation scales.)
template <bool GU, bool BF = false>
__device__ __forceinline__ void hdr_copy(const MoeGemmParams& p, const HdrTok& h, uint32_t hd,
                                         int ks, bool last) {
  if constexpr (!BF)
    grouped::cp_async4(hd + kWsHdrAct + 4 * h.tok, p.act_scale + h.row * (p.Kd / 128) + ks);
  if (!GU && last) {
    grouped::cp_async4(hd + kWsHdrEpi + 8 * h.tok, p.sorted_slot + h.row);
    grouped::cp_async4(hd + kWsHdrEpi + 8 * h.tok + 4, p.slot_w + h.slot);
  }
}

// F4: cursor q at work unit `unit`, k-step 0 (sm90_moe_wgmma_f4.cuh).
template <bool GU>
__device__ __forceinline__ void f4_seek(const MoeGemmParams& p, int unit, int n_blocks,
                                        const F4Thread& t, F4Cursor& q) {
  q.unit = unit, q.ks = 0;
  const WsItem w = ws_item<false>(p, unit, n_blocks, 0);
  const int64_t row_bytes = p.Kd / 2;
#pragma unroll
  for (int m = 0; m < (GU ? 2 : 1); ++m) {
    const int64_t row =
        GU ? static_cast<int64_t>(w.nblk) * 128 + t.R0 : static_cast<int64_t>(w.nblk) * 256 + t.R0;
    q.wd[m] = static_cast<const uint8_t*>(p.w[m][w.e]) +
              grouped::packed_data_offset(p.packed, row_bytes, row, 16 * t.c);
    q.sd[m] = static_cast<const uint8_t*>(p.s[m][w.e]) +
              (grouped::nvfp4_scale_offset(p.packed, p.Kd, row, 2 * t.c) & ~int64_t{3});
  }
}

// P2 (GroupedLaunch::f4p2_max_mean, f4p2_big; F4 only): two producer warpgroups dequantize (4 units
// of each stage per thread instead of 8) for one consumer warpgroup, which computes tiles of at
// most 64 tokens (the grouping's 64-token tiles) against all 256 staged weight rows.
// BF (GroupedLaunch::bf16_ws): BF16 experts and activations. A stage is 64 k of both (the
// bytes of FP8's 128: 128-byte activation rows, the same weight boxes by TMA), computed by
// bf16_tma_kblock (no promotion, no scales: the headers carry the item and down's epilogue rows);
// h leaves as BF16.
template <bool GU, bool PAIRS, bool NARROW, bool SPLIT, bool F4 = false, bool P2 = false,
          bool BF = false>
__device__ __forceinline__ void wgmma_f8ws_body(const MoeGemmParams& p) {
  static_assert(!BF || (!F4 && !NARROW && !SPLIT), "BF16: the plain and pair kernels");
  static_assert(!SPLIT || !PAIRS, "split-K is for the single-CTA kernel");
  static_assert(!F4 || (!PAIRS && !SPLIT), "F4: the single-CTA kernel without split-K");
  static_assert(!P2 || (F4 && !NARROW), "P2: F4's full instance on 64-token tiles");
  constexpr int kProdWarps = P2 ? 8 : 4, kConsWarps = P2 ? 4 : 8;
  constexpr int kSt = P2 ? kF4P2Stages : F4 ? kF4Stages : kWsStages;
  constexpr int kRaw = P2 ? kF4P2RawStages : kF4RawStages;
  // GroupedLaunch::pdl / hybrid_pdl (no-op otherwise), sibling_defer (MoeGemmParams::defer_wait)
  grouped::pdl_start(p.defer_wait);
  constexpr int BN = 256;
  // P2's stages hold its 64-token tiles' activation rows only (so 4 stages fit; its activation
  // boxes are 64 rows, encode_act_tmap).
  constexpr int kAStage = (P2 ? kGroupedF4p2Tile : kBM) * kRowBytes;
  constexpr int kStB = kAStage + BN * kRowBytes;  // a stage's bytes
  extern __shared__ uint8_t smem_raw[];
  const uint32_t smem_s =
      (static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) + 1023u) & ~1023u;
  // F4's raw stages after the ring, then the barriers.
  const uint32_t raw = smem_s + kSt * kStB;
  const uint32_t lut = raw + (F4 ? kRaw * kF4RawBytes : 0);  // F4's magnitude tables
  const uint32_t full = lut + (F4 ? kF4LutBytes : 0), empty = full + 8 * kSt;
  const uint32_t hdr = empty + 8 * kSt;  // stage st's header at hdr + st * kWsHdrBytes
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // Activations by TMA (MoeGemmParams::act_tma): down's, and gate_up's with GroupedLaunch::x_pos
  // (F4 too: one box instead of 8 copies per producer thread and stage; its weights stay generic
  // stores, so its consumers keep the proxy fence). `!!` on purpose: with it the FP8 instances keep
  // their SASS of before F4 took the boxes (a plain `p.act_tma` changes the narrow instances'
  // predicate code and their spills by a few bytes).
  const bool act_tma = !!p.act_tma;
  // MoeGemmParams::act_box64 (GroupedLaunch::narrow_act_box): the FP8 kernels' boxes of 64 rows.
  const bool box64 = !F4 && !BF && !SPLIT && !!p.act_box64;  // (split-K: the hybrid, no boxes)
  // Counts and indices in 32 bits (items, k-blocks < 2^31): fewer registers live into the roles.
  const int n_blocks = static_cast<int>(GU ? p.N / (BN / 2) : p.N / BN);
  // PAIRS: cluster items over the units, clusters of 2 consecutive CTAs.
  const int rank = PAIRS ? static_cast<int>(cluster_ctarank()) : 0;
  const int n_items = *p.num_tiles * (PAIRS ? n_blocks / 2 : n_blocks);
  const int first = PAIRS ? blockIdx.x / 2 : blockIdx.x, stride = PAIRS ? gridDim.x / 2 : gridDim.x;
  const int ksteps = static_cast<int>(p.Kd * (BF ? 2 : 1) / 128);  // stages of 128 bytes of k
  // Split-K (MoeGemmParams::split_partials): work unit u = item u / S, k-range u % S.
  const int S = SPLIT ? grouped::ws_split_count(n_items, gridDim.x, ksteps, p.split_bytes,
                                                p.split_counters_cap)
                      : 1;
  const int n_units = n_items * S;
  if (tid == 0) {
    for (int st = 0; st < kSt; ++st) {
      // The producer threads + the TMA arrival (F4: the producer threads twice, copies and stores;
      // with the activations by TMA once, after their stores: the boxes count as bytes).
      // (P2: 256 producer threads' stores, + the first warpgroup's gather arrivals.)
      grouped::mbar_init(full + 8 * st, P2   ? (act_tma ? 256 : 384)
                                        : F4 ? (act_tma ? 128 : 256)
                                             : 128 + 1);
      grouped::mbar_init(empty + 8 * st, 32 * (PAIRS ? 16 : kConsWarps));  // consumer threads
    }
    grouped::mbar_init_fence();
  }
  if constexpr (PAIRS)
    cluster_sync();  // the partner's barriers are initialised before anything targets them
  else
    __syncthreads();

  // F4's producer dequantizes: more registers for it, fewer for the consumers (at 216 the plain
  // instances' consumers do not spill; 56 / 224 spilled the producer's loop state, 60 bytes; 72
  // for its loads in batches of 4 units, which spill 4 bytes around the `empty` wait in gate_up).
  // P2: 256 x 96 + 128 x 232 (72 / 80 for its producers spilled 32 / 12 bytes in gate_up; 96 none).
  constexpr int kProdRegs = P2 ? 96 : F4 ? 72 : 40, kConsRegs = P2 ? 232 : F4 ? 216 : 232;
  static_assert(32 * kProdWarps * kProdRegs + 32 * kConsWarps * kConsRegs <= 168 * kWsThreads);
  if (warp < kProdWarps && F4) {
    // F4 producer: jobs in order (unit first + n stride, k-step ks); the raw copies run
    // kF4RawStages - 1 jobs ahead (their own cursor), each job's stage is dequantized once its
    // copies landed.
    setmaxnreg_dec<kProdRegs>();
    const uint8_t* act = static_cast<const uint8_t*>(p.act);
    // P2: warpgroup pw of the two takes units 4 pw .. 4 pw + 3 of each stage; the first gathers.
    const int ptid = P2 ? tid & 127 : tid, pw = P2 ? tid >> 7 : 0;
    constexpr int kUnits = P2 ? 4 : 8;
    const int ch = ptid & 7, r0 = ptid >> 3;
    const F4Thread t = f4_thread(ptid, p.packed);
    if (pw == 0) f4_build_lut(lut, ptid);
#ifdef MOE_WGMMA_ENABLED
    // the producer warpgroups' tables are in
    asm volatile("bar.sync 2, %0;" ::"n"(32 * kProdWarps) : "memory");
#endif
    const int64_t w_kstep = grouped::packed_data_kstep(p.packed),
                  s_kstep = grouped::nvfp4_scale_kstep(p.packed);
    F4Cursor q;
    q.unit = n_units;
    if (first < n_units) f4_seek<GU>(p, first, n_blocks, t, q);
    int jr = 0;  // jobs copied
    auto issue_raw = [&]() {
      if (q.unit < n_units) {
        f4_copy<GU, kUnits>(p, q, ptid, raw + jr % kRaw * kF4RawBytes, 4 * pw);
        if (++q.ks == ksteps) {
          if (q.unit + stride < n_units)
            f4_seek<GU>(p, q.unit + stride, n_blocks, t, q);
          else
            q.unit = n_units;
        } else {
#pragma unroll
          for (int m = 0; m < (GU ? 2 : 1); ++m) q.wd[m] += w_kstep, q.sd[m] += s_kstep;
        }
      }
      ++jr;
      grouped::cp_async_commit();
    };
#pragma unroll
    for (int j = 0; j < kRaw - 1; ++j) issue_raw();
    int stage = 0, rs = 0;  // ring stage, raw stage of the job
    uint32_t ephase = 1;
    for (int unit = first; unit < n_units; unit += stride) {
      const WsItem w = ws_item<false>(p, unit, n_blocks, 0);
      const bool narrow = (NARROW || P2) && w.cnt <= 64;
      const bool gather = !act_tma && pw == 0;
      int32_t row[kBM / 16];
#pragma unroll
      for (int i = 0; i < kBM / 16; ++i)  // (by TMA: not needed, no sorted_slot loads)
        row[i] =
            !gather ? 0 : static_cast<int32_t>(act_row<GU>(p, w.pos0, min(r0 + 16 * i, w.cnt - 1)));
      for (int ks = 0; ks < ksteps; ++ks) {
        grouped::mbar_wait(empty + 8 * stage, ephase);
        const uint32_t base = smem_s + stage * kStB;
        if (act_tma) {  // the tile's activation rows (P2: 64) from position pos0, by TMA (thread 0)
          if (tid == 0) {
            grouped::mbar_expect_tx(full + 8 * stage, kAStage);
            grouped::tma_load_2d(base, p.act_tmap, ks * 128, w.pos0, full + 8 * stage);
          }
        } else if (gather) {
#pragma unroll
          for (int i = 0; i < kBM / 16; ++i)
            if (i < kBM / 32 || !narrow)  // (not zero-filled as below: it spills this producer)
              cp_async16(base + swz(r0 + 16 * i, ch), act + row[i] * p.Kd + ks * 128 + ch * 16);
        }
        // The gather's arrival once its copies landed (it also waits for the raw copies issued
        // before, a job ahead; by TMA there is none, and no such wait).
        if (gather) cp_async_arrive_noinc(full + 8 * stage);
        issue_raw();
        cp_async_wait<kRaw - 1>();  // this job's raw stage has landed
        f4_dequant<kUnits>(t, ptid, raw + rs * kF4RawBytes, base + kAStage, lut, 4 * pw);
        // (No proxy fence here: it waits for this thread's copies in flight, a stage's worth of
        // latency; the consumers fence after their wait on `full`, as for the copies.)
        grouped::mbar_arrive(full + 8 * stage);
        if (++stage == kSt) stage = 0, ephase ^= 1u;
        if (++rs == kRaw) rs = 0;
      }
    }
    cp_async_wait<0>();
  } else if (warp < kProdWarps) {
    // Producer. Thread t copies 16-byte chunk t % 8 of activation rows t / 8 + 16 i.
    // Rows past the tile's count are zero-filled (cp.async with no source bytes), not copies of
    // its last token: they are computed and dropped, and zeros cost the tensor cores less power
    // and the L2 no reads (prefill runs at the 700 W limit: H100 sustained glm5 FP8 T 4096 on the
    // gathers 2.5% faster, T 8192 level to 2%; docs/perf.md session 44). The TMA boxes (down's h,
    // gate_up's x by position) still carry the next positions' rows there.
    setmaxnreg_dec<kProdRegs>();
    const uint8_t* act = static_cast<const uint8_t*>(p.act);
    const int ch = tid & 7, r0 = tid >> 3;
    int stage = 0;
    uint32_t ephase = 1;  // a fresh barrier's preceding phase counts as complete
    for (int unit = first; unit < n_units; unit += stride) {
      const WsItem w = ws_item<PAIRS>(p, unit / S, n_blocks, rank);
      int kb0, kb1;
      grouped::ws_split_range(unit % S, S, ksteps, &kb0, &kb1);
      const bool narrow = NARROW && w.cnt <= 64;
      int32_t row[kBM / 16];
#pragma unroll
      for (int i = 0; i < kBM / 16; ++i)
        row[i] = static_cast<int32_t>(act_row<GU>(p, w.pos0, min(r0 + 16 * i, w.cnt - 1)));
      const HdrTok ht = hdr_token<GU>(p, row, r0, ch);
      const int nv = w.cnt - r0;  // row i is a token of the tile if 16 i < nv
      for (int ks = kb0; ks < kb1; ++ks) {
        grouped::mbar_wait(empty + 8 * stage, ephase);
        const uint32_t base = smem_s + stage * kStB;
        // The stage's header: the item by thread 0 (a plain store, released by its arrival
        // below), the block scales by cp.async (the arrivals after the copies).
        const uint32_t hd = hdr + stage * kWsHdrBytes;
        if (tid == 0) {
          if (act_tma) {  // the activation rows from position pos0, by TMA: one box of 128, or
            // (box64) of 64, and a second for rows 64.. unless the tile is narrow
            grouped::mbar_expect_tx(full + 8 * stage, box64 && narrow ? kAStage / 2 : kAStage);
            grouped::tma_load_2d(base, p.act_tmap, ks * 128, w.pos0, full + 8 * stage);
            if (box64 && !narrow)
              grouped::tma_load_2d(base + kAStage / 2, p.act_tmap, ks * 128, w.pos0 + 64,
                                   full + 8 * stage);
          }
          sts_v4(hd, w.e, w.pos0, w.cnt, w.nblk);
          if constexpr (!BF) {
#pragma unroll
            for (int m = 0; m < 2; ++m) {
              const int64_t row0 = GU ? w.nblk * 128 : w.nblk * BN + 128 * m;
              grouped::cp_async4(hd + 16 + 4 * m, static_cast<const float*>(p.s[GU ? m : 0][w.e]) +
                                                      (row0 / 128) * ksteps + ks);
            }
          }
          if (PAIRS && w.mc) {  // box `rank` of the tile into both CTAs
            grouped::mbar_arrive_expect_tx(full + 8 * stage, BN * 128);
            const int m = GU ? rank : 0;
            const int64_t row0 = GU ? w.nblk * 128 : w.nblk * BN + 128 * rank;
            tma_load_4d_multicast(base + kAStage + rank * 16384,
                                  static_cast<const uint8_t*>(p.tmap) + (m * p.tmap_e + w.e) * 128,
                                  0, 0, static_cast<int>(row0 / 16), static_cast<int>(2 * ks),
                                  full + 8 * stage, 3);
          } else {
            tma_weights<BN, GU>(p, w.e, w.nblk, ks, base + kAStage, full + 8 * stage);
          }
        }
        hdr_copy<GU, BF>(p, ht, hd, ks, ks + 1 == kb1);
#pragma unroll
        for (int i = 0; i < kBM / 16; ++i)  // (narrow tiles, 64 tokens or fewer: rows 0..63)
          if ((i < kBM / 32 || !narrow) && !act_tma)
            grouped::cp_async16_n(base + swz(r0 + 16 * i, ch),
                                  act + row[i] * (BF ? 2 * p.Kd : p.Kd) + ks * 128 + ch * 16,
                                  16 * i < nv ? 16 : 0);
        // The stage's full barrier counts this thread's arrival once its copies landed.
        cp_async_arrive_noinc(full + 8 * stage);
        if (++stage == kSt) stage = 0, ephase ^= 1u;
      }
    }
    cp_async_wait<0>();  // no thread leaves with copies (and their arrivals) outstanding
  } else {
    // Consumers: warpgroup wg (64 tokens of the tile), warp wq in it, one k-block at a time
    // (f8_kblock: quarters of 64 weight rows, two in flight, each promoted while the next runs).
    // Measured and not kept (docs/perf.md, session 23): the next k-block's first quarter issued
    // before this one's last promotion (no faster; with a wgmma in flight across a loop's back
    // edge ptxas serializes every wgmma, C7514, so it needs unrolled groups, which spill), and a
    // warpgroup whose 64 rows are all padding skipping its wgmma (spills; slower).
    setmaxnreg_inc<kConsRegs>();
    const int wg = (warp >> 2) - kProdWarps / 4, wq = warp & 3, g = lane >> 2, c = lane & 3;
    // FP8 (TMA weights): everything a consumer reads comes with the stage (its header,
    // kWsHdrBytes): the item, the block scales, the token scales and (down, last stage) the
    // epilogue's slots and weights; nothing at an item's start or end waits on global memory.
    // F4 (its producer warpgroup is what limits it, and the header copies spill its registers):
    // the consumers find the item and load the token scales themselves, a k-block ahead.
    const int64_t kb = p.Kd / 128;
    int sra[2];            // F4: the activation scale rows of the thread's tokens (x kb)
    float nsa[2], nsw[2];  // F4: the next k-block's scales
    auto load_scales_f4 = [&](int e, int ks) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        nsa[i] = __ldg(p.act_scale + sra[i] + ks);
        nsw[i] = p.gs[GU ? i : 0][e] * kF4Unscale;  // gate, up; down's both halves
      }
    };
    // Waits for stage st's data (phase ph) and returns its descriptors (activation rows from t0).
    auto acquire = [&](int st, uint32_t ph, int t0, uint64_t& da, uint64_t& db) {
      grouped::mbar_wait(full + 8 * st, ph);
      // the producers' cp.async (generic proxy) before the wgmma's reads (down by TMA: none)
      if (F4 || !act_tma) fence_proxy_async();
      const uint32_t base = smem_s + st * kStB;
      da = smem_desc(base + t0 * kRowBytes);
      db = smem_desc_sw64(base + kAStage);
    };
    // Releases stage st (every wgmma reading it complete) to the producers (of both CTAs). Every
    // consumer thread arrives, so that each one's own reads of the stage (its header) are ordered
    // before its own arrival: compute-sanitizer's racecheck follows that, and not one arrival per
    // warp after __syncwarp, which it reported as WAR hazards on the headers wherever the ring
    // wraps (the same order; level in speed: docs/perf.md, session 61).
    auto release = [&](int st) {
      if constexpr (PAIRS) {
        mbar_arrive_cluster(empty + 8 * st, 0);
        mbar_arrive_cluster(empty + 8 * st, 1);
      } else {
        grouped::mbar_arrive(empty + 8 * st);
      }
    };
    float acc[BN / 2];
    float part[2][32];
    int stage = 0;
    uint32_t fphase = 0;
    __shared__ int split_last;  // whether this CTA adds up the item's partial sums
    // gate_up with h quantized in the epilogue (p.hq), narrow tiles: the warpgroups' amax per
    // token (epilogue_hq), two buffers used in turn (a warpgroup can reach the next narrow
    // epilogue's writes only after the other one passed this one's barrier).
    __shared__ float hq_x[2][2 * 64];
    int hq_turn = 0;
    EpiRows er;  // down: the epilogue's slots and routing weights (from the last stage's header)
    for (int unit = first; unit < n_units; unit += stride) {
      const int item = unit / S;
      int kb0, kb1;
      grouped::ws_split_range(unit % S, S, ksteps, &kb0, &kb1);
      WsItem w;
      if constexpr (F4) {
        w = ws_item<false>(p, item, n_blocks, 0);
      } else {  // the item, from the header of its first stage
        grouped::mbar_wait(full + 8 * stage, fphase);
        const int4 hv = lds_v4(hdr + stage * kWsHdrBytes);
        w.e = hv.x, w.pos0 = hv.y, w.cnt = hv.z, w.nblk = hv.w, w.mc = false;
      }
      // Narrow tiles (64 tokens or fewer, NARROW): both warpgroups on tokens 0..63, warpgroup w
      // on quarters w and w + 2 of the staged rows, so neither computes padding rows. (P2: the
      // one consumer warpgroup, wg 0, takes tokens 0..63 and every quarter: the full k-loop.)
      const bool narrow = NARROW && w.cnt <= 64;
      const int t0 = narrow ? 0 : wg * 64;
      const int ta = t0 + wq * 16 + g;  // the thread's tokens ta, ta + 8
      if constexpr (F4) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
          sra[hh] = static_cast<int>(act_row<GU>(p, w.pos0, min(ta + 8 * hh, w.cnt - 1)) * kb);
        load_scales_f4(w.e, kb0);
      }
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      fence_acc(acc);
      // The k-loop per mode (no branch inside it): the full tile, or narrow (quarters wg, wg + 2).
      auto kloop = [&](auto narrow_c) {
        constexpr bool kNarrow = decltype(narrow_c)::value;
        for (int ks = kb0; ks < kb1; ++ks) {
          [[maybe_unused]] float sca[2], scw[2];  // (BF: none)
          if constexpr (F4) {
            sca[0] = nsa[0], sca[1] = nsa[1], scw[0] = nsw[0], scw[1] = nsw[1];
            if (ks + 1 < kb1) load_scales_f4(w.e, ks + 1);
          }
          uint64_t da, db;
          acquire(stage, fphase, kNarrow ? 0 : wg * 64, da, db);
          const uint32_t hd = hdr + stage * kWsHdrBytes;
          if constexpr (!F4 && !BF) {
            sca[0] = lds_f32(hd + kWsHdrAct + 4 * ta);
            sca[1] = lds_f32(hd + kWsHdrAct + 4 * (ta + 8));
            scw[0] = lds_f32(hd + 16), scw[1] = lds_f32(hd + 20);
          }
          if (!F4 && !GU && ks + 1 == kb1) {
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
              er.slot[hh] = lds_s32(hd + kWsHdrEpi + 8 * (ta + 8 * hh));
              er.w[hh] = lds_f32(hd + kWsHdrEpi + 8 * (ta + 8 * hh) + 4);
            }
          }
          if constexpr (BF) {  // every wgmma complete before the release, as f8_kblock
            wgmma_fence();
            bf16_tma_kblock<BN>(acc, da, db);
            if (p.bf16_defer) {  // GroupedLaunch::bf16_defer: the previous k-block's stage
              wgmma_wait<1>();
              if (ks > kb0) release(stage == 0 ? kSt - 1 : stage - 1);
            } else {
              wgmma_wait<0>();
              release(stage);
            }
          } else if constexpr (kNarrow) {
            f8_kblock_narrow<BN, GU>(acc, part, da, db, wg, sca, scw);
          } else {
            f8_kblock<BN, GU, true>(acc, part, da, db, sca, scw);
          }
          if (!BF) release(stage);
          if (++stage == kSt) stage = 0, fphase ^= 1u;
        }
        if constexpr (BF) {  // (deferred: the last k-block's stage)
          wgmma_wait<0>();
          if (p.bf16_defer && kb1 > kb0) release(stage == 0 ? kSt - 1 : stage - 1);
        }
      };
      if (narrow)
        kloop(std::true_type{});
      else
        kloop(std::false_type{});
      fence_acc(acc);
      if (SPLIT && S > 1) {
        // Every range's CTA stores its sums (thread-major, coalesced); the last to arrive adds
        // the S of them in range order (the same bits whichever CTA that is) and runs the
        // epilogue.
        const int ct = tid - 128;
        float* mine = p.split_partials + static_cast<int64_t>(unit) * (BN / 2) * 256;
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) __stcg(mine + i * 256 + ct, acc[i]);
        __threadfence();
        consumers_sync();
        if (ct == 0) split_last = atomicAdd(p.split_counters + item, 1) == S - 1;
        consumers_sync();
        const bool last = split_last;
        consumers_sync();  // split_last read by every consumer before the next unit writes it
        if (!last) continue;
        __threadfence();
        const float* all = p.split_partials + static_cast<int64_t>(item) * S * (BN / 2) * 256;
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] = __ldcg(all + i * 256 + ct);
        for (int r = 1; r < S; ++r) {
          const float* pr = all + static_cast<int64_t>(r) * (BN / 2) * 256;
#pragma unroll
          for (int i = 0; i < BN / 2; ++i) acc[i] += __ldcg(pr + i * 256 + ct);
        }
      }
      float* xchg = nullptr;
      if (GU && narrow && p.hq != nullptr) xchg = hq_x[hq_turn++ & 1];
      // narrow: slots of quarters 0 and 2 (f8_kblock_narrow), written to columns 64 wg on
      constexpr GroupedFmt kEpi = BF ? GroupedFmt::kBf16 : GroupedFmt::kFp8Block;
      epilogue<kEpi, BN, GU, true>(p, w.e, w.pos0, w.cnt, w.nblk, acc, ta, c, narrow ? 5u : 0xFu,
                                   xchg, F4 ? nullptr : &er, narrow ? wg : 0);
    }
  }
  if constexpr (PAIRS) cluster_sync();  // no arrival or multicast reaches an exited CTA
  grouped::pdl_end(p.defer_wait);
}

// NARROW (GroupedLaunch::wgmma_narrow): tiles of 64 tokens or fewer computed narrow, both consumer
// warpgroups on the same 64 tokens with two quarters of the weight rows each, instead of one
// warpgroup computing 64 padding rows. An instance of its own, for calls whose experts mostly get
// <= 64 tokens: its second k-loop (the narrow one) cost the kernel 24-60 bytes of spills when each
// warpgroup had its own (before a64a6da); since then the FP8 instances spill nothing and are level
// with the plain ones where tiles are whole (docs/perf.md session 50).
// SPLIT: split-K where the items fill less than half the grid (MoeGemmParams::split_partials; an
// instance of its own: its reduction costs the k-loop spills).
template <bool GU, bool NARROW = false, bool SPLIT = false>
__global__ void __launch_bounds__(kWsThreads, 1)
    moe_wgmma_f8ws_kernel(const __grid_constant__ MoeGemmParams p) {
  wgmma_f8ws_body<GU, false, NARROW, SPLIT>(p);
}
template <bool GU, bool NARROW = false>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kWsThreads, 1)
    moe_wgmma_f8pair_kernel(const __grid_constant__ MoeGemmParams p) {
  wgmma_f8ws_body<GU, true, NARROW, false>(p);
}
// NVFP4 experts computed in FP8 (F4; GroupedLaunch::nvfp4_f8): the single-CTA kernel with the
// producer dequantizing the weights to E4M3 (kSmemBytesF4 of shared memory).
template <bool GU, bool NARROW = false>
__global__ void __launch_bounds__(kWsThreads, 1)
    moe_wgmma_f4ws_kernel(const __grid_constant__ MoeGemmParams p) {
  wgmma_f8ws_body<GU, false, NARROW, false, true>(p);
}
// BF16 experts (GroupedLaunch::bf16_ws 1 / 2): the single-CTA kernel and its 2-CTA pairs.
template <bool GU>
__global__ void __launch_bounds__(kWsThreads, 1)
    moe_wgmma_bf16ws_kernel(const __grid_constant__ MoeGemmParams p) {
  wgmma_f8ws_body<GU, false, false, false, false, false, true>(p);
}
template <bool GU>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kWsThreads, 1)
    moe_wgmma_bf16pair_kernel(const __grid_constant__ MoeGemmParams p) {
  wgmma_f8ws_body<GU, true, false, false, false, false, true>(p);
}
// P2 (GroupedLaunch::f4p2_max_mean, f4p2_big): F4 with two producer warpgroups and one consumer
// warpgroup, on tiles of at most 64 tokens.
template <bool GU>
__global__ void __launch_bounds__(kWsThreads, 1)
    moe_wgmma_f4p2_kernel(const __grid_constant__ MoeGemmParams p) {
  wgmma_f8ws_body<GU, false, false, false, true, true>(p);
}

}  // namespace moe::cuda::wgmma_gemm
