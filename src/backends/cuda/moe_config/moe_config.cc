// Configuration selection for the grouped MoE kernels (see moe_config.h).
#include "backends/cuda/moe_config/moe_config.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

namespace moe::cuda {

int MoeKernelConfig::regs_per_thread(GroupedFmt f) const {
  // NOTE: ptxas -v (sm_90a, CUDA 13.0), the most over gate_up / down (and both copy variants of
  // the NVFP4 ring), rounded up to 8 (the allocation unit). The GPU test
  // RegisterTableMatchesTheKernels holds these to cudaFuncGetAttributes (grouped_gemm_regs).
  if (tc && wgmma) return 256;  // moe_wgmma_gemm_kernel: up to 254 (one 256-thread CTA per SM)
  if (tc) return 128;           // moe_tile_gemm_kernel: __launch_bounds__(256, 2) caps it at 128
  if (pipelined && nb != 8) {   // moe_gemm_pipe_kernel (moe_launch streams 64-token tiles)
    switch (f) {
      case GroupedFmt::kBf16:
        // nb 4: 162 since MoeGemmParams' act_tmap; nb 1: 103 since the stream-K arrival by one
        // acq_rel atomic (session 58)
        return nb <= 1 ? 104 : nb == 2 ? 120 : 168;
      case GroupedFmt::kFp8Block:
        return nb <= 1 ? 120 : nb == 2 ? 128 : 184;
      case GroupedFmt::kNvfp4:
        return nb <= 1 ? 128 : nb == 2 ? 128 : 200;  // nb 1: items of two sub-blocks (pipe_r2)
    }
  }
  switch (f) {  // moe_gemm_kernel
    case GroupedFmt::kBf16:
      return nb <= 1 ? 152 : nb == 2 ? 176 : nb == 4 ? 200 : 224;
    case GroupedFmt::kFp8Block:
      return nb <= 1 ? 184 : 232;
    case GroupedFmt::kNvfp4:  // 190 / 202 / 232 with GroupedLaunch::act_transpose's loads
      return nb <= 1 ? 192 : nb == 2 ? 208 : 232;
  }
  return 255;
}

MoeDeviceLimits moe_limits(const DeviceInfo& d) {
  MoeDeviceLimits l;
  l.smem_per_block_optin = d.smem_per_block_optin;
  l.sm_count = d.sm_count;
  l.cc = d.cc_major * 10 + d.cc_minor;
  return l;
}

bool moe_config_fits(const MoeKernelConfig& c, GroupedFmt f, const MoeDeviceLimits& lim) {
  if (c.tc) {
    if ((f != GroupedFmt::kBf16 && !c.wgmma) || (c.nb != 8 && c.nb != 16) || c.pipelined ||
        c.warps_per_cta != 8 || c.ctas_per_sm < 1)
      return false;
    if (c.wgmma && (c.nb != 16 || c.ctas_per_sm != 1 || lim.cc != 90)) return false;
    if (c.smem_bytes() * c.ctas_per_sm > lim.smem_per_block_optin) return false;
    const int64_t regs = int64_t{c.regs_per_thread(f)} * c.threads() * c.ctas_per_sm;
    return regs <= lim.regs_per_sm && c.threads() * c.ctas_per_sm <= lim.max_threads_per_sm;
  }
  const bool nb_ok = c.nb == 1 || c.nb == 2 || c.nb == 4 || (c.nb == 8 && f == GroupedFmt::kBf16);
  if (!nb_ok || c.wgmma || (c.nb == 8 && c.pipelined) || c.warps_per_cta < 1 ||
      c.warps_per_cta > 8 || c.ctas_per_sm < 1)
    return false;
  if (c.smem_bytes() * c.ctas_per_sm > lim.smem_per_block_optin) return false;
  const int64_t regs = int64_t{c.regs_per_thread(f)} * c.threads() * c.ctas_per_sm;
  return regs <= lim.regs_per_sm && c.threads() * c.ctas_per_sm <= lim.max_threads_per_sm;
}

std::vector<MoeKernelConfig> moe_candidate_configs(const MoeShape& s, const MoeDeviceLimits& lim) {
  std::vector<MoeKernelConfig> out;
  for (int nb : {1, 2, 4, 8})
    for (int w : {4, 8})
      for (int cps : {1, 2, 3, 4})
        for (bool pipe : {false, true}) {
          MoeKernelConfig c{nb, w, cps, pipe};
          if (8 * nb > 2 * std::max<int64_t>(s.T, 8)) continue;  // tile far wider than T
          if (moe_config_fits(c, s.fmt, lim)) out.push_back(c);
        }
  // Tensor-core tile GEMM (BF16): 64- and 128-token tiles, one or two CTAs per SM.
  for (int nb : {8, 16})
    for (int cps : {1, 2}) {
      MoeKernelConfig c{nb, 8, cps, false, true};
      if (8 * nb > 2 * std::max<int64_t>(s.T, 8)) continue;
      if (moe_config_fits(c, s.fmt, lim)) out.push_back(c);
    }
  // Its Hopper warpgroup-MMA form (128-token tiles, one CTA per SM; sm_90 only).
  if (const MoeKernelConfig w = kMoeWgmmaConfig;
      8 * w.nb <= 2 * std::max<int64_t>(s.T, 8) && moe_config_fits(w, s.fmt, lim))
    out.push_back(w);
  return out;
}

// Expected tokens per expert from which the heuristic takes the tc GEMM (BF16) with 64-token
// tiles (one CTA per SM), and from which with 128-token tiles (two CTAs per SM where they fit).
// Measured on the H200 (glm5 BF16 sweep, 2026-11-30, docs/perf.md): T 1024 (32 per expert)
// tc 64 6186 us vs 7642 (nb 4) and 6967 (nb 8); T 2048 (64 per expert) tc 128 x 2 CTAs 7724 us
// vs tc 64 8636, nb 8 10906; T 4096 / 8192: tc 128 x 2 CTAs 11667 / 19252 us vs nb 8 19646 /
// 36354. At T <= 256 (<= 8 per expert) the register-streaming kernels stay ahead (4.1-4.8 ms vs
// 5.4-8.4 ms).
constexpr double kTcMinTokensPerExpert = 32;
// Tokens per expert from which the warpgroup-MMA GEMM (sm_90) beats the register-streaming one:
// measured on the H200 (glm5 sweep, 2026-11-30, docs/perf.md): BF16 T 1024 (32 per expert)
// 5312 us vs tc 64 6158 and nb 8 6964; FP8 / NVFP4 at 32 per expert nb 4 wins (4730 vs 6203,
// 5476 vs 6002), at 64 per expert wgmma (6315 vs 8217, 6136 vs 9555). The same numbers set the
// per-expert threshold of the hybrid launch (moe_launch): an expert with that many tokens in a
// call goes to the warpgroup-MMA GEMM (hot8 T 256, 256 tokens on each of 8 experts: BF16 293 us
// vs 858 for the best streaming config). FP8 with E4M3 activations (2026-12-01, session 10):
// T 1024 (32 per expert) wgmma 3318 us against 4312 for nb 4, T 512 (16 per expert) 3194 against
// 2756: the tc launch from 32 per expert like BF16 (the hybrid's per-expert threshold stays 48).
constexpr double kWgmmaMinTokensBf16 = 32;
constexpr double kWgmmaMinTokensQuant = 48;
constexpr double kTcWideTokensPerExpert = 64;
// NVFP4's hybrid big tiles in FP8 (moe_launch): from this many rows, and below it only with this
// many experts on the GPU or more (EP8's 32 lost 1-3% there, the unsharded 256 won up to 44%).
constexpr int64_t kGroupedNvf8HybridMinRows = 256;
constexpr int64_t kGroupedNvf8HybridMinExperts = 128;
// NVFP4's hybrid per-expert threshold of 32 (moe_launch) from this many rows.
constexpr int64_t kGroupedNvfp4Hybrid32MinRows = 512;

// The warpgroup-MMA launch for every expert of a call from this many expected tokens per expert
// (moe_heuristic_config): kWgmmaMinMeanFp8 / kWgmmaMinMeanBf16 unsharded and on EP8's experts
// (NVFP4: kF4P2MinMean below), lower on TP8 shards where the streaming kernels are bound by their
// instructions, not HBM. NOTE: measured on an
// H100 (docs/perf.md, 2026-12-05 session 47; moe_bench --wg 0|1, each case held 500-800 ms under
// load before it is timed, uniform / zipf1 / hot8 routing):
// - TP8 shards (I 256): NVFP4 T 512 / 640 / 1024 (16 / 20 / 32 per expert) 486 / 591 / 885 us
//   streaming against 507 / 521 / 564 (zipf1 T 640 728 -> 586, hot8 289 -> 201); FP8 T 256 / 384 /
//   512 502 / 572 / 627 against 469 / 485 / 500 (zipf1 T 384 598 -> 489, hot8 147 -> 123; below
//   12 per expert the streaming kernel is near HBM's limit on the H100 and more so on the H200,
//   where the margin is unmeasured); BF16 T 512 / 768 1011 / 1166 against 1016 / 1046 (zipf1 T 640
//   / 768 level).
// - NVFP4 with fewer than 128 experts on the GPU (EP8's 32): T 512 / 640 / 768 / 1024 (17 / 22 /
//   26 / 33 per expert) 410 / 452 / 520 / 613 us against 423 / 428 / 430 / 437, dsv3's EP8 alike.
// - Unsharded NVFP4 kept 48 (before P2, below): uniform routing gains from 28 per expert (glm5
//   T 1024 4130 -> 3320 us) but skewed routing loses where the hybrid takes the hot experts (zipf1
//   T 896 / 1024 / 1280 3178 / 3271 / 3561 -> 3779 / 3699 / 3826; zipf1.5 T 1024 3050 -> 3711):
//   its hybrid's lower per-expert threshold (moe_launch) recovers most of uniform's gap instead.
// NVFP4 since its full launch runs on two producer warpgroups below kF4P2MaxMean slots per expert
// (GroupedLaunch::f4p2_max_mean): the full launch from 12 tokens per expert on the sharded shapes
// (TP8's I 256, EP8's 32 experts), from 20 unsharded. NOTE: session 50's interleaved A/B (below
// the list) moved them from session 49's 14 / 32. Measured on an H100 (docs/perf.md,
// 2026-12-05 session 49; the heuristic of then against moe_bench --wg 1 with P2; T >= 512
// interleaved, below in separate runs of the same call), us:
// - EP8 uniform T 384 / 448 / 512 / 768 (13 / 15 / 17 / 26 per expert) 336.7 / 357.9 / 407.4 /
//   432.0 against 329.0 / 325.9 / 334.5 / 340.5, T 192..320 (6..10) 288-306 against 322-325;
//   zipf1 T 192..448 level or P2 ahead (338 -> 326 at T 192), hot8 level (the full launch already).
// - TP8 uniform T 384 / 448 / 512 / 768 (12 / 14 / 16 / 24) 387.8 / 421.3 / 477.1 / 537.6 against
//   400.6 / 408.6 / 428.5 / 455.5, T 192..320 329-349 against 370-391; zipf1 T 320 / 384 / 448
//   389 / 429 / 455 against 381 / 394 / 448; hot8 T 192..448 159-265 against 95-134.
// - Unsharded glm5: uniform T 512 / 768 / 1024 (16 / 24 / 32) 2878 / 3222 / 3619 against 2551 /
//   2598 / 2632 (dsv3 alike), but T 192..448 1922-2466 against 2441-2561, zipf1 T 192..448
//   1824-2409 against 2187-3037, hot8 T 192..448 293-546 against 319-571. Skewed routing kept 48
//   before P2 (above); with it, the full launch's zipf1 T 512 / 1024 2624 / 3043 us (one producer
//   3382 / 3820 in the same A/B) against session 47's hybrid 3271 at T 1024 (2897 at T 640):
//   from 32 per expert uniform and zipf1 both gain. Hot routing loses on P2 (hot8 T 512 / 1024
//   662 / 1248 against one producer's 608 / 1143: its experts take 8..16 64-token tiles).
// - Session 50 (docs/perf.md, 2026-12-06; H100, moe_bench --ab "--wg 1" on 68d051e: the
//   heuristic of 2c008cf against the full launch on P2, interleaved, B/A): unsharded glm5 / dsv3
//   uniform T 512 / 640 / 768 / 896 (16 / 20 / 24 / 28 per expert) 0.86 / 0.82 / 0.76 / 0.71 and
//   0.88 / 0.82 / 0.75 / 0.75; zipf1 1.10 / 0.94 / 0.92 / 0.95 and 1.11 / 0.95 / 0.96 / 0.96;
//   zipf1.5 1.19 / 1.00 / 0.98 / 1.03 and 1.20 / 1.03 / 1.00 / 1.02; hot8 1.13-1.18 (the hybrid
//   keeps its 8 hot experts on 128-token tiles; as at T 1024 since session 49). From 20: uniform
//   and zipf1 gain, zipf1.5 level, hot8 loses. EP8 uniform T 320 / 384 (10.5 / 12.7 per expert)
//   1.07 / 0.96; TP8 T 320 / 384 (10 / 12) uniform 1.11 / 1.02, zipf1 0.97 / 0.91, hot8 0.49 /
//   0.64 (the hybrid's TP8 hot experts at 234 / 193 us against P2's 114 / 124). From 12.
constexpr double kF4P2MinMeanSharded = 12;
constexpr double kF4P2MinMean = 20;
// FP8 / BF16 unsharded and EP8 (I > 256). NOTE: measured on an H100 (docs/perf.md, 2026-12-07
// session 61; bench/moe/crossover.sh: the heuristic's streaming launch against --wg 1 in
// alternated sustained runs, wg / heuristic): FP8 glm5 / dsv3 uniform T 640 / 768 / 896 (20 / 24 /
// 28 per expert) 0.907 / 0.866 / 0.753 (glm5 T 640 3594 -> 3259 us), EP8 (22 / 26 / 29 per
// expert) 0.905 / 0.769 / 0.742 (T 768 582 -> 447 us); glm5 zipf1 0.857-0.889, hot8 0.826-0.920
// (EP8's skewed rows are past 32 per expert already: level). BF16 glm5 T 768 / 896 0.953 / 0.957,
// zipf1 0.937 / 0.943, hot8 0.835 / 0.801, EP8 0.862 / 0.867. Both launches read the weights near
// HBM's limit there (the full launch 2.96 TB/s at glm5 FP8 T 640, 88% of the H100's 3.35; the
// streaming one 80%), so the ratios should hold on the H200 (not measured there). Below them
// (session 47, docs/perf.md): FP8 at 12-16 per expert 0.92-0.96, BF16 at 16 1.00-1.03.
constexpr double kWgmmaMinMeanFp8 = 20;
constexpr double kWgmmaMinMeanBf16 = 24;
// P2's 64-token tiles against the one-producer kernel's 128 on the full launch: P2 below 64 slots
// per expert. NOTE: measured on an H100 (docs/perf.md, 2026-12-05 session 49; moe_bench --wg 1
// against the same with P2, interleaved, uniform routing): B/A glm5 / dsv3 / EP8 / TP8 at T 256..
// 1536 (8..48 per expert) 0.78-0.85 (glm5 T 1024 3355 -> 2632 us), at T 2048 (64 per expert,
// where experts take a second 64-token tile) 0.955 / 0.960 / 1.070 / 0.964.
constexpr int kF4P2MaxMean = 64;
// The experts of a P2 full launch that take the one-producer kernel's 128-token tiles (moe_launch:
// GroupedLaunch::f4p2_split; where, and the measurements, there).
constexpr int kF4P2SplitMin = 96;
// Unsharded NVFP4's hybrid from this many rows: from kF4P2HybridMinTokens tokens per expert, its
// big tiles on P2, split from kF4P2SplitMin slots where those experts hold kF4P2SplitShare of the
// big experts' slots (moe_launch says where it was measured).
constexpr int64_t kF4P2HybridMinRows = 192;
constexpr int kF4P2HybridMinTokens = 16;
constexpr double kF4P2SplitShare = 0.9;
namespace {
double wgmma_min_mean(const MoeShape& s) {
  const bool nvfp4 = s.fmt == GroupedFmt::kNvfp4;
  if (nvfp4 && (s.I <= 256 || s.E < kGroupedNvf8HybridMinExperts)) return kF4P2MinMeanSharded;
  if (nvfp4) return kF4P2MinMean;
  if (s.I <= 256) return s.fmt == GroupedFmt::kBf16 ? 24 : 12;  // TP8 shards
  return s.fmt == GroupedFmt::kBf16 ? kWgmmaMinMeanBf16 : kWgmmaMinMeanFp8;
}
double expected_tokens_per_expert(const MoeShape& s) {
  return s.E > 0 ? static_cast<double>(s.T * s.K) / static_cast<double>(s.E) : 1;
}
}  // namespace

MoeKernelConfig moe_streaming_config(const MoeShape& s, const MoeDeviceLimits& lim) {
  // Expected tokens per expert (T*K/E). Measured on the H200 (docs/perf.md, sweep of 2026-11-30):
  // 8-token tiles win up to ~4 tokens per expert (BF16: ~2), 16-token tiles up to ~16 (an
  // expert with more tokens takes a second tile and re-reads its weights, cheaper than wider
  // tiles' register pressure).
  // 2026-12-01 (T 384..2048 sweep and A/B): 32-token tiles from 12 tokens per expert for BF16 /
  // FP8 (T 512 BF16 5128 us against 6495 with 16-token tiles, FP8 3064 against 3378); NVFP4 keeps
  // 16-token tiles to 16 (its 16-token ring beats 32-token streaming at T 512).
  const double mean = expected_tokens_per_expert(s);
  const bool bf16 = s.fmt == GroupedFmt::kBf16, nvfp4 = s.fmt == GroupedFmt::kNvfp4;
  MoeKernelConfig c;
  c.nb = mean <= (bf16 ? 2.5 : 4.5) ? 1 : mean <= (nvfp4 ? 16 : 12) ? 2 : 4;
  if (bf16 && mean > 48) c.nb = 8;
  c.warps_per_cta = 8;
  c.ctas_per_sm = 1;
  c.pipelined = false;
  // gate_up work items (16-row blocks of the experts the call is expected to touch).
  const double touched =
      s.E > 0 ? static_cast<double>(s.E) *
                    (1.0 - std::pow(1.0 - static_cast<double>(s.K) / static_cast<double>(s.E),
                                    static_cast<double>(s.T)))
              : 0;
  const double items = touched * static_cast<double>(s.I / 16), sms = lim.sm_count;
  // down's work items (32-row blocks of the same experts)
  const double down_items = touched * static_cast<double>(s.D / 32);
  // The first of these that fits. NOTE: measured on the H200 (2026-12-01 sweep of every warps x
  // CTAs x ring choice at glm5 / dsv3 and their TP8 / EP8 shards, T 1..256, all formats;
  // docs/perf.md): the picks below are within 0.8% of the best on average (worst 9%), the
  // previous rule (8-warp CTAs; NVFP4 8 x 2, 4 x 2 for few items) 4.2% (worst 39%).
  // - NVFP4 is bound by its dequantization's instructions and latency, not by HBM: the cp.async
  //   ring with 16 warps per SM in four 4-warp CTAs (TP8 T 8 / 16 79 / 117 us against 91 / 136
  //   with two 8-warp CTAs), 12 when the items do not fill 8 per SM (glm5 T 1: 75 against 81)
  //   unless down's items then make one round of whole items and a short remainder (more than
  //   one per warp at 12 per SM, at most one at 16): the remainder's stream-K ranges of at least
  //   kStreamKMinSteps go to part of the warps, the longest 20 steps where 12 per SM average
  //   18.1 (dsv3 T 1: 8 x 224 items of 16 steps on 1584 warps, 86.7-87.0 us against 81.0-81.9
  //   with 16 per SM; its TP8 shard 35.3-35.5 against 33.2-34.5). Outside that band 12 stay
  //   (forced 12 / 16 per SM: glm5 T 1 71.7 / 75.0, TP8 T 2 38.5 / 39.6, dsv3 EP8 T 1 (3 rows)
  //   50.4 / 53.9; session 36, docs/perf.md).
  // - BF16 / FP8 register streaming in 4-warp CTAs, two per SM (1-10% ahead of one 8-warp CTA);
  //   with at most 2 items per SM (TP8 T 1..2: I / 16 = 16 items per expert) stream-K in the ring
  //   spreads the few items over every warp: TP8 T 1 BF16 47 us against 64, FP8 37 against 51.
  // - NVFP4 32-token tiles stream in 4-warp CTAs, two per SM (2026-12-01, T 768 / 1024 3604 /
  //   4705 us against 3817 / 5184 with one 8-warp CTA).
  std::vector<MoeKernelConfig> order;
  if (nvfp4 && c.nb <= 2) {
    const bool down_round = down_items > 12.0 * sms && down_items <= 16.0 * sms;
    const int few = items < 8.0 * sms && !down_round ? 3 : 4;
    order = {{c.nb, 4, few, true}, {c.nb, 8, 2, true}, {c.nb, 4, 2, true}};
  } else if (!nvfp4 && c.nb <= 2 && items <= 2.0 * sms) {
    order = {{c.nb, 4, 3, true}, {c.nb, 4, 2, false}};
  } else if (bf16 && c.nb == 1 && items > 8.0 * sms && items <= 24.0 * sms &&
             std::ceil(items / (12.0 * sms)) < std::ceil(items / (8.0 * sms))) {
    // A few rounds of items where three 4-warp CTAs per SM take one round fewer than two
    // (2026-12-01, session 9, forced 4 x 2 against 4 x 3: GLM-5 / DeepSeek-V3 with the shared
    // expert folded, T 1 (9 experts' 1,152 items) 213.6 / 242.9 -> 200.0 / 223.1 us, T 2 369.3 /
    // 413.6 -> 342.8 / 385.7; routed only T 3 -1%; TP8 T 12 222 -> 207, T 24 +1.1%, T 32 -0.2%;
    // where the rounds tie, 3 lose: TP8 T 16 +9%, EP8 T 16 +8%). FP8 streaming does not fit 3.
    order = {{1, 4, 3, false}, {1, 4, 2, false}};
  } else {
    order = {{c.nb, 4, 2, false}};
  }
  for (const MoeKernelConfig& o : order)
    if (moe_config_fits(o, s.fmt, lim)) {
      c = o;
      break;
    }
  while (!moe_config_fits(c, s.fmt, lim) && c.nb > 1) c.nb /= 2;
  if (!moe_config_fits(c, s.fmt, lim)) c.warps_per_cta = 4;
  return c;
}

MoeKernelConfig moe_heuristic_config(const MoeShape& s, const MoeDeviceLimits& lim) {
  const double mean = expected_tokens_per_expert(s);
  const bool bf16 = s.fmt == GroupedFmt::kBf16;
  const MoeKernelConfig c = moe_streaming_config(s, lim);
  // Many tokens per expert: the tensor-core tile GEMM (BF16); 128-token tiles with two CTAs per
  // SM where they fit (sm_90; one on sm_120) from 64 tokens per expert, 64-token tiles below.
  // sm_90: the warpgroup-MMA GEMM for every format once most experts fill its 128-token tiles.
  if (mean >= wgmma_min_mean(s)) {
    const MoeKernelConfig w = kMoeWgmmaConfig;
    if (moe_config_fits(w, s.fmt, lim)) return w;
  }
  if (bf16 && mean >= kTcMinTokensPerExpert) {
    const bool wide = mean >= kTcWideTokensPerExpert;
    for (int cps : {wide ? 2 : 1, 1}) {
      const MoeKernelConfig t{wide ? 16 : 8, 8, cps, false, true};
      if (moe_config_fits(t, s.fmt, lim)) return t;
    }
  }
  return c;
}

GroupedLaunch moe_launch(const MoeKernelConfig& c, const MoeDeviceLimits& lim, GroupedFmt f,
                         int64_t T, int64_t E, int64_t I) {
  GroupedLaunch l;
  l.nb = c.nb;
  l.warps_per_cta = c.warps_per_cta;
  l.ctas_per_sm = c.ctas_per_sm;
  l.sm_count = std::max(lim.sm_count, 1);
  l.pipelined = c.pipelined && c.nb != 8 && !c.tc;
  l.tc = c.tc;
  l.wgmma = c.tc && c.wgmma;
  l.cc = lim.cc;
  // Hybrid: experts with many tokens of a call go to the warpgroup-MMA GEMM (sm_90 only).
  if (!c.tc && moe_config_fits(kMoeWgmmaConfig, f, lim)) {
    l.wgmma_min_tokens =
        static_cast<int>(f == GroupedFmt::kBf16 ? kWgmmaMinTokensBf16 : kWgmmaMinTokensQuant);
    // NVFP4 from 32 tokens per expert where its big tiles are computed in FP8 (F4) and do not
    // split gate_up: an expert of 33..47 tokens takes two of the streaming GEMM's 32-token tiles,
    // i.e. streams its weights twice. NOTE: measured on an H100 (docs/perf.md, 2026-12-05 session
    // 47; moe_bench --ab "--hybrid-min 32", interleaved): glm5 uniform T 1024 / 1280 0.867 /
    // 0.745 (4138 -> 3586 us, 5003 -> 3720), zipf1 T 512..1280 0.967-0.978, zipf1.5 0.956-1.008,
    // hot8 level; EP8 uniform T 1280 0.793, zipf1 / zipf1.5 T 512 0.964 / 0.938, T 256 0.973-1.019
    // (level below T 512 everywhere); TP8 (I 256, split gate_up) 1.01-1.30: not there.
    // (From T 512 rows the big tiles are F4 on any number of experts: kGroupedNvf8HybridMinRows.
    // I unknown (0) counts as split.)
    static_assert(kGroupedNvfp4Hybrid32MinRows >= kGroupedNvf8HybridMinRows);
    if (f == GroupedFmt::kNvfp4 && T >= kGroupedNvfp4Hybrid32MinRows &&
        !grouped_hybrid_split_k(l, f, T, I))
      l.wgmma_min_tokens = 32;
    // ... and only when the qualifying experts would stream enough bytes to pay for the
    // warpgroup-MMA launches' narrow pass after the streaming one. NOTE: measured on the H200
    // (docs/perf.md, 2026-12-03 session 26; moe_bench --hybrid-min 0 / 32 / 48 / 96 / 192 / 384 on
    // glm5 / TP8 / EP8, uniform / zipf1 / zipf1.5 / hot8 routing, T 64..1024): with a few
    // qualifying experts the hybrid lost up to 1.8x (TP8 zipf1 T 64 160 -> 279 us, EP8 zipf1.5
    // T 64 144 -> 255), with many it won up to 3.4x (glm5 hot8 T 128 689 -> 205). With these
    // values the group kernel's decisions on the same routings (computed on the CPU) pick, in
    // each of those 81 skewed cases, a time within 4.5% of the better of hybrid and none.
    l.hybrid_min_bytes = f == GroupedFmt::kBf16 ? 0.9e9 : f == GroupedFmt::kNvfp4 ? 0.7e9 : 0.5e9;
    // ... or when the qualifying experts hold most of the call's 8-token tiles: the bytes bound
    // prices every tile at the expert's weights, but small experts (TP8) serve repeated tiles
    // from L2, so it kept TP8 hot8 streaming although the hybrid then leaves the streaming GEMM
    // nearly empty. NOTE: measured on the H200 (docs/perf.md, 2026-12-03 session 29; hybrid
    // always / never on glm5 / TP8 / EP8 x hot8 / zipf1 / zipf1.5 / zipf2 / zipf3 x T 48..256,
    // each row's share from the routing): FP8 won at every share >= 0.6 (TP8 hot8 T 48 / 64 / 96
    // 66 / 72 / 110 -> 60 / 62 / 67 us), tied at 0.58, lost at 0.3-0.42 (up to 24%); NVFP4 won
    // at shares >= 0.75 where the experts had more than 64 tokens (TP8 hot8 T 96 / 128 / 256
    // 100 / 123 / 178 -> 81 / 84 / 123), lost where they had at most 64 even at share 1
    // (128-token tiles half empty: TP8 hot8 T 48 65 -> 84, EP8 hot8 T 48 125 -> 170), so only
    // experts above 64 tokens count toward its share; BF16 lost at TP8 T <= 64 (the 64-token tile
    // GEMM: zipf3 T 64, share 0.6, 160 -> 210).
    if (f == GroupedFmt::kFp8Block) {
      l.hybrid_min_share = 0.6;
    } else if (f == GroupedFmt::kNvfp4) {
      l.hybrid_min_share = 0.75;
      l.hybrid_share_min_tokens = kGroupedNarrowTcTile + 1;
    }
  }
  // FP8 experts on the warpgroup-MMA GEMM take FP8 activations (E4M3 per row and 128 k): always
  // with the tc launch and in the hybrid (which runs from T 48, kWgmmaMinTokensQuant). NOTE:
  // measured on the H200 (2026-12-01, glm5 FP8, moe_bench --f8act 0|1): hot8 T 256 / 512 377 / 737
  // us with F16 activations, 366 / 594 with E4M3 (at T 64 E4M3 lost then, with the 128-row kernel
  // of the first version). Re-measured with today's kernels (docs/perf.md, 2026-12-03 session 27;
  // glm5 / TP8 / EP8, hot8 / zipf1 / uniform, T 16..128, two alternations): where the hybrid
  // engages E4M3 is 4-38% faster (glm5 hot8 T 64 263 -> 186 us, TP8 hot8 T 128 146 -> 91, EP8 hot8
  // T 64 171 -> 116, glm5 zipf1 T 128 2177 -> 2081); where the gate keeps every expert streaming it
  // costs 0.3-1% (TP8 uniform T 64 309 -> 311.5; TP8 hot8 T 64 75 -> 77.5, 3%). T 48 / 56 (session
  // 28, with the hybrid on the warp-specialized kernel): glm5 hot8 276 / 267 -> 134 / 134 us, EP8
  // hot8 176 / 172 -> 112 / 110, glm5 zipf1.5 T 56 1052 -> 961; where the gate streams everything
  // 1-5% slower (TP8 hot8 T 48 67.5 -> 71.5).
  l.fp8_act = f == GroupedFmt::kFp8Block && (l.wgmma || l.wgmma_min_tokens > 0);
  // NVFP4 experts on the warpgroup-MMA launch (prefill) computed in FP8: the warp-specialized
  // kernel's producer dequantizes the weights to E4M3, E4M3 activations (GroupedLaunch::nvfp4_f8;
  // grouped_fp8_act_bytes keeps F16 where D % 256 != 0). NOTE: measured on the H200 (docs/perf.md,
  // 2026-12-04 session 32; moe_bench --ab "--nvf8 1", uniform routing, whole layer): glm5 T 2048 /
  // 4096 / 8192 4931 / 7641 / 12358 -> 4904 / 6920 / 11564 us, dsv3 T 4096 / 8192 8872 / 14293
  // -> 8124 / 13385, TP8 T 4096 / 8192 1311 / 2191 -> 1129 / 1905, EP8 1175 / 1859 -> 1042 /
  // 1676. The hybrid's big tiles (decode calls with hot experts) from T 256 rows, and with 128 or
  // more experts on the GPU (unsharded, TP) from the hybrid's first T: there they win where
  // experts are hot and lose little where the gate streams everything (x quantized for nothing,
  // down without PDL behind the fused h quantization). NOTE: measured on the H200 (docs/perf.md,
  // 2026-12-04 session 33, with the producer's batched loads; moe_bench --ab "--nvf8 0|1", time
  // with / without): glm5 hot8 T 48 / 64 / 128 / 192 0.56 / 0.62 / 0.86 / 0.75, T 256 / 512 /
  // 1024 0.83 / 0.80 / 0.80; zipf1 T 48..128 1.00-1.01, T 192..1024 0.97-0.92; uniform T 48..1024
  // 0.997-1.010; dsv3 alike (hot8 0.56-0.86, zipf1 0.97-1.006, uniform 0.999-1.007); EP8 (32
  // experts) T 256 / 512 / 1024 hot8 0.88 / 1.04 / 0.81, zipf1 0.94 / 0.90 / 0.80, uniform
  // 1.025 / 1.012 / 1.007, but T 48..128 hot8 1.00-1.05, zipf1 1.017-1.022, uniform 1.011-1.028.
  if (f == GroupedFmt::kNvfp4 &&
      (l.wgmma || (l.wgmma_min_tokens > 0 &&
                   (T >= kGroupedNvf8HybridMinRows || E >= kGroupedNvf8HybridMinExperts))))
    l.fp8_act = l.nvfp4_f8 = true;
  // Programmatic dependent launch for FP8 from sm_90, except the warpgroup-MMA launch (prefill).
  // NOTE: measured on the H200 (docs/perf.md, 2026-12-02 session 19; the call's launches with and
  // without it, same routing, alternated): FP8 T 1..8 0.5-6% faster on glm5 / dsv3 / TP8 / EP8
  // (glm5 96.5 -> 94.6 us at T 1, EP8 56.7 -> 53.7), T 32..128 0-1.5%, T 1024 (hybrid) 0-1.7%;
  // the warpgroup-MMA launch at T 2048..8192 level to 1% slower; BF16 and NVFP4 mixed (NVFP4 glm5
  // T 1 +4.5%, TP8 T 8 +14%; BF16 glm5 / dsv3 T 2..8 +2..+6%): not for them.
  l.pdl = f == GroupedFmt::kFp8Block && lim.cc >= 90 && !l.wgmma;
  // NVFP4's full launch on two producer warpgroups (P2) below kF4P2MaxMean slots per expert
  // (run_grouped_experts decides per call by its T * K / E), and the hybrid's F4 big tiles on P2
  // at T <= 64, where no expert has more than 64 slots (GroupedLaunch::f4p2_big 1). NOTE: measured
  // on an H100 (docs/perf.md, 2026-12-05 session 49; moe_bench --ab "--f4p2-big 1", interleaved):
  // glm5 hot8 T 48 / 64 153.3 / 155.6 -> 126.0 / 128.3 us; T 128 / 256 / 384 (hot experts of 128+
  // tokens in 64-token tiles) 177 / 298 / 438 -> 197 / 361 / 522; zipf1 T 48..384 and EP8 / TP8
  // level (0.98-1.008).
  l.f4p2_max_mean = l.wgmma && l.nvfp4_f8 ? kF4P2MaxMean : 0;
  l.f4p2_big = l.nvfp4_f8 && l.wgmma_min_tokens > 0 ? 1 : 0;
  // P2's full launch split by expert (GroupedLaunch::f4p2_split): experts of kF4P2SplitMin slots or
  // more on the one-producer kernel's 128-token tiles, in a second launch per GEMM, with 128
  // experts or more on the GPU and unsharded rows (I > 256; 0, unknown, counts as sharded). NOTE:
  // measured on an H100 (docs/perf.md, 2026-12-06 session 51; moe_bench --wg 1 --ab
  // "--f4p2-split N", interleaved, T 640 / 1024 / 1536): glm5 hot8 0.81 / 0.79 / 0.74 at every N
  // of 65 / 96 / 128 (against the heuristic's hybrid at T 640..896 0.79-0.81, dsv3 alike);
  // zipf1.5 0.98 / 0.99 / 0.90 at 96 (0.99 / 0.95 / 0.91 at 65), zipf1 1.017 / 0.99 / 0.94 (65:
  // 1.022 / 0.98 / 0.93), uniform 1.002-1.003 (the empty second launch; 65: 1.021 at T 1536,
  // where experts pass 64 slots by chance). TP8 (I 256) loses under zipf1 / zipf1.5 (1.05-1.09 at
  // every N, hot8 0.84-0.91) and EP8 (32 experts) gains nowhere (uniform / zipf1 1.01-1.02 at 96,
  // zipf1 T 640 1.15 at 65): not there.
  const bool f4_unsharded = I > 256 && E >= kGroupedNvf8HybridMinExperts;
  l.f4p2_split = l.f4p2_max_mean > 0 && l.wgmma_hquant && f4_unsharded ? kF4P2SplitMin : 0;
  // Unsharded (and I > 512, where the 32-token threshold above applies) from kF4P2HybridMinRows:
  // the hybrid from kF4P2HybridMinTokens per expert with its big tiles on P2, split the same way
  // (a third list) where the experts of kF4P2SplitMin slots or more hold kF4P2SplitShare of the
  // big experts' slots (hot experts: there they fill the one-producer launch; under zipf a few of
  // them would run after P2's launch with most SMs idle). NOTE: measured on an H100 (docs/perf.md,
  // 2026-12-06 session 52; moe_bench --ab
  // "--hybrid-min 16 --f4p2-big 2 --f4p2-split 96 --f4p2-split-share 0.9" against the heuristic
  // of then, interleaved, glm5 / dsv3): T 192..576 uniform 1.00 / 1.00 at T 192..320 (dsv3 T 320
  // 1.027), 0.97-0.98 at T 384, 0.92-0.93 at T 448, 0.855-0.88 at T 512 / 576; zipf1 0.91-0.99;
  // zipf1.5 0.93-0.98 (T 512 1.013-1.016); hot8 0.965-0.984. T 128 mixed (0.976-1.012): not
  // there. Share 0.75 within 0.5% of 0.9; the split without the share lost 2-7% under zipf at
  // T 128..256 (0.96-0.98 without it), and without any split hot8 lost 16-23%.
  if (l.nvfp4_f8 && l.wgmma_min_tokens > 0 && l.wgmma_hquant && f4_unsharded &&
      T >= kF4P2HybridMinRows && !grouped_hybrid_split_k(l, f, T, I)) {
    l.wgmma_min_tokens = kF4P2HybridMinTokens;
    l.f4p2_big = 2;
    l.f4p2_split = kF4P2SplitMin;
    l.f4p2_split_share = kF4P2SplitShare;
  }
  // The hybrid's extra launches (warpgroup-MMA GEMMs over the big tiles, FP8 quantization of their
  // rows) with PDL for every format. NOTE: measured on the H200 (docs/perf.md, 2026-12-03 session
  // 26, moe_bench --hybrid-pdl 0|1 against --hybrid-min 0, uniform routing, where their lists are
  // empty): NVFP4 TP8 T 48 / 64 / 128 197 / 218 / 246 -> 183 / 203 / 231 us (no hybrid: 182 /
  // 201 / 229), EP8 188 / 201 / 238 -> 180 / 191 / 226; BF16 TP8 / EP8 3-4 us of 5; glm5 level
  // (within its noise).
  l.hybrid_pdl = l.wgmma_min_tokens > 0 && lim.cc >= 90;
  // ... and those after a GEMM's first (the big tiles after the streaming launch, the split's list
  // after P2's) wait for their predecessor at their end (GroupedLaunch::sibling_defer), computing
  // in its tail. NOTE: measured on an H100 (docs/perf.md, 2026-12-06 session 53; moe_bench --ab
  // "--defer 0", interleaved, B/A above 1: deferral faster): NVFP4 glm5 / dsv3 T 192..512 zipf1
  // 1.024-1.040, zipf1.5 1.024-1.047, uniform 0.997-1.024, hot8 1.001-1.003; FP8 EP8 zipf1 T 256 /
  // 512 1.059 / 1.091, TP8 zipf1.5 T 256 1.032, the rest 0.990-1.016; NVFP4 TP8 / EP8 T 48..384
  // 0.990-1.031 (level).
  l.sibling_defer = l.hybrid_pdl;
  // The hybrid's FP8 GEMMs on the warp-specialized kernel (GroupedLaunch::wgmma_ws; its narrow
  // instance for tiles of <= 64 tokens, grouped_hybrid_narrow). NOTE: measured on the H200
  // (docs/perf.md, 2026-12-03 session 28; moe_bench --ws 0|1 --narrow 0|1, glm5 / TP8 / EP8, hot8 /
  // zipf1.5, T 48..256, two alternations): with the full instance level to 5% faster (glm5 hot8
  // T 96 164 -> 156 us) except EP8 hot8 T 128 (+2%); the narrow instance at T 64 glm5 hot8
  // 185 -> 136 us (torch FP8 158), EP8 hot8 115 -> 97. The full launch (prefill) keeps the
  // 256-thread kernel where pairs do not apply (level there, session 23).
  l.wgmma_ws = !l.wgmma && l.wgmma_min_tokens > 0;
  // BF16's full launch (prefill) on the warp-specialized kernel's 2-CTA pairs (where FP8's pair
  // conditions hold; else its single CTAs) with weight tiles by TMA and each stage released a
  // k-block later (GroupedLaunch::bf16_tma, bf16_ws, bf16_defer). NOTE: measured on an H100
  // (docs/perf.md, 2026-12-07 session 60; moe_bench --fmt bf16 --ab, both orders, against the
  // 256-thread kernel with cp.async weights): glm5 / dsv3 T 8192 1.69 / 1.71x faster (17739 ->
  // ~10520 us, 279 -> ~470 TF/s; torch's _grouped_mm 386), EP8 1.42x, TP8 1.14x; T 2048
  // 1.03-1.08x. The hybrid's big tiles (decode-sized calls) keep the 256-thread kernel: not
  // measured there yet.
  l.bf16_tma = l.bf16_defer = l.wgmma && f == GroupedFmt::kBf16;
  l.bf16_ws = l.bf16_tma ? 2 : 0;
  // Without `pdl` (BF16, NVFP4): PDL only for gate_up after the grouping kernel and the combine
  // after down (GroupedLaunch::pdl_light), at small T. NOTE: measured on the H200 (docs/perf.md,
  // 2026-12-03 session 27; moe_bench --pdl-light 0|1, alternated 0 1 1 0, glm5 / dsv3 / TP8 /
  // EP8, T 1..128): BF16 T 1..8 0.5-2.4% faster (TP8 T 1 45.7 -> 44.6 us, EP8 83.6 -> 81.7),
  // level to 0.9% slower from T 16; NVFP4 T 1..4 0.4-4% faster (TP8 T 1 / 2 31.4 / 39.2 -> 30.3 /
  // 37.6, glm5 T 1 71.4 -> 70.6) except EP8 T 4 (about 9 rows, +3.8%), and 2-9% slower from
  // T 8 on the sharded shapes (EP8 T 128 225 -> 245).
  l.pdl_light = !l.pdl && !l.wgmma && lim.cc >= 90 &&
                ((f == GroupedFmt::kNvfp4 && T <= 4) || (f == GroupedFmt::kBf16 && T <= 8));
  // The NVFP4 ring's dynamic split where a GEMM has >= 12 rounds of long items (run_grouped_experts
  // decides per GEMM, stream_k_dynamic; the NOTE there: glm5 / dsv3 T 64 / 128 0.5-2.7% faster).
  l.ring_dynamic = f == GroupedFmt::kNvfp4;
  // gate_up's ring works out a call's tile list of <= 32 slots from the ids and issues its first
  // weight stages before it waits for the grouping kernel (run_grouped_experts takes it only where
  // gate_up has PDL). NOTE: measured on an H100 (docs/perf.md, 2026-12-05 session 45; moe_bench
  // --ab "--early-gu 1", interleaved, T 1..3): TP8 FP8 T 1 / 2 1.7-2.3% faster (glm5 T 1 40.3 ->
  // 39.3 us), NVFP4 T 1 / 2 0.3-1.2%, BF16 0-0.8%; level (within 0.9%) elsewhere.
  l.early_gate_up = true;
  // ... and down's ring the same way after gate_up, up to 16 slots. NOTE: measured on an H100
  // (docs/perf.md, 2026-12-06 session 54; the experiment's --wip-early-down 1, i.e. --early-down
  // 32, against 0, interleaved, both orders, memset and read flush, uniform / zipf1 / hot8; the
  // landed 16 against 0 alike): TP8 T 1 / 2 5-9% / 1-7% faster in every format (uniform T 1,
  // read flush: NVFP4 31.6 -> 29.0 us, FP8 34.6 -> 31.9, BF16 45.8 -> 42.9), EP8 zipf1 T 1 BF16 /
  // FP8 5%, NVFP4 glm5 / dsv3 T 1 / 2 0.5-3%, the rest level; at 24 / 32 slots TP8 NVFP4 uniform /
  // zipf1 lost up to 6% (hot8 won 6-7%): not there.
  l.early_down_max_slots = 16;
  // The grouping yields its SMs to gate_up's ring (no early trigger, a carveout for the ring's
  // CTAs) where gate_up has PDL after it and is the NVFP4 ring (pdl_light: NVFP4 T <= 4). NOTE:
  // measured on an H100 (docs/perf.md, 2026-12-06 session 56; experiments/2026-12-06-group-
  // placement.sh, interleaved, both orders, read flush, T 1..4 / 8 / 64): NVFP4 T 1..4 up to 12%
  // faster (TP8 T 1 / 3 / 4 1.116 / 1.068 / 1.042, EP8 T 1 1.058, glm5 T 1 / 3 / 4 1.02-1.03,
  // dsv3 1.00-1.03; the worst cell 0.998); the no-launch bound of the grouping (session 56's
  // --wip 4) was 1.03-1.24 there. The late trigger alone cost the FP8 / BF16 rings up to 4% (TP8
  // FP8 T 1), the carveout alone was level: not there.
  l.group_yields = l.pdl_light && f == GroupedFmt::kNvfp4;
  return l;
}

int64_t moe_shared_fold_max_tokens(GroupedFmt f) {
  return static_cast<int64_t>(f == GroupedFmt::kBf16 ? kWgmmaMinTokensBf16 : kWgmmaMinTokensQuant) -
         1;
}

GroupedLaunch moe_shared_alone_launch(int64_t T, int64_t D, int64_t I, GroupedFmt f,
                                      const MoeDeviceLimits& lim) {
  if (T < 256) {
    const int nb = T <= 8 ? 1 : T <= 16 ? 2 : 4;
    for (const MoeKernelConfig& c :
         {MoeKernelConfig{nb, 4, 3, true}, MoeKernelConfig{nb, 4, 2, true}})
      if (moe_config_fits(c, f, lim)) {
        GroupedLaunch l = moe_launch(c, lim, f, T);
        l.wgmma_min_tokens = 0;
        return l;
      }
  }
  return moe_launch(moe_heuristic_config(MoeShape{T, D, I, 1, 1, f}, lim), lim, f, T);
}

GroupedSkSizes moe_sk_sizes(const std::vector<MoeKernelConfig>& configs, const MoeDeviceLimits& lim,
                            GroupedFmt f) {
  GroupedSkSizes m;
  for (const MoeKernelConfig& c : configs) {
    const GroupedSkSizes z = grouped_sk_sizes(moe_launch(c, lim, f, 0));
    m.warps = std::max(m.warps, z.warps);
    m.partial_floats = std::max(m.partial_floats, z.partial_floats);
  }
  return m;
}

const char* moe_fmt_name(GroupedFmt f) {
  switch (f) {
    case GroupedFmt::kBf16:
      return "bf16";
    case GroupedFmt::kFp8Block:
      return "fp8_block128";
    case GroupedFmt::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

int64_t moe_t_bucket(int64_t T) {
  int64_t b = 1;
  while (b < T) b <<= 1;
  return b;
}

std::string moe_tune_key(const DeviceInfo& d, const MoeShape& s) {
  std::ostringstream o;
  o << d.name << "|sm_" << d.cc_major << d.cc_minor << "|D" << s.D << "|I" << s.I << "|E" << s.E
    << "|K" << s.K << "|T<=" << moe_t_bucket(s.T) << "|" << moe_fmt_name(s.fmt);
  return o.str();
}

namespace {

// `v[field]` as an int if it is a JSON integer in int32 range (a float such as 2.5 or 1e300, a
// string, or 2^32 + 1 would otherwise be truncated or throw).
std::optional<int> int32_field(const nlohmann::json& v, const char* field) {
  if (!v.is_object()) return std::nullopt;
  const auto it = v.find(field);
  if (it == v.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT32_MAX)) return std::nullopt;
    return static_cast<int>(u);
  }
  const int64_t i = it->get<int64_t>();
  if (i < INT32_MIN || i > INT32_MAX) return std::nullopt;
  return static_cast<int>(i);
}

}  // namespace

Result<MoeTuneCache> MoeTuneCache::load(const std::string& path) {
  MoeTuneCache c;
  std::ifstream in(path);
  if (!in) return c;  // no cache yet: heuristics
  const std::string rerun = "; delete it and run `moengine tune-moe --model-path DIR --cache " +
                            path + "` again, or leave it out to use the heuristic";
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& ex) {
    return invalid_argument("MoE tune cache " + path + " is not JSON (" + ex.what() + ")" + rerun);
  }
  const nlohmann::json* version = j.is_object() && j.contains("version") ? &j["version"] : nullptr;
  if (version == nullptr || !version->is_number_integer() || version->get<int64_t>() != 1)
    return invalid_argument("MoE tune cache " + path + " has version " +
                            (version ? version->dump() : std::string("(none)")) +
                            "; this moengine reads version 1" + rerun);
  if (!j.contains("entries") || !j["entries"].is_object())
    return invalid_argument("MoE tune cache " + path + " has no \"entries\" object" + rerun);
  try {
    for (const auto& [key, v] : j["entries"].items()) {
      Entry e;
      for (auto [field, out] :
           {std::pair{"nb", &e.cfg.nb}, std::pair{"warps_per_cta", &e.cfg.warps_per_cta},
            std::pair{"ctas_per_sm", &e.cfg.ctas_per_sm}}) {
        const std::optional<int> x = int32_field(v, field);
        if (!x)
          return invalid_argument("MoE tune cache " + path + ": entry '" + key +
                                  "' needs an integer \"" + field + "\"" + rerun);
        *out = *x;
      }
      // Optional fields: a value of another type (e.g. "pipelined": "yes") throws below.
      e.cfg.pipelined = v.value("pipelined", false);
      e.cfg.tc = v.value("tc", false);
      e.cfg.wgmma = v.value("wgmma", false);
      e.us = v.value("us", 0.0);
      c.entries_[key] = e;
    }
  } catch (const std::exception& ex) {
    return invalid_argument("MoE tune cache " + path + " is not valid (" + ex.what() + ")" + rerun);
  }
  return c;
}

