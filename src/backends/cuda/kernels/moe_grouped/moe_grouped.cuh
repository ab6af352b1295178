// Grouped routed-expert GEMMs, register streaming and the pipelined ring (see moe_grouped.h for
// the pipeline; the grouping, quantization, packing and combine kernels around them are in
// moe_group_kernels.cuh).
//
// GEMMs stream weights from HBM into mma.sync A fragments: a warp owns a work item of
// (tile of <= 8*NB tokens of one expert, 16 or 32 weight rows; twice that in the ring kernel's
// two-sub-block items, GroupedLaunch::pipe_r2) and walks K in steps where every
// lane loads 16 bytes of each of its rows (64 contiguous bytes per row per step), either straight
// into registers (moe_gemm_kernel) or through a per-warp cp.async ring in shared memory that runs
// ahead across items (moe_gemm_pipe_kernel, "pipelined"). The order of k
// inside a step is free as long as A and B agree, so each lane's 16 weight bytes are exactly the
// k values its A-fragment registers need, and the matching activations are one to four 16-byte
// loads of the token's row (L1 hits: all warps of an expert read the same rows). No shared
// memory; the persistent grid gives every warp items round-robin, so the weights of each touched
// expert are read once per token tile. Weight formats are dequantized in registers:
//   BF16: as is (bf16 mma). FP8: cvt e4m3x2 -> f16x2 (exact), block scale applied to the f32
//   partial sum of each 128-k block. NVFP4: nibble bits placed into f16 bits (value * 2^-14,
//   shifts and masks only), times (fp8 scale * 2^7) in f16 (exact), global scale * 2^7 in the
//   epilogue. NVFP4 activations are stored in k order [0,4,2,6,1,5,3,7] per group of 8
//   (act_index) so that one 16-byte load matches the pairs the nibble unpacking produces; with
//   MoeGemmParams::act_t also with the 16-byte chunks of each k-step transposed (act_index_t), so
//   the 4 lanes of a row read 64 contiguous bytes per load (Item::vs).
// NOTE: FP8/NVFP4 use F16 activations, saturated to +-65504 (inputs of MoE layers are post-norm).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <type_traits>

#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_common.cuh"
#include "backends/cuda/kernels/moe_grouped/stream_k.h"

namespace moe::cuda::grouped {

constexpr int kGemmMaxThreads = 256;
// k-steps of weight loads in flight per warp in the register-streaming kernel (fewer with many
// token columns: registers).
template <int NB>
constexpr int kUnroll = NB >= 4 ? 2 : 4;

// Shared-memory pipeline (moe_gemm_pipe_kernel): k-steps in a warp's ring, bytes per step
// (moe_grouped.h; its constexpr functions are host-only, these constants carry them into device
// code).
template <GroupedFmt F>
constexpr int kPipeBatch = grouped_pipe_batch(F);  // k-steps per cp.async group
template <GroupedFmt F>
constexpr int kPipeStages = grouped_pipe_stages(F);
template <GroupedFmt F>
constexpr int kPipeStepBytes = grouped_pipe_step_bytes(F);
template <GroupedFmt F, bool BULK>
constexpr int kPipeWarpBytes = grouped_pipe_warp_bytes(F, BULK);

// Weight formats, dequantization and activation helpers: moe_grouped_common.cuh.

// ---- grouped GEMM ----

// One warp's work item: a tile of <= 8*NB tokens of expert e and 16 rows of each of its two
// matrices (gate_up: gate and up; down: rows rbase[0] and rbase[1] = rbase[0] + 16).
template <int NB>
struct Item {
  int e, pos0, cnt;
  int64_t rbase[2];
  const uint4* arow[NB];  // activation row of token column nb*8 + g, at this lane's k offset
  int vs;                 // uint4s from a lane's v-th activation load to its next (act_t: 4)
};

// GroupedLaunch::early_gate_up (and early_down_max_slots): the tile list of a call of <= 32 slots
// as moe_group_kernel builds it (experts in increasing id order, ceil(count / tile tokens) tiles
// each; no big tiles, no pair units: run_grouped_experts checks), worked out by one warp from the
// routing ids alone, so it can be read before griddepcontrol.wait. Lane s holds slot s's expert;
// the first lane of each expert (its leader) holds the expert's first tile and tile count. The same
// computation as group_one_warp's (moe_group_kernels.cuh), which also places the slots: change both
// together.
struct EarlyTiles {
  int ee = -1, first = 0, nt = 0, n = 0;  // n: tiles of the call (= *num_tiles)
  // Expert of tile q < n (every lane of the warp calls it).
  __device__ __forceinline__ int expert(int64_t q) const {
    const unsigned m = __ballot_sync(0xffffffffu, nt > 0 && q >= first && q < first + nt);
    return __shfl_sync(0xffffffffu, ee, __ffs(m) - 1);
  }
};
__device__ __forceinline__ EarlyTiles early_tiles(const MoeGemmParams& p, int lane) {
  EarlyTiles r;
  r.ee = lane < p.early_slots
             ? slot_expert(p.early_ids, p.early_ids_stride, p.K, p.early_E, p.early_shared, lane)
             : -1;
  const unsigned same = __match_any_sync(0xffffffffu, r.ee);
  const int tt = p.early_tile_tokens;
  r.nt = r.ee >= 0 && lane == __ffs(same) - 1 ? (__popc(same) + tt - 1) / tt : 0;
#pragma unroll 8
  for (int j = 0; j < 32; ++j) {
    const int v = __shfl_sync(0xffffffffu, r.ee, j), vn = __shfl_sync(0xffffffffu, r.nt, j);
    if (v < r.ee) r.first += vn;  // leaders of lower experts (the others hold vn = 0)
    r.n += vn;
  }
  return r;
}

template <GroupedFmt F, int NB, bool GU, int R = 1>
__device__ __forceinline__ Item<NB> make_item(const MoeGemmParams& p, int64_t item,
                                              int64_t row_blocks, int g, int c) {
  constexpr int kRows = (GU ? 16 : 32) * R;
  // act_index_t storage (MoeGemmParams::act_t): lane c's v-th chunk of a step at chunk 4 v + c.
  const bool at = F == GroupedFmt::kNvfp4 && p.act_t;
  Item<NB> it;
  const int64_t tile = item / row_blocks, rb = item % row_blocks;
  const int4 td = reinterpret_cast<const int4*>(p.tiles)[tile];
  it.e = td.x, it.pos0 = td.y, it.cnt = td.z;
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) {
    const int col = nb * 8 + g, cc = col < it.cnt ? col : 0;
    const int64_t r = GU ? p.sorted_slot[it.pos0 + cc] / p.K : it.pos0 + cc;
    it.arow[nb] = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.act) + r * p.Kd) +
                  (at ? c : c * (Fmt<F>::kStepK / 32));
  }
  it.vs = at ? 4 : 1;
