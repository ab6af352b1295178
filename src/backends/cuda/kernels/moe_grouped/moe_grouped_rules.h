// Per-call launch rules of the grouped routed-expert path: from a GroupedLaunch and a call's
// shape (T tokens, K slots each, E experts, D x I) which path, items and kernel instances the call
// takes: the NVFP4 ring's two-sub-block items and two-step stages, the warp-specialized FP8
// kernels' NARROW instance, gate_up's x by position, the hybrid and its big tiles, split-K. Each
// threshold carries the measurements it rests on. Host code without CUDA calls (the CPU tests run
// them: tests/moe_config/moe_config_test.cc); run_grouped_experts applies them per call. The launch
// structures and kernel entry points are in moe_grouped.h.
#pragma once

#include <cstdint>

#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"

namespace moe::cuda {

// Expected tiles of `tile_tokens` in the list of a call of T tokens, K slots each over E experts
// (the last of them the shared expert, on every token, when `shared`) with uniform routing: per
// routed expert E[ceil(n / tile_tokens)] for n ~ Binomial(T, routed K / routed E). Host only.
double grouped_expected_tiles(int64_t T, int64_t K, int64_t E, bool shared, int tile_tokens);
// Whether a GEMM of N rows per matrix (gate_up: I, down: D) with launch `l` takes items of two
// sub-blocks (GroupedLaunch::pipe_r2): the NVFP4 ring with 8-token tiles, N a multiple of two
// sub-blocks, and at least kGroupedPipeR2MinRounds such items per warp of the grid for
// `expected_tiles` tiles (grouped_expected_tiles). Measured on the H200 (docs/perf.md, 2026-12-01
// session 14; glm5 / dsv3 / TP8 / EP8 NVFP4, same routing): T 16..128 1-9% faster (half the
// activation loads per weight byte); with fewer items per warp (glm5 T 8, 1.7 rounds of gate_up
// items; EP8 T 32..64, under one) 2-5% slower: coarser stream-K splits. Not for gate_up when
// the launch has two-step stages (GroupedLaunch::pipe_two_step, which items of two sub-blocks do
// not have): there gate_up's one-sub-block items are 0..3 points faster at every T (glm5 / dsv3
// T 16 +2.9 / +1.8; docs/perf.md 2026-12-02 session 18), while down keeps the rule (TP8's down,
// 2 k-steps per item, +0.8..+2.5). Independent of the weights' layout (two-step stages need
// packed ones), so packed and row-major weights take the same items: bit-identical results.
constexpr int kGroupedPipeR2MinRounds = 3;
bool grouped_pipe_r2(const GroupedLaunch& l, GroupedFmt f, int64_t N, bool gate_up,
                     double expected_tiles);
// Whether launch `l` runs a kernel that has two-sub-block items for format `f` (the NVFP4 ring
// with 8-token tiles): the part of grouped_pipe_r2 that needs no tile count.
inline bool grouped_pipe_r2_kernel(const GroupedLaunch& l, GroupedFmt f) {
  return f == GroupedFmt::kNvfp4 && l.pipelined && !l.tc && l.nb == 1;
}
// Whether the NVFP4 ring runs two-step stages (GroupedLaunch::pipe_two_step) for a GEMM with
// packed weights (`packed`) and items of one sub-block (`r2` false).
inline bool grouped_pipe_two_step(const GroupedLaunch& l, GroupedFmt f, bool packed, bool r2) {
  return l.pipe_two_step && f == GroupedFmt::kNvfp4 && l.pipelined && !l.tc && l.nb <= 2 &&
         packed && !r2;
}
// Rows of one matrix in a two-sub-block item (N must be a multiple).
constexpr int64_t grouped_pipe_r2_rows(bool gate_up) { return gate_up ? 32 : 64; }
// Expected tokens per expert (T * K / E) up to which GroupedLaunch::wgmma_narrow's -1 takes the
// narrow instance: FP8 experts up to 192, NVFP4 computed in FP8 (f4, the F4 kernel) up to 64.
// H100, docs/perf.md sessions 64 / 65 (its instance since session 50, no spills), FP8 glm5 /
// dsv3: speed-up of narrow in sustained blocks (the 700 W cap: a narrow tile computes no padding
// warpgroup) / in interleaved replays: 96 per expert level / level; 128 (and TP8 T 4096)
// 1.012-1.034 / 1.003-1.007; 160 1.061-1.065 / 1.007-1.010; 192 1.016-1.042 / 1.002-1.004;
// 224 0.967-1.002 / 0.995-1.000; 256 0.98-0.99 / 0.967-0.994 (the gains follow the share of tiles
// that are a last tile of <= 64 tokens: experiments/narrow_tiles.py). EP8 (local rows, K 1) 131 /
// 164 / 194 per expert 1.013 / 1.039 / 1.013 interleaved, 261 1.022-1.031. F4 at 128: sustained
// 1.6-1.9% faster, interleaved 1.2-1.9% slower; 96: 4.5% slower interleaved. (Sessions 24 / 44's
// losses at 128 were the instance's spills, gone since.)
// FP8 calls of an expert-parallel rank's local experts (K 1, 2..32 experts: EP8's 32, in the form
// moe_bench's EP8 shapes call them: each local slot a row of its own; an EP path that passes
// masked top-K ids instead must restate this) take it up to kGroupedNarrowMaxMeanEp: H100,
// docs/perf.md session 67, glm5-ep8 / dsv3-ep8 interleaved 194 per expert 1.011 / 1.013, 261 1.023
// / 1.024 (`--phases 1`: GEMMs 7% faster), 292 (glm5) 1.021; 325 0.995 / 0.994, 388 1.005 / 1.009
// and in sustained blocks 0.989-1.011, 518 / 776 level to 1% slower; unsharded glm5 / dsv3 at 288
// lose 4-8% in both forms, TP8 at 256 3%. Why EP8 gains where the unsharded calls lose is open:
// static item striding's balance predicts the same for both (experiments/item_balance.py).
constexpr double kGroupedNarrowMaxMean = 192;
constexpr double kGroupedNarrowMaxMeanF4 = 64;
constexpr double kGroupedNarrowMaxMeanEp = 300;
inline bool grouped_wgmma_narrow(const GroupedLaunch& l, int64_t T, int64_t K, int64_t E,
                                 bool f4 = false) {
  if (l.wgmma_narrow >= 0) return l.wgmma_narrow == 1;
  const bool ep_local = !f4 && K == 1 && E > 1 && E <= 32;
  return E > 0 && static_cast<double>(T * K) / static_cast<double>(E) <=
                      (f4         ? kGroupedNarrowMaxMeanF4
                       : ep_local ? kGroupedNarrowMaxMeanEp
                                  : kGroupedNarrowMaxMean);
}

// GroupedLaunch::x_pos's -1 copies x by position for gate_up's TMA boxes from kGroupedXPosMinMean
// expected tokens per expert (T * K / E) and for experts of I >= kGroupedXPosMinI: the copy costs
// T K D bytes once, the gather it replaces is paid by every one of gate_up's 2 I / 256 column
// blocks. H100, FP8, B/A (docs/perf.md session 43): glm5 64 per expert 1.012, 128 0.988 / 1.005,
// 256 0.968 / 0.971; dsv3 128 0.995, 256 0.973; EP8 (I 2048) 256 0.986; TP8 (I 256, 2 column
// blocks) 256 1.157. NVFP4 computed in FP8 (nvfp4_f8) from kGroupedXPosMinMeanF4: its gather
// also waited for the next job's NVFP4 codes (the arrival counts every earlier cp.async of the
// thread), so the copy pays sooner. H100, NVFP4, B/A (docs/perf.md session 47): glm5 / dsv3 /
// EP8 48 per expert 0.984 / 0.986 / 0.987 (sustained blocks glm5 0.998, EP8 0.987), 64 per
// expert 0.979 / 0.980 / 0.952 (sustained glm5 0.980, EP8 0.970); FP8 at 48 1.015-1.022.
constexpr double kGroupedXPosMinMean = 128;
constexpr double kGroupedXPosMinMeanF4 = 48;
constexpr int64_t kGroupedXPosMinI = 1024;
inline bool grouped_x_pos(const GroupedLaunch& l, int64_t T, int64_t K, int64_t E, int64_t I) {
  if (l.x_pos >= 0) return l.x_pos == 1;
  return E > 0 && I >= kGroupedXPosMinI &&
         static_cast<double>(T * K) / static_cast<double>(E) >=
             (l.nvfp4_f8 ? kGroupedXPosMinMeanF4 : kGroupedXPosMinMean);
}

// The hybrid's big tiles (experts with >= wgmma_min_tokens tokens) are narrow exactly when no
// big tile can hold more than 64 tokens, T <= 64 (an expert has at most one slot per row). Then
// FP8 takes the warp-specialized kernel's narrow instance, BF16 the 64-token mma.sync tile GEMM
// (kGroupedNarrowTcTile, 2 CTAs per SM) instead of the warpgroup-MMA one. The expected mean
// (grouped_wgmma_narrow) says nothing about the big experts. Measured (docs/perf.md, session
// 28): FP8 glm5 hot8 T 64 172 -> 136 us with it, T 96 / 128 156 / 149 -> 164 / 157 (full tiles
// pay the instance's spills); BF16 hot8 T 48 / 64 303 / 283 -> 216 / 204 (the tc launch's).
// GroupedLaunch::wgmma_narrow >= 0 overrides (BF16's tile GEMM only at T <= 64 even so).
constexpr int kGroupedNarrowTcTile = 64;
inline bool grouped_hybrid_narrow(const GroupedLaunch& l, int64_t T) {
  if (l.wgmma_narrow >= 0) return l.wgmma_narrow == 1;
  static_assert(kGroupedNarrowTcTile == kGroupedBigTile / 2 &&
                kGroupedNarrowTcTile == kGroupedF4p2Tile);
  return T <= kGroupedNarrowTcTile;
}
// Whether a hybrid call's BF16 big tiles take the 64-token mma.sync tile GEMM: narrow, and only
// at T <= 64 even when wgmma_narrow forces narrow (the tile GEMM takes 64 tokens of a tile).
inline bool grouped_hybrid_tile_gemm(const GroupedLaunch& l, GroupedFmt f, int64_t T) {
  return f == GroupedFmt::kBf16 && T <= kGroupedNarrowTcTile && grouped_hybrid_narrow(l, T);
}

// Split-K of the hybrid's gate_up (GroupedLaunch::hybrid_split_k) only for experts of at most
// this many 256-row gate_up blocks (I <= 512), whose big tiles give a few CTAs each a 6144-deep
// k-loop. Measured on the H200 (docs/perf.md, 2026-12-03 session 29; moe_bench --hybrid-gb 0
// --split-k 1 0 0 1 over glm5 / TP8 / EP8 x hot8 / zipf1.5 / zipf2 x T 48..256, every format):
// TP8 (2 blocks) 3-46% faster in each of its 45 rows (hot8 T 96 BF16 120 -> 82 us, FP8 86 -> 68,
// NVFP4 150 -> 81); GLM-5 and EP8 (16 blocks) FP8 1-7% slower (EP8 hot8 T 96 110 -> 117), BF16
// level, NVFP4 -10..+5%.
constexpr int64_t kHybridSplitMaxBlocks = 4;
// Whether a hybrid call of T tokens on experts of format f and intermediate size I splits its
// gate_up along k (then run_grouped_experts gives the kernels counters and partial-sum space).
inline bool grouped_hybrid_split_k(const GroupedLaunch& l, GroupedFmt f, int64_t T, int64_t I) {
  return l.hybrid_split_k && I % 128 == 0 && I / 128 <= kHybridSplitMaxBlocks &&
         !grouped_hybrid_tile_gemm(l, f, T);
}

// Whether a call of T tokens with launch `l` runs the hybrid: a register-streaming launch whose
// experts with at least l.wgmma_min_tokens tokens go to the warpgroup-MMA GEMM (no expert can
// reach the threshold when T is below it: each token picks an expert once).
inline bool grouped_hybrid(const GroupedLaunch& l, int64_t T) {
  return !l.tc && l.wgmma_min_tokens > 0 && T >= l.wgmma_min_tokens;
}
// MoeGroupParams::big_min_tiles for a hybrid call of launch `l` on experts of format `f` and shape
// D x I: how many 8-token tiles of an expert's gate_up + down weights make up
// l.hybrid_min_bytes (at least 1, at most 1e9); 0 when l.hybrid_min_bytes is 0 (no gate).
int grouped_hybrid_min_tiles(const GroupedLaunch& l, GroupedFmt f, int64_t D, int64_t I);
// MoeGroupParams::big_min_share for launch `l`: l.hybrid_min_share in thousandths, rounded up
// (1..1000); 0 when l.hybrid_min_share or l.hybrid_min_bytes is 0.
int grouped_hybrid_min_share(const GroupedLaunch& l);

}  // namespace moe::cuda