Status MoeTuneCache::save(const std::string& path) const {
  nlohmann::json j;
  j["version"] = 1;
  j["entries"] = nlohmann::json::object();
  for (const auto& [key, e] : entries_)
    j["entries"][key] = {{"nb", e.cfg.nb},
                         {"warps_per_cta", e.cfg.warps_per_cta},
                         {"ctas_per_sm", e.cfg.ctas_per_sm},
                         {"pipelined", e.cfg.pipelined},
                         {"tc", e.cfg.tc},
                         {"wgmma", e.cfg.wgmma},
                         {"us", e.us}};
  std::ofstream out(path);
  if (!out) return invalid_argument("cannot write MoE tune cache " + path);
  out << j.dump(2) << "\n";
  return Status::ok_status();
}

std::vector<std::string> MoeTuneCache::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [key, e] : entries_) out.push_back(key);
  return out;
}

std::optional<MoeKernelConfig> MoeTuneCache::find(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second.cfg;
}

void MoeTuneCache::put(const std::string& key, const MoeKernelConfig& c, double us) {
  entries_[key] = Entry{c, us};
}

MoeKernelConfig MoeTuneCache::select(const DeviceInfo& d, const MoeShape& s) const {
  const MoeDeviceLimits lim = moe_limits(d);
  if (auto c = find(moe_tune_key(d, s)); c && moe_config_fits(*c, s.fmt, lim)) return *c;
  return moe_heuristic_config(s, lim);
}

}  // namespace moe::cuda