#pragma unroll
  for (int t = 0; t < 2; ++t) it.rbase[t] = rb * kRows + (GU ? 0 : 16 * t);
  return it;
}

// Sub-block r of a two-sub-block item (moe_gemm_pipe_kernel's R): its rows are r sub-blocks
// (16 rows per matrix for gate_up, 32 for down) further.
template <int NB, bool GU>
__device__ __forceinline__ Item<NB> sub_item(Item<NB> it, int r) {
#pragma unroll
  for (int t = 0; t < 2; ++t) it.rbase[t] += r * (GU ? 16 : 32);
  return it;
}

// Lane (g, c)'s weight row of matrix t (gate_up: 0 gate, 1 up), half h (rows g, g + 8).
template <GroupedFmt F, bool GU>
__device__ __forceinline__ const uint8_t* weight_row(const MoeGemmParams& p, int e, int64_t rbase,
                                                     int t, int h, int g, int c) {
  const int64_t r = rbase + g + 8 * h;
  return static_cast<const uint8_t*>(p.w[GU ? t : 0][e]) +
         packed_data_offset(p.packed, grouped_row_bytes(F, p.Kd), r, c * 16);
}
// Bytes from a lane's weight chunk of half 0 (row g) to that of half 1 (row g + 8), either layout
// (from one k-step to the next: packed_data_kstep).
template <GroupedFmt F>
__device__ __forceinline__ int64_t weight_half(const MoeGemmParams& p) {
  const int64_t rb = grouped_row_bytes(F, p.Kd);
  return packed_data_offset(p.packed, rb, 8, 0) - packed_data_offset(p.packed, rb, 0, 0);
}
// The nvfp4 scales of the same lane at k-step 0 (its two 16-k groups 2c, 2c + 1, adjacent in
// either layout); those of step ks ks * nvfp4_scale_kstep bytes further (dequant_bits.h).
template <bool GU>
__device__ __forceinline__ const uint8_t* scale_lane(const MoeGemmParams& p, int e, int64_t rbase,
                                                     int t, int h, int g, int c) {
  return static_cast<const uint8_t*>(p.s[GU ? t : 0][e]) +
         nvfp4_scale_offset(p.packed, p.Kd, rbase + g + 8 * h, 2 * c);
}

// Activations of k-step ks (B fragments of every token column). The pipelined kernel loads them
// one step ahead of their use (most come from L2: L1 holds few tiles); the register-streaming
// one loads them in the step (its weight loads are already in flight).
template <GroupedFmt F, int NB>
using ActRegs = uint32_t[NB][2 * Fmt<F>::kMmas];
template <GroupedFmt F, int NB>
__device__ __forceinline__ void load_act(const Item<NB>& it, int64_t ks, ActRegs<F, NB>& X) {
  using Tr = Fmt<F>;
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int v = 0; v < Tr::kActVec; ++v) {
      const uint4 a = __ldg(it.arow[nb] + ks * (Tr::kStepK / 8) + v * it.vs);
      X[nb][4 * v + 0] = a.x;
      X[nb][4 * v + 1] = a.y;
      X[nb][4 * v + 2] = a.z;
      X[nb][4 * v + 3] = a.w;
    }
}

// The math of k-step ks of an item: X = its activations, W = this lane's 16 weight bytes of each
// (matrix, half), S = nvfp4 scale bytes of its two 16-k groups. acc += A x; fp8 folds tacc into
// acc per 128 k.
template <GroupedFmt F, int NB, bool GU>
__device__ __forceinline__ void compute_step(const MoeGemmParams& p, const Item<NB>& it, int64_t ks,
                                             const ActRegs<F, NB>& X, const uint4 (&W)[2][2],
                                             const uint16_t (&S)[2][2], float (&acc)[2][NB][4],
                                             float (&tacc)[2][NB][4]) {
  using Tr = Fmt<F>;
  constexpr int kM = Tr::kMmas;
#pragma unroll
  for (int t = 0; t < 2; ++t) {
    uint32_t A0[2 * kM], A1[2 * kM];
    dequant<F>(W[t][0], S[t][0], A0);
    dequant<F>(W[t][1], S[t][1], A1);
#pragma unroll
    for (int j = 0; j < kM; ++j) {
      const uint32_t a[4] = {A0[2 * j], A1[2 * j], A0[2 * j + 1], A1[2 * j + 1]};
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        if constexpr (F == GroupedFmt::kFp8Block)
          mma<F>(tacc[t][nb], a, X[nb][2 * j], X[nb][2 * j + 1]);
        else
          mma<F>(acc[t][nb], a, X[nb][2 * j], X[nb][2 * j + 1]);
      }
    }
  }
  if constexpr (F == GroupedFmt::kFp8Block) {
    if (ks & 1) {  // end of a 128-k block: acc += scale * partial
      const int64_t kb = ks >> 1, ksb = p.Kd / 128;
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        const float sc = __ldg(static_cast<const float*>(p.s[GU ? t : 0][it.e]) +
                               (it.rbase[t] / 128) * ksb + kb);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            acc[t][nb][i] = fmaf(sc, tacc[t][nb][i], acc[t][nb][i]);
            tacc[t][nb][i] = 0.f;
          }
      }
    }
  }
}

// gate_up: h[pos, i] = silu(gate) * up (16-bit, k order of the down GEMM's activations);
// down: out[slot, d] = routing weight * acc (f32).
template <GroupedFmt F, int NB, bool GU>
__device__ __forceinline__ void epilogue(const MoeGemmParams& p, const Item<NB>& it,
                                         const float (&acc)[2][NB][4], int g, int c) {
  float gsc[2] = {1.f, 1.f};
  if constexpr (F == GroupedFmt::kNvfp4) {
    gsc[0] = p.gs[0][it.e] * kNvfp4Unscale;
    gsc[1] = (GU ? p.gs[1][it.e] : p.gs[0][it.e]) * kNvfp4Unscale;
  }
  const bool f16 = F != GroupedFmt::kBf16;
  if constexpr (GU) {
    uint16_t* h = static_cast<uint16_t*>(p.out);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int col = nb * 8 + 2 * c + (i & 1);
        if (col >= it.cnt) continue;
        const int64_t row = it.rbase[0] + g + (i >= 2 ? 8 : 0);
        const float gv = acc[0][nb][i] * gsc[0], uv = acc[1][nb][i] * gsc[1];
        const float hv = gv / (1.f + __expf(-gv)) * uv;
        const int64_t hk =
            F == GroupedFmt::kNvfp4 && p.act_t ? act_index_t(F, row) : act_index(F, row);
        h[static_cast<int64_t>(it.pos0 + col) * p.N + hk] = act_bits(hv, f16);
      }
  } else {
    float* out = static_cast<float*>(p.out);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int col = nb * 8 + 2 * c + j;
        if (col >= it.cnt) continue;
        const int64_t slot = p.sorted_slot[it.pos0 + col];
        const float wv = p.slot_w[slot] * gsc[0];
#pragma unroll
        for (int t = 0; t < 2; ++t)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh)
            out[slot * p.N + it.rbase[t] + g + 8 * hh] = wv * acc[t][nb][2 * hh + j];
      }
  }
}

// run(std::integral_constant<int, NBI>{}) with the fewest token columns NBI of {1, 2, NB} that
// hold a tile of cnt tokens when NARROW (tiles of <= 8 tokens run the 8-token code, of <= 16 the
// 16-token code: measured on the H200, wider code computes a narrow tile up to 18% slower, from a
// lower issue rate; docs/perf.md), else with NB.
template <int NB, bool NARROW, typename Run>
__device__ __forceinline__ void with_tile_width(int cnt, Run&& run) {
  if constexpr (NARROW && NB >= 2) {
    if (cnt <= 8) return run(std::integral_constant<int, 1>{});
    if constexpr (NB >= 4)
      if (cnt <= 16) return run(std::integral_constant<int, 2>{});
  }
  run(std::integral_constant<int, NB>{});
}

// Register streaming: every U k-steps of an item the warp issues U steps of weight loads, waits,
// and computes them (the loads of the other warps of the SM hide the wait).
template <GroupedFmt F, int NB, bool GU>
__global__ void __launch_bounds__(kGemmMaxThreads, 1)
    moe_gemm_kernel(const __grid_constant__ MoeGemmParams p) {
  grouped::pdl_wait();  // GroupedLaunch::pdl (no-op otherwise)
  grouped::pdl_launch_dependents();
  using Tr = Fmt<F>;
  const int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int wpb = blockDim.x >> 5;
  const int64_t warps_total = static_cast<int64_t>(gridDim.x) * wpb;
  const int64_t row_blocks = p.N / (GU ? 16 : 32);
  const int64_t n_items = static_cast<int64_t>(*p.num_tiles) * row_blocks;
  const int64_t nsteps = p.Kd / Tr::kStepK;
  // 16- and 32-token tiles run narrow tiles with narrower code (with_tile_width).
  constexpr bool kNarrow = NB == 2 || NB == 4;
  const int64_t wstep = packed_data_kstep(p.packed), sstep = nvfp4_scale_kstep(p.packed);

  for (int64_t item = static_cast<int64_t>(blockIdx.x) * wpb + (threadIdx.x >> 5); item < n_items;
       item += warps_total) {
    // The item's math with NBI token columns (with_tile_width).
    auto run = [&](auto nbi_const) {
      constexpr int NBI = decltype(nbi_const)::value;
      constexpr int U = kUnroll<NBI>;
      const Item<NBI> it = make_item<F, NBI, GU>(p, item, row_blocks, g, c);
      const uint8_t* wrow[2][2];
      const uint8_t* srow[2][2];
#pragma unroll
      for (int t = 0; t < 2; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          wrow[t][h] = weight_row<F, GU>(p, it.e, it.rbase[t], t, h, g, c);
          srow[t][h] =
              F == GroupedFmt::kNvfp4 ? scale_lane<GU>(p, it.e, it.rbase[t], t, h, g, c) : nullptr;
        }
      float acc[2][NBI][4] = {};
      float tacc[2][NBI][4] = {};  // fp8: partial sums of the current 128-k block
      uint4 W[U][2][2];
      uint16_t S[U][2][2];
      auto load = [&](int64_t ks, int u) {
#pragma unroll
        for (int t = 0; t < 2; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            W[u][t][h] = ld_stream(wrow[t][h] + ks * wstep);
            if constexpr (F == GroupedFmt::kNvfp4)
              S[u][t][h] = __ldg(reinterpret_cast<const uint16_t*>(srow[t][h] + ks * sstep));
            else
              S[u][t][h] = 0;
          }
      };
      const int64_t nmain = nsteps / U * U;
      ActRegs<F, NBI> X;
      for (int64_t ks = 0; ks < nmain; ks += U) {
#pragma unroll
        for (int u = 0; u < U; ++u) load(ks + u, u);
#pragma unroll
        for (int u = 0; u < U; ++u) {
          load_act<F, NBI>(it, ks + u, X);
          compute_step<F, NBI, GU>(p, it, ks + u, X, W[u], S[u], acc, tacc);
        }
      }
      for (int64_t ks = nmain; ks < nsteps; ++ks) {
        load(ks, 0);
        load_act<F, NBI>(it, ks, X);
        compute_step<F, NBI, GU>(p, it, ks, X, W[0], S[0], acc, tacc);
      }
      epilogue<F, NBI, GU>(p, it, acc, g, c);
    };
    with_tile_width<NB, kNarrow>(p.tiles[4 * (item / row_blocks) + 2], run);
  }
}

__device__ __forceinline__ void cp_async16_l2(uint32_t dst, const void* src) {  // + L2 prefetch
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(dst), "l"(src)
               : "memory");
}

// The fix-up of an item whose k-steps several contributors computed: this one (index self)
// stores its partial sums acc at slot_of(self) and counts itself in at *counter; the last of
// contributors v0..v1 to arrive adds their contributions in that order (its own from acc:
// deterministic whichever arrives last) and runs the epilogue. NBS: the launch's token columns
// (the slot size); NB <= NBS those of this item's code.
template <GroupedFmt F, int NB, bool GU, int NBS, int R, typename SlotOf>
__device__ __forceinline__ void add_partials(const MoeGemmParams& p, const Item<NB>& it,
                                             float (&acc)[R][2][NB][4], SlotOf&& slot_of, int self,
                                             int v0, int v1, int32_t* counter, int lane, int g,
                                             int c) {
  // f(t, nb, r) over one sub-block's accumulators; at: their offset in a slot (sub-block rr).
  auto each = [](auto&& f) {
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int r = 0; r < 4; ++r) f(t, nb, r);
  };
  auto at = [](int rr, int t, int nb, int r) { return (((rr * 2 + t) * NB + nb) * 4 + r) * 32; };
  float* mine = slot_of(self);
#pragma unroll
  for (int rr = 0; rr < R; ++rr)
    each([&](int t, int nb, int r) { mine[at(rr, t, nb, r)] = acc[rr][t][nb][r]; });
  // The arrival orders the warp's partial sums before it and the last arrival's reads of the
  // others' after it: the warp barrier orders every lane's stores before lane 0's acq_rel atomic
  // (release), and that atomic (acquire) before every lane's loads behind the second barrier.
  // NOTE: __threadfence (fence.sc.gpu) on every lane before the atomic and after it was 0.2-2.8%
  // slower at T 1..4 (H100, session 58, experiments/2026-12-06-sk-fence.patch mode 2; its mode 1,
  // fence.acq_rel.gpu on every lane, was level with fence.sc). CUTLASS's barrier, at warp scope.
  __syncwarp();
  int arrived = 0;
  if (lane == 0)
    asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;"
                 : "=r"(arrived)
                 : "l"(__cvta_generic_to_global(counter))
                 : "memory");
  arrived = __shfl_sync(0xffffffffu, arrived, 0);
  if (arrived != v1 - v0) return;  // not the last contributor
  __syncwarp();
  // The others' partial sums, added in contributor order. In kernels of one-column tiles and one
  // sub-block (NBS, R) four contributors' loads are in flight at a time: one at a time, the L2
  // round trips of an item split 12 ways (TP8 T 1's gate_up) were in series. Elsewhere one at a
  // time: four put 4-24 bytes of spills into instances at the 128-register bound.
  constexpr int kBatch = NBS == 1 && R == 1 ? 4 : 1;
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    float sum[2][NB][4] = {};
    if constexpr (kBatch == 1) {
      for (int v = v0; v <= v1; ++v) {
        const float* src = slot_of(v);
        each([&](int t, int nb, int r) {
          sum[t][nb][r] += v == self ? acc[rr][t][nb][r] : __ldcg(src + at(rr, t, nb, r));
        });
      }
    } else {
      for (int vb = v0; vb <= v1; vb += kBatch) {
        float part[kBatch][2][NB][4];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int v = vb + j;
          const bool load = v <= v1 && v != self;
          const float* src = load ? slot_of(v) : nullptr;
          each([&](int t, int nb, int r) {
            part[j][t][nb][r] = load ? __ldcg(src + at(rr, t, nb, r)) : 0.f;
          });
        }
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int v = vb + j;
          if (v > v1) break;
          each([&](int t, int nb, int r) {
            sum[t][nb][r] += v == self ? acc[rr][t][nb][r] : part[j][t][nb][r];
          });
        }
      }
    }
    epilogue<F, NB, GU>(p, sub_item<NB, GU>(it, rr), sum, g, c);
  }
}

// Stream-K fix-up of a split item (segment s of warp sc.w; stream_k.h for contributors, slots
// and counters): warps first_warp..last_warp, slot sc.slot of each, the counter keyed by the
// last one.
template <GroupedFmt F, int NB, bool GU, int NBS = NB, int R = 1>
__device__ __forceinline__ void finish_split(const MoeGemmParams& p, const StreamKSched& sc,
                                             const StreamKSeg& s, const Item<NB>& it,
                                             float (&acc)[R][2][NB][4], int lane, int g, int c) {
  constexpr int kAcc = R * 2 * NBS * 4;
  const int i = s.item - sc.sk_base;
  const int wf = sc.first_warp(i), wl = sc.last_warp(i);
  auto slot_of = [&](int v) -> float* {
    return p.sk_partials + (static_cast<int64_t>(v) * 2 + sc.slot(v, i)) * kAcc * 32 + lane;
  };
  add_partials<F, NB, GU, NBS>(p, it, acc, slot_of, sc.w, wf, wl, p.sk_counters + wl, lane, g, c);
}

// The dynamic split's fix-up (GroupedLaunch::ring_dynamic; StreamKDyn in stream_k.h): the ppi
// pieces of item s.item, piece pc in slot pc, the counter keyed by the item's tail index.
template <GroupedFmt F, int NB, bool GU, int NBS = NB, int R = 1>
__device__ __forceinline__ void finish_piece(const MoeGemmParams& p, const StreamKDyn& ds,
                                             const StreamKSeg& s, int piece, const Item<NB>& it,
                                             float (&acc)[R][2][NB][4], int lane, int g, int c) {
  constexpr int kAcc = R * 2 * NBS * 4;
  const int i = s.item - ds.n_whole;
  auto slot_of = [&](int pc) -> float* {
    return p.sk_partials + static_cast<int64_t>(pc) * kAcc * 32 + lane;
  };
  add_partials<F, NB, GU, NBS>(p, it, acc, slot_of, piece, i * ds.ppi, i * ds.ppi + ds.ppi - 1,
                               p.sk_counters + i, lane, g, c);
}

// Shared-memory pipeline: every warp owns a ring of kS k-steps in shared memory, filled in groups
// of kB steps, and keeps all groups but one of cp.async weight (and nvfp4 scale) copies in
// flight, across item boundaries (the loader runs ahead through the warp's segments), so the
// HBM stream never drains and costs no registers. Each lane reads back only the bytes it copied
// itself: the per-thread cp.async.wait_group is the only synchronisation. A stage: [4 (matrix,
// half)][32 lanes] x 16 weight bytes, then [4][32] x 4 bytes holding the lane's 2 nvfp4 scale
// bytes (packed nvfp4: [matrix][32] x 4 bytes, both halves' scales). With packed nvfp4 weights a
// warp's copies of one matrix and step are 1024 + 128 contiguous bytes. The loader keeps one
// running source pointer per matrix (one add per matrix and step).
// BULK (packed nvfp4, sm_90, when grouped_pipe_bulk says so): lane 0 fills a stage with four bulk
// copies (per matrix its 1024 data and 128 scale bytes: the packed block is the stage's layout)
// that complete on the stage's mbarrier; the lanes wait on it, and the warp converges before a
// stage is refilled.
// R: sub-blocks per item (GroupedLaunch::pipe_r2: 2): an item is R blocks of 16 gate + 16 up
// rows (down: 32 rows); each k-step's activations are loaded once for all of them, and the
// ring's stages hold one sub-block's step each (the sub-blocks of a step in consecutive stages).
// SPS 2 (GroupedLaunch::pipe_two_step; packed NVFP4, R 1, per-lane copies): kGroupedPipe2Stages
// stages of two consecutive k-steps of a segment (its last stage one step when the segment has
// an odd count, so the stream-K split and every sum are those of SPS 1), laid out [matrix][step]
// [half][lane] x 16 data bytes, then [matrix][step][lane] x 4 scale bytes; the warp waits for and
// refills stages at their first step.
template <GroupedFmt F, int NB, bool GU, bool BULK = false, int R = 1, int SPS = 1,
          bool DYN = false>
__global__ void __launch_bounds__(kGemmMaxThreads, NB <= 2 ? 2 : 1)
    moe_gemm_pipe_kernel(const __grid_constant__ MoeGemmParams p) {
  // GroupedLaunch::early_gate_up / early_down_max_slots: the tile list from the routing ids, and
  // the first weight stages issued, before the wait (below); otherwise the wait comes first.
  const bool early = !DYN && p.early_ids != nullptr;
  bool pre = early;  // before the wait: the list is et's (then `tiles`, so et is dead in the loop)
  EarlyTiles et;
  if (early) {
    et = early_tiles(p, threadIdx.x & 31);
  } else {
    grouped::pdl_wait();  // GroupedLaunch::pdl (no-op otherwise)
    grouped::pdl_launch_dependents();
  }
  static_assert(R == 1 || (F == GroupedFmt::kNvfp4 && !BULK));
  static_assert(SPS == 1 || (SPS == 2 && F == GroupedFmt::kNvfp4 && R == 1 && !BULK));
  using Tr = Fmt<F>;
  constexpr int kB = kPipeBatch<F>;
  constexpr int kS = SPS == 2 ? kGroupedPipe2Stages : kPipeStages<F>;
  constexpr int kStepBytes = SPS == 2 ? kGroupedPipe2StageBytes : kPipeStepBytes<F>;
  static_assert(SPS == 1 || kB == 1);
  constexpr int kGroups = kS / kB;
  static_assert(!BULK || (F == GroupedFmt::kNvfp4 && kB == 1 &&
                          kS * kStepBytes + kS * 8 <= kPipeWarpBytes<F, BULK>));
  static_assert(kS * kStepBytes <= kPipeWarpBytes<F, BULK>);
  constexpr int kUnit = F == GroupedFmt::kFp8Block ? 128 / Tr::kStepK : 1;
  // NVFP4: narrow tiles run narrower code (with_tile_width; the ring and the loader are the same).
  constexpr bool kNarrow = NB >= 2 && F == GroupedFmt::kNvfp4;
  extern __shared__ uint4 smem[];
  const int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int wpb = blockDim.x >> 5;
  constexpr int kSubRows = GU ? 16 : 32;  // rows of one matrix per sub-block (R per item)
  const int64_t row_blocks = p.N / (kSubRows * R);
  const int nsteps = static_cast<int>(p.Kd / Tr::kStepK);
  const int wid = blockIdx.x * wpb + (threadIdx.x >> 5), n_warps = gridDim.x * wpb,
            n_items = static_cast<int>((early ? et.n : *p.num_tiles) * row_blocks);
  const StreamKSched sc(wid, n_warps, n_items, nsteps, kUnit);
  // GroupedLaunch::ring_dynamic: chunks claimed from p.sk_claim (the first one is the warp's
  // index); lane q < 8 of dq holds the chunk of the warp's segment j with j % 8 == q (the loader
  // is at most two segments ahead of the math), lane 8 the next claimed chunk (one register).
  // DYN (GroupedLaunch::ring_dynamic, chosen on the host where the GEMM is expected to qualify,
  // stream_k_dynamic): every chunk is claimed (any item count is computed right).
  const StreamKDyn ds(n_items, n_warps, nsteps);
  int dq = 0;
  const uint4* ring = smem + (threadIdx.x >> 5) * (kPipeWarpBytes<F, BULK> / 16);
  const uint32_t ring_s = static_cast<uint32_t>(__cvta_generic_to_shared(ring)) + lane * 16;
  // Per k-step and from half 0 (row g) to half 1 (row g + 8) of a lane's source bytes.
  const int wstep = static_cast<int>(packed_data_kstep(p.packed)),
            sstep = static_cast<int>(nvfp4_scale_kstep(p.packed)),
            whalf = static_cast<int>(weight_half<F>(p));
  // nvfp4 scales: each (matrix, half) copies the aligned 4-byte word that holds its two bytes
  // and reads back its half of it. Row-major, half 1's word is 8 rows (Kd / 2 bytes) further;
  // packed, one word holds both halves of a lane and is copied once.
  const bool packed_scales = F == GroupedFmt::kNvfp4 && p.packed;
  const int shalf = static_cast<int>(p.Kd / 2);
  // R > 1: bytes from a sub-block's sources to the next one's (kSubRows rows further).
  const int64_t rbytes = grouped_row_bytes(F, p.Kd);
  const int wsub = static_cast<int>(packed_data_offset(p.packed, rbytes, kSubRows, 0) -
                                    packed_data_offset(p.packed, rbytes, 0, 0));
  const int ssub = F == GroupedFmt::kNvfp4
                       ? static_cast<int>(nvfp4_scale_offset(p.packed, p.Kd, kSubRows, 0) -
                                          nvfp4_scale_offset(p.packed, p.Kd, 0, 0))
                       : 0;
  // BULK: one mbarrier per stage after the warp's stages; bit s of `phase`: parity of stage s's
  // next completion.
  const uint32_t bar0 = ring_s - lane * 16 + kS * kStepBytes;
  uint32_t phase = 0;
  if constexpr (BULK) {
    if (lane == 0)
      for (int st = 0; st < kS; ++st) mbar_init(bar0 + 8 * st, 1);
    mbar_init_fence();
    __syncwarp();
  }

  // Loader cursor: segment lj, next k-step lk (segment ends at lke), this lane's source bytes
  // of half 0 at step lk (one pointer per matrix: registers).
  int lj = 0, lk = 0, lke = 0, lr = 0;
  const uint8_t* lw[2];
  const uint8_t* ls[2];
  auto aim = [&](const StreamKSeg& s) {
    lk = s.kb;
    lke = s.ke;
    const int64_t tile = s.item / row_blocks, rb = s.item % row_blocks;
    const int e = pre ? et.expert(tile) : p.tiles[4 * tile];
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const int64_t rbase = rb * kSubRows * R + (GU ? 0 : 16 * t);
      lw[t] = weight_row<F, GU>(p, e, rbase, t, 0, g, c) + s.kb * wstep;
      ls[t] = F == GroupedFmt::kNvfp4
                  ? reinterpret_cast<const uint8_t*>(
                        reinterpret_cast<uintptr_t>(scale_lane<GU>(p, e, rbase, t, 0, g, c) +
                                                    s.kb * sstep) &
                        ~uintptr_t{3})
                  : nullptr;
    }
  };
  // DYN: the loader's segment j (false past the last one).
  auto loader_seg = [&](int j, StreamKSeg& s) -> bool {
    const int ch = j == 0 ? wid : __shfl_sync(0xffffffffu, dq, 8);
    if (lane == (j & 7)) dq = ch;
    if (ch >= ds.n_chunks) return false;
    if (lane == 8) dq = n_warps + atomicAdd(p.sk_claim, 1);
    s = ds.seg(ch);
    return true;
  };
  bool lvalid = false;
  if constexpr (DYN) {
    StreamKSeg ls0;
    lvalid = loader_seg(0, ls0);
    if (lvalid) aim(ls0);
  } else {
    if (sc.nseg > 0) aim(sc.seg(0));
  }
  auto issue_step = [&](int stage) {
    if (DYN ? lvalid : lj < sc.nseg) {
      const uint32_t dst = ring_s + stage * kStepBytes;
      const int wo = R > 1 ? lr * wsub : 0, so = R > 1 ? lr * ssub : 0;
      // SPS 2: steps in this stage (1 at the end of a segment of odd length)
      const int n = SPS == 2 && lke - lk < 2 ? 1 : SPS;
      if constexpr (BULK) {
        if (lane == 0) {  // lane 0's sources are the blocks' first bytes
          const uint32_t bar = bar0 + 8 * stage;
          mbar_arrive_expect_tx(bar, 2 * (1024 + 128));
#pragma unroll
          for (int t = 0; t < 2; ++t) {
            bulk_copy(dst + t * 1024, lw[t] + wo, 1024, bar);
            bulk_copy(dst + 2048 + t * 128, ls[t] + so, 128, bar);
          }
        }
      } else if constexpr (SPS == 2) {  // packed: half 1 is 512 bytes on, one scale word per lane
#pragma unroll
        for (int t = 0; t < 2; ++t)
#pragma unroll
          for (int j = 0; j < 2; ++j)
            if (j < n) {
              const uint32_t d = dst + ((t * 2 + j) * 2) * 512;
              cp_async16_l2(d, lw[t] + j * wstep);
              cp_async16_l2(d + 512, lw[t] + j * wstep + whalf);
              cp_async4(dst + 4096 - lane * 12 + (t * 2 + j) * 128, ls[t] + j * sstep);
            }
      } else {
#pragma unroll
        for (int t = 0; t < 2; ++t) {
          cp_async16_l2(dst + (t * 2) * 512, lw[t] + wo);
          cp_async16_l2(dst + (t * 2 + 1) * 512, lw[t] + wo + whalf);
          if constexpr (F == GroupedFmt::kNvfp4) {
            cp_async4(dst + 2048 - lane * 12 + (t * 2) * 128, ls[t] + so);
            if (!packed_scales)
              cp_async4(dst + 2048 - lane * 12 + (t * 2 + 1) * 128, ls[t] + so + shalf);
          }
        }
      }
      bool next_k = true;
      if constexpr (R > 1) {
        next_k = ++lr == R;
        if (next_k) lr = 0;
      }
      if (next_k) {
#pragma unroll
        for (int t = 0; t < 2; ++t) {
          lw[t] += n * wstep;
          if constexpr (F == GroupedFmt::kNvfp4) ls[t] += n * sstep;
        }
        if constexpr (DYN) {
          if ((lk += n) == lke) {
            StreamKSeg ns;
            lvalid = loader_seg(++lj, ns);
            if (lvalid) aim(ns);
          }
        } else {
          if ((lk += n) == lke && ++lj < sc.nseg) aim(sc.seg(lj));
        }
      }
    }
  };
  // One cp.async group = kB consecutive steps; groups past the last segment are empty, which
  // keeps the group count uniform.
  auto issue_group = [&](int stage0) {
#pragma unroll
    for (int j = 0; j < kB; ++j) issue_step(stage0 + j);
    if constexpr (!BULK) cp_async_commit();
  };
#pragma unroll
  for (int gr = 0; gr < kGroups - 1; ++gr) issue_group(gr * kB);
  // Positions, activations (down: h) and stream-K counters come from the kernels before.
  if (early) {
    grouped::pdl_wait();
    grouped::pdl_launch_dependents();
    pre = false;
  }

  int stage = 0;
  for (int j = 0; DYN || j < sc.nseg; ++j) {
    StreamKSeg s;
    int piece = -1;  // DYN: the chunk's piece index (< 0: a whole item)
    if constexpr (DYN) {
      const int ch = __shfl_sync(0xffffffffu, dq, j & 7);
      if (ch >= ds.n_chunks) break;
      s = ds.seg(ch);
      piece = ch - ds.n_whole;
    } else {
      s = sc.seg(j);
    }
    // The segment's math with NBI token columns (with_tile_width).
    auto run = [&](auto nbi_const) {
      constexpr int NBI = decltype(nbi_const)::value;
      // Activations of the next step are loaded one step ahead with one token column; with more
      // the registers go to a second CTA per SM instead (their loads overlap the dequantization).
      constexpr bool kPrefetchAct = NBI == 1;
      const Item<NBI> it = make_item<F, NBI, GU, R>(p, s.item, row_blocks, g, c);
      float acc[R][2][NBI][4] = {};
      float tacc[R][2][NBI][4] = {};
      // One k-step: prefetch the next step's activations into Xn, compute with X (two call sites
      // with the buffers swapped, so no register copies).
      auto step = [&](int ks, ActRegs<F, NBI>& X, ActRegs<F, NBI>& Xn) {
        if constexpr (kPrefetchAct)
          load_act<F, NBI>(it, ks + 1 < s.ke ? ks + 1 : ks, Xn);
        else
          load_act<F, NBI>(it, ks, X);
        // SPS 2: the stage's second step (stages start at even steps of the segment) neither
        // waits nor refills.
        const int sub = SPS == 2 ? (ks - s.kb) & 1 : 0;
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (stage % kB == 0 && sub == 0) {  // first step of a group: wait, refill the last one
            if constexpr (BULK) {
              mbar_wait(bar0 + 8 * stage, (phase >> stage) & 1u);
              phase ^= 1u << stage;
              __syncwarp();  // every lane has read the stage refilled next
            } else {
              cp_async_wait<kGroups - 2>();
            }
            issue_group(stage == 0 ? kS - kB : stage - kB);
          }
          const uint4* src = ring + stage * (kStepBytes / 16);
          uint4 W[2][2];
          uint16_t S[2][2];
#pragma unroll
          for (int t = 0; t < 2; ++t)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              if constexpr (SPS == 2) {
                W[t][h] = src[(t * 2 + sub) * 64 + h * 32 + lane];
                S[t][h] =
                    reinterpret_cast<const uint16_t*>(src + 256)[(t * 2 + sub) * 64 + 2 * lane + h];
              } else {
                const int slot = (t * 2 + h) * 32 + lane;
                W[t][h] = src[slot];
                if constexpr (BULK)
                  S[t][h] = reinterpret_cast<const uint16_t*>(src + 128)[t * 64 + 2 * lane + h];
                else if constexpr (F == GroupedFmt::kNvfp4)
                  S[t][h] = reinterpret_cast<const uint16_t*>(
                      src + 128)[packed_scales ? 2 * (slot - 32 * h) + h : 2 * slot + (c & 1)];
                else
                  S[t][h] = 0;
              }
            }
          compute_step<F, NBI, GU>(p, it, ks, X, W, S, acc[r], tacc[r]);
          if (SPS == 1 || sub == 1 || ks + 1 == s.ke) stage = stage + 1 == kS ? 0 : stage + 1;
        }
      };
      ActRegs<F, NBI> X0, X1;
      if constexpr (kPrefetchAct) load_act<F, NBI>(it, s.kb, X0);
      for (int ks = s.kb; ks < s.ke; ks += 2) {
        step(ks, X0, X1);
        if (ks + 1 < s.ke) step(ks + 1, X1, X0);
      }
      if (s.kb == 0 && s.ke == nsteps) {
#pragma unroll
        for (int r = 0; r < R; ++r) epilogue<F, NBI, GU>(p, sub_item<NBI, GU>(it, r), acc[r], g, c);
      } else if constexpr (DYN) {
        finish_piece<F, NBI, GU, NB, R>(p, ds, s, piece, it, acc, lane, g, c);
      } else {
        finish_split<F, NBI, GU, NB, R>(p, sc, s, it, acc, lane, g, c);
      }
    };
    with_tile_width<NB, kNarrow>(p.tiles[4 * (s.item / row_blocks) + 2], run);
  }
  if constexpr (!BULK) cp_async_wait<0>();  // BULK: every copy issued was waited for
}

}  // namespace moe::cuda::grouped
