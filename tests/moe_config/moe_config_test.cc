// MoE kernel configuration selection (CPU only): every configuration the selector can return
// fits the device it was chosen for, on sm_120's shared-memory limit (101,376 B per block)
// and sm_90's (232,448 B); the tune cache round-trips through JSON and falls back to the
// heuristic for missing or no-longer-fitting entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/kernels/moe_grouped/moe_grouped_experts.h"
#include "backends/cuda/moe_config/moe_config.h"

namespace moe::cuda {
namespace {

MoeDeviceLimits limits(int64_t smem, int sms) {
  MoeDeviceLimits l;
  l.smem_per_block_optin = smem;
  l.sm_count = sms;
  return l;
}

DeviceInfo device(const char* name, int major, int minor, int64_t smem, int sms) {
  DeviceInfo d;
  d.name = name;
  d.cc_major = major;
  d.cc_minor = minor;
  d.smem_per_block_optin = smem;
  d.sm_count = sms;
  return d;
}

const GroupedFmt kFmts[] = {GroupedFmt::kBf16, GroupedFmt::kFp8Block, GroupedFmt::kNvfp4};

TEST(MoeConfig, EveryReturnedConfigFitsSm120AndSm90) {
  MoeDeviceLimits sm90 = limits(232448, 132), sm120 = limits(101376, 188);
  sm90.cc = 90;
  sm120.cc = 120;
  for (const MoeDeviceLimits& lim : {limits(101376, 188), limits(232448, 132), sm90, sm120})
    for (GroupedFmt f : kFmts)
      for (int64_t T : {1, 2, 7, 8, 32, 64, 128, 256, 1000, 4096, 8192})
        for (int64_t E : {8, 32, 256})
          for (int64_t I : {256, 2048}) {
            const MoeShape s{T, 6144, I, E, 8, f};
            const MoeKernelConfig h = moe_heuristic_config(s, lim);
            EXPECT_TRUE(moe_config_fits(h, f, lim)) << moe_fmt_name(f) << " T " << T;
            EXPECT_LE(h.smem_bytes(), lim.smem_per_block_optin);
            const auto cands = moe_candidate_configs(s, lim);
            EXPECT_FALSE(cands.empty());
            for (const MoeKernelConfig& c : cands) {
              EXPECT_TRUE(moe_config_fits(c, f, lim));
              EXPECT_LE(c.smem_bytes() * c.ctas_per_sm, lim.smem_per_block_optin);
              EXPECT_LE(int64_t{c.regs_per_thread(f)} * c.threads() * c.ctas_per_sm,
                        lim.regs_per_sm);
            }
          }
}

// The shared expert: folded below the hybrid's threshold, and its launch when it runs alone fits
// every device, with no hybrid below 256 tokens.
TEST(MoeConfig, SharedExpertFoldThresholdAndAloneLaunchFit) {
  MoeDeviceLimits sm90 = limits(232448, 132), sm120 = limits(101376, 188);
  sm90.cc = 90;
  sm120.cc = 120;
  EXPECT_EQ(moe_shared_fold_max_tokens(GroupedFmt::kBf16), 31);
  EXPECT_EQ(moe_shared_fold_max_tokens(GroupedFmt::kFp8Block), 47);
  EXPECT_EQ(moe_shared_fold_max_tokens(GroupedFmt::kNvfp4), 47);
  for (const MoeDeviceLimits& lim : {sm90, sm120})
    for (GroupedFmt f : kFmts)
      for (int64_t T : {1, 9, 17, 64, 255, 256, 4096}) {
        const GroupedLaunch l = moe_shared_alone_launch(T, 6144, 2048, f, lim);
        const MoeKernelConfig c{l.nb, l.warps_per_cta, l.ctas_per_sm, l.pipelined, l.tc, l.wgmma};
        EXPECT_TRUE(moe_config_fits(c, f, lim)) << moe_fmt_name(f) << " T " << T;
        if (T < 256) {
          EXPECT_EQ(l.wgmma_min_tokens, 0) << moe_fmt_name(f) << " T " << T;
          EXPECT_TRUE(l.pipelined && !l.tc) << moe_fmt_name(f) << " T " << T;
          EXPECT_EQ(l.nb, T <= 8 ? 1 : T <= 16 ? 2 : 4);
        }
      }
}

TEST(MoeConfig, RejectsWhatDoesNotFit) {
  const MoeDeviceLimits lim = limits(232448, 132);
  EXPECT_FALSE(moe_config_fits({8, 8, 1, false}, GroupedFmt::kNvfp4, lim));  // no nb 8 nvfp4
  EXPECT_FALSE(moe_config_fits({8, 8, 1, true}, GroupedFmt::kBf16, lim));    // no nb 8 pipe
  EXPECT_FALSE(moe_config_fits({1, 8, 4, false}, GroupedFmt::kBf16, lim));   // registers
  EXPECT_FALSE(moe_config_fits({3, 8, 1, false}, GroupedFmt::kBf16, lim));
  EXPECT_TRUE(moe_config_fits({1, 8, 1, false}, GroupedFmt::kBf16, lim));
}

// The tensor-core tile GEMM family (tc): BF16 only, 64- or 128-token tiles, 8 warps, not
// pipelined; 96 KB of shared memory per 128-token CTA: two per SM on sm_90, one on sm_120.
TEST(MoeConfig, TileGemmFamilyFitsSm90AndSm120) {
  const MoeDeviceLimits sm90 = limits(232448, 132), sm120 = limits(101376, 188);
  const GroupedFmt bf16 = GroupedFmt::kBf16;
  EXPECT_TRUE(moe_config_fits({16, 8, 2, false, true}, bf16, sm90));
  EXPECT_TRUE(moe_config_fits({8, 8, 2, false, true}, bf16, sm90));
  EXPECT_FALSE(moe_config_fits({16, 8, 3, false, true}, bf16, sm90));  // 3 x 96 KB
  EXPECT_TRUE(moe_config_fits({16, 8, 1, false, true}, bf16, sm120));
  EXPECT_FALSE(moe_config_fits({16, 8, 2, false, true}, bf16, sm120));  // 2 x 96 KB
  EXPECT_FALSE(moe_config_fits({16, 8, 1, false, true}, GroupedFmt::kFp8Block, sm90));
  EXPECT_FALSE(moe_config_fits({16, 8, 1, false, true}, GroupedFmt::kNvfp4, sm90));
  EXPECT_FALSE(moe_config_fits({4, 8, 1, false, true}, bf16, sm90));    // tile of 32
  EXPECT_FALSE(moe_config_fits({16, 8, 1, true, true}, bf16, sm90));    // pipelined
  EXPECT_FALSE(moe_config_fits({16, 4, 1, false, true}, bf16, sm90));   // 4 warps
  EXPECT_FALSE(moe_config_fits({16, 8, 1, false, false}, bf16, sm90));  // nb 16 needs tc
  EXPECT_EQ(MoeKernelConfig({16, 8, 1, false, true}).smem_bytes(), 98304);
  EXPECT_EQ(MoeKernelConfig({8, 8, 1, false, true}).smem_bytes(), 73728);
  for (const MoeDeviceLimits& lim : {sm90, sm120}) {
    const MoeShape prefill{4096, 6144, 2048, 256, 8, bf16};
    const MoeKernelConfig h = moe_heuristic_config(prefill, lim);
    EXPECT_TRUE(h.tc);
    EXPECT_EQ(h.nb, 16);
    EXPECT_EQ(h.ctas_per_sm, lim.smem_per_block_optin >= 2 * 98304 ? 2 : 1);
    EXPECT_TRUE(moe_config_fits(h, bf16, lim));
    int tc = 0;
    for (const MoeKernelConfig& c : moe_candidate_configs(prefill, lim)) tc += c.tc ? 1 : 0;
    EXPECT_EQ(tc, lim.smem_per_block_optin >= 2 * 98304 ? 4 : 2);
    for (GroupedFmt f : {GroupedFmt::kFp8Block, GroupedFmt::kNvfp4}) {
      const MoeShape q{4096, 6144, 2048, 256, 8, f};
      EXPECT_FALSE(moe_heuristic_config(q, lim).tc);
      for (const MoeKernelConfig& c : moe_candidate_configs(q, lim)) EXPECT_FALSE(c.tc);
    }
  }
  // Few tokens per expert keep the register-streaming kernels.
  EXPECT_FALSE(moe_heuristic_config({256, 6144, 2048, 256, 8, bf16}, sm90).tc);
}

// The Hopper warpgroup-MMA GEMM (tc + wgmma): sm_90 only (cc 90: sm_90a code), 128-token tiles,
// one 256-thread CTA per SM, every format. The heuristic takes it for the unsharded shape at 4096
// tokens (WarpgroupMmaThresholdsByShape: where it starts); a streaming launch on sm_90 carries the
// per-expert hybrid threshold.
TEST(MoeConfig, WarpgroupMmaOnlyOnSm90) {
  MoeDeviceLimits sm90 = limits(232448, 132), sm120 = limits(101376, 188);
  sm90.cc = 90;
  sm120.cc = 120;
  const MoeKernelConfig w{16, 8, 1, false, true, true};
  // Its largest kernel: NVFP4 in FP8 on two producer warpgroups, 4 stages of 40 KB, 3 raw stages
  // of 20 KB, 2 KB of tables.
  EXPECT_EQ(w.smem_bytes(), 4 * (64 + 256) * 128 + 3 * 20480 + 2048 + 64 + 1024);
  EXPECT_GT(w.smem_bytes(), grouped_wgmma_f4_smem_bytes());
  EXPECT_GT(w.smem_bytes(), grouped_wgmma_smem_bytes(256));
  for (GroupedFmt f : kFmts) {
    EXPECT_TRUE(moe_config_fits(w, f, sm90)) << moe_fmt_name(f);
    EXPECT_FALSE(moe_config_fits(w, f, sm120));
    EXPECT_FALSE(moe_config_fits(w, f, limits(232448, 132)));               // cc unknown
    EXPECT_FALSE(moe_config_fits({8, 8, 1, false, true, true}, f, sm90));   // 64-token tiles
    EXPECT_FALSE(moe_config_fits({16, 8, 2, false, true, true}, f, sm90));  // two CTAs per SM
    EXPECT_FALSE(moe_config_fits({2, 8, 1, false, false, true}, f, sm90));  // wgmma without tc
    const MoeShape prefill{4096, 6144, 2048, 256, 8, f};
    EXPECT_EQ(moe_heuristic_config(prefill, sm90), w) << moe_fmt_name(f);
    EXPECT_FALSE(moe_heuristic_config(prefill, sm120).wgmma);
    int wg = 0;
    for (const MoeKernelConfig& c : moe_candidate_configs(prefill, sm90)) wg += c.wgmma ? 1 : 0;
    EXPECT_EQ(wg, 1);
    for (const MoeKernelConfig& c : moe_candidate_configs(prefill, sm120)) EXPECT_FALSE(c.wgmma);
    const MoeKernelConfig d = moe_heuristic_config({64, 6144, 2048, 256, 8, f}, sm90);
    EXPECT_FALSE(d.tc);
    EXPECT_EQ(moe_launch(d, sm90, f, 64).wgmma_min_tokens, f == GroupedFmt::kBf16 ? 32 : 48);
    EXPECT_EQ(moe_launch(d, sm120, f, 64).wgmma_min_tokens, 0);
    EXPECT_EQ(moe_launch(w, sm90, f, 4096).wgmma_min_tokens, 0);
    EXPECT_TRUE(moe_launch(w, sm90, f, 4096).wgmma);
    // E4M3 activations: FP8 experts on the warpgroup-MMA GEMM (tc launch; the hybrid, which runs
    // from T 48: grouped_fp8_act_bytes is 0 below); NVFP4 experts on the tc launch, and in the
    // hybrid from T 256 rows, computed in FP8 (nvfp4_f8), where down's D takes 256-row CTAs and
    // the hybrid does not split gate_up (I > 512).
    const bool fp8 = f == GroupedFmt::kFp8Block, nv = f == GroupedFmt::kNvfp4;
    EXPECT_EQ(moe_launch(w, sm90, f, 4096).fp8_act, fp8 || nv) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(w, sm90, f, 4096).nvfp4_f8, nv) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm90, f, 255).nvfp4_f8) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm90, f, 255, 32).nvfp4_f8) << moe_fmt_name(f);  // EP8's experts
    EXPECT_EQ(moe_launch(d, sm90, f, 256).nvfp4_f8, nv) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 256, 32).nvfp4_f8, nv) << moe_fmt_name(f);
    // ... and from the hybrid's first T with 128 experts or more on the GPU.
    EXPECT_EQ(moe_launch(d, sm90, f, 48, 256).nvfp4_f8, nv) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 48, 128).fp8_act, fp8 || nv) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm90, f, 48, 127).nvfp4_f8) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm120, f, 48, 256).nvfp4_f8) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm120, f, 256).nvfp4_f8) << moe_fmt_name(f);
    // NVFP4's full launch on two producer warpgroups below 64 slots per expert; the hybrid's F4
    // big tiles on them at T <= 64 (mode 1) where they are F4; no other format or launch.
    EXPECT_EQ(moe_launch(w, sm90, f, 4096).f4p2_max_mean, nv ? 64 : 0) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 256).f4p2_max_mean, 0) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 1024).f4p2_big, nv ? 1 : 0) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 48, 256).f4p2_big, nv ? 1 : 0) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 48, 127).f4p2_big, 0) << moe_fmt_name(f);  // F16 big tiles
    EXPECT_EQ(moe_launch(w, sm90, f, 4096).f4p2_big, 0) << moe_fmt_name(f);     // no hybrid
    EXPECT_EQ(moe_launch(d, sm120, f, 1024).f4p2_big, 0) << moe_fmt_name(f);
    // P2's full launch split by expert with 128 experts or more and unsharded rows only.
    EXPECT_EQ(moe_launch(w, sm90, f, 1024, 256, 2048).f4p2_split, nv ? 96 : 0) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(w, sm90, f, 1024, 128, 512).f4p2_split, nv ? 96 : 0) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(w, sm90, f, 1024, 256, 256).f4p2_split, 0) << moe_fmt_name(f);  // TP8
    EXPECT_EQ(moe_launch(w, sm90, f, 1024, 32, 2048).f4p2_split, 0) << moe_fmt_name(f);  // EP8
    EXPECT_EQ(moe_launch(w, sm90, f, 1024).f4p2_split, 0) << moe_fmt_name(f);  // E, I unknown
    // ... and the unsharded hybrid from T 192: from 16 tokens per expert, its big tiles on P2,
    // split the same way where the experts of 96 slots hold 0.9 of the big experts' slots.
    for (int64_t T : {192, 256, 1024}) {
      const GroupedLaunch h = moe_launch(d, sm90, f, T, 256, 2048);
      const std::string at = std::string(moe_fmt_name(f)) + " T " + std::to_string(T);
      EXPECT_EQ(h.wgmma_min_tokens, nv ? 16 : f == GroupedFmt::kBf16 ? 32 : 48) << at;
      EXPECT_EQ(h.f4p2_big, nv ? 2 : 0) << at;
      EXPECT_EQ(h.f4p2_split, nv ? 96 : 0) << at;
      EXPECT_EQ(h.f4p2_split_share, nv ? 0.9 : 0.0) << at;
    }
    for (const auto& [T, E, I] : {std::tuple<int64_t, int64_t, int64_t>{191, 256, 2048},
                                  {256, 256, 256},
                                  {256, 256, 512},
                                  {256, 32, 2048},
                                  {256, 0, 0}}) {
      // below T 192, TP8, I 512 (the hybrid's split gate_up), EP8, E and I unknown
      const GroupedLaunch h = moe_launch(d, sm90, f, T, E, I);
      const std::string at = std::string(moe_fmt_name(f)) + " T " + std::to_string(T) + " E " +
                             std::to_string(E) + " I " + std::to_string(I);
      EXPECT_EQ(h.wgmma_min_tokens, f == GroupedFmt::kBf16 ? 32 : 48) << at;
      EXPECT_EQ(h.f4p2_big, nv && (T >= 256 || E >= 128) ? 1 : 0) << at;
      EXPECT_EQ(h.f4p2_split, 0) << at;
      EXPECT_EQ(h.f4p2_split_share, 0.0) << at;
    }
    EXPECT_EQ(moe_launch(d, sm120, f, 256, 256, 2048).f4p2_split, 0) << moe_fmt_name(f);
    EXPECT_EQ(grouped_fp8_act_bytes(moe_launch(d, sm90, f, 256), f, 256, 6144, 2048, 8) > 0,
              fp8 || nv)
        << moe_fmt_name(f);
    EXPECT_EQ(grouped_fp8_act_bytes(moe_launch(d, sm90, f, 256), f, 256, 6144, 256, 8) > 0, fp8)
        << moe_fmt_name(f) << ": the hybrid splits gate_up of I 256 (F16 kernel)";
    EXPECT_EQ(grouped_fp8_act_bytes(moe_launch(w, sm90, f, 4096), f, 4096, 6144, 2048, 8) > 0,
              fp8 || nv)
        << moe_fmt_name(f);
    EXPECT_EQ(grouped_fp8_act_bytes(moe_launch(w, sm90, f, 4096), f, 4096, 6016, 2048, 8) > 0, fp8)
        << moe_fmt_name(f) << ": D % 256 != 0";
    EXPECT_EQ(moe_launch(d, sm90, f, 64).fp8_act, fp8) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 256).fp8_act, fp8 || nv) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 48).fp8_act, fp8) << moe_fmt_name(f);
    EXPECT_EQ(grouped_fp8_act_bytes(moe_launch(d, sm90, f, 48), f, 48, 6144, 2048, 8) > 0, fp8)
        << moe_fmt_name(f);
    EXPECT_EQ(grouped_fp8_act_bytes(moe_launch(d, sm90, f, 47), f, 47, 6144, 2048, 8), 0)
        << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm120, f, 4096).fp8_act) << moe_fmt_name(f);
    // Programmatic dependent launch: FP8 from sm_90 (sm_120 too) on the streaming / ring launches
    // and the hybrid, not the warpgroup-MMA launch; not without a compute capability.
    EXPECT_EQ(moe_launch(d, sm90, f, 4).pdl, fp8) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 1024).pdl, fp8) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(w, sm90, f, 4096).pdl) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm120, f, 4).pdl, fp8) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, limits(232448, 132), f, 4).pdl) << moe_fmt_name(f);
    // The hybrid's own launches with PDL for every format, wherever there is a hybrid.
    EXPECT_TRUE(moe_launch(d, sm90, f, 64).hybrid_pdl) << moe_fmt_name(f);
    // ... the launches after a GEMM's first waiting for their predecessor at their end.
    EXPECT_TRUE(moe_launch(d, sm90, f, 64).sibling_defer) << moe_fmt_name(f);
    // ... and engages only for enough qualifying bytes (0.4..1.2 GB, measured per format).
    const double hb = moe_launch(d, sm90, f, 64).hybrid_min_bytes;
    EXPECT_GE(hb, 0.4e9) << moe_fmt_name(f);
    EXPECT_LE(hb, 1.2e9) << moe_fmt_name(f);
    // In 8-token tiles of an expert's bytes (the group kernel's unit): GLM-5 and its TP8 shard.
    const GroupedLaunch hl = moe_launch(d, sm90, f, 64);
    const double bpw = f == GroupedFmt::kBf16 ? 2.0 : f == GroupedFmt::kNvfp4 ? 0.5625 : 1.0;
    for (int64_t I : {2048, 256}) {
      const int n = grouped_hybrid_min_tiles(hl, f, 6144, I);
      EXPECT_GE(n * 3.0 * 6144 * I * bpw, hb) << moe_fmt_name(f) << " I " << I;
      EXPECT_LT((n - 1) * 3.0 * 6144 * I * bpw, hb) << moe_fmt_name(f) << " I " << I;
    }
    EXPECT_EQ(grouped_hybrid_min_tiles(hl, f, 6144, 256), f == GroupedFmt::kNvfp4      ? 264
                                                          : f == GroupedFmt::kFp8Block ? 106
                                                                                       : 96)
        << moe_fmt_name(f);
    GroupedLaunch off = hl, huge = hl, tiny = hl;
    off.hybrid_min_bytes = 0;
    huge.hybrid_min_bytes = 1e30;
    tiny.hybrid_min_bytes = 1;
    EXPECT_EQ(grouped_hybrid_min_tiles(off, f, 6144, 2048), 0);
    EXPECT_EQ(grouped_hybrid_min_tiles(huge, f, 6144, 2048), 1000000000);
    EXPECT_EQ(grouped_hybrid_min_tiles(tiny, f, 6144, 2048), 1);
    // The share criterion in thousandths, rounded up, within 1..1000; nothing without the bytes
    // bound or without a share.
    GroupedLaunch sh = hl;
    sh.hybrid_min_share = 0.5;
    EXPECT_EQ(grouped_hybrid_min_share(sh), 500);
    sh.hybrid_min_share = 0.4501;
    EXPECT_EQ(grouped_hybrid_min_share(sh), 451);
    sh.hybrid_min_share = 1e-9;
    EXPECT_EQ(grouped_hybrid_min_share(sh), 1);
    sh.hybrid_min_share = 3;
    EXPECT_EQ(grouped_hybrid_min_share(sh), 1000);
    sh.hybrid_min_share = 0;
    EXPECT_EQ(grouped_hybrid_min_share(sh), 0);
    sh.hybrid_min_share = 0.5;
    sh.hybrid_min_bytes = 0;
    EXPECT_EQ(grouped_hybrid_min_share(sh), 0);
    // moe_launch's share (measured): FP8 over its qualifying experts, NVFP4 over those above 64
    // tokens, never BF16.
    const double share = f == GroupedFmt::kFp8Block ? 0.6 : f == GroupedFmt::kNvfp4 ? 0.75 : 0.0;
    EXPECT_EQ(moe_launch(d, sm90, f, 64).hybrid_min_share, share) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 1024).hybrid_min_share, share) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 64).hybrid_share_min_tokens, f == GroupedFmt::kNvfp4 ? 65 : 0)
        << moe_fmt_name(f);
    // Split-K of the hybrid's gate_up: experts of at most 4 blocks of 256 gate_up rows (TP8's
    // I = 256, not GLM-5's 2048), not BF16's narrow big tiles, not when switched off.
    EXPECT_TRUE(grouped_hybrid_split_k(hl, f, 128, 256)) << moe_fmt_name(f);
    EXPECT_TRUE(grouped_hybrid_split_k(hl, f, 128, 512)) << moe_fmt_name(f);
    EXPECT_FALSE(grouped_hybrid_split_k(hl, f, 128, 640)) << moe_fmt_name(f);
    EXPECT_FALSE(grouped_hybrid_split_k(hl, f, 128, 2048)) << moe_fmt_name(f);
    EXPECT_FALSE(grouped_hybrid_split_k(hl, f, 128, 320)) << moe_fmt_name(f);  // I % 128
    EXPECT_EQ(grouped_hybrid_split_k(hl, f, 64, 256), f != GroupedFmt::kBf16) << moe_fmt_name(f);
    GroupedLaunch nosplit = hl;
    nosplit.hybrid_split_k = false;
    EXPECT_FALSE(grouped_hybrid_split_k(nosplit, f, 128, 256)) << moe_fmt_name(f);
    // The hybrid's big tiles on the warp-specialized kernel (FP8 with tensor maps; a flag the
    // other formats' launches ignore); the full warpgroup-MMA launch keeps the 256-thread one.
    EXPECT_TRUE(moe_launch(d, sm90, f, 64).wgmma_ws) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(w, sm90, f, 4096).wgmma_ws) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm120, f, 64).wgmma_ws) << moe_fmt_name(f);
    // BF16's full launch on the warp-specialized pair kernels with TMA weights and the deferred
    // release; the hybrid's big tiles and the other formats' launches without them.
    const GroupedLaunch full = moe_launch(w, sm90, f, 4096), hyb = moe_launch(d, sm90, f, 64);
    const bool is_bf16 = f == GroupedFmt::kBf16;
    EXPECT_EQ(full.bf16_tma, is_bf16) << moe_fmt_name(f);
    EXPECT_EQ(full.bf16_ws, is_bf16 ? 2 : 0) << moe_fmt_name(f);
    EXPECT_EQ(full.bf16_defer, is_bf16) << moe_fmt_name(f);
    EXPECT_FALSE(hyb.bf16_tma || hyb.bf16_defer || hyb.bf16_ws != 0) << moe_fmt_name(f);
    // Their narrow instance exactly when no big tile can exceed 64 tokens (T <= 64).
    EXPECT_TRUE(grouped_hybrid_narrow(hl, 48));
    EXPECT_TRUE(grouped_hybrid_narrow(hl, 64));
    EXPECT_FALSE(grouped_hybrid_narrow(hl, 65));
    EXPECT_FALSE(grouped_hybrid_narrow(hl, 1024));
    GroupedLaunch forced = hl;
    forced.wgmma_narrow = 0;
    EXPECT_FALSE(grouped_hybrid_narrow(forced, 48));
    forced.wgmma_narrow = 1;
    EXPECT_TRUE(grouped_hybrid_narrow(forced, 4096));
    // BF16's narrow big tiles on the 64-token tile GEMM: only at T <= 64, even when forced.
    EXPECT_EQ(grouped_hybrid_tile_gemm(hl, f, 64), f == GroupedFmt::kBf16) << moe_fmt_name(f);
    EXPECT_FALSE(grouped_hybrid_tile_gemm(hl, f, 65)) << moe_fmt_name(f);
    EXPECT_FALSE(grouped_hybrid_tile_gemm(forced, f, 65)) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm120, f, 64).hybrid_pdl) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm120, f, 64).sibling_defer) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(w, sm90, f, 4096).hybrid_pdl) << moe_fmt_name(f);
    // PDL for gate_up and the combine only: BF16 up to 8 tokens, NVFP4 up to 4 (measured), never
    // with `pdl` (FP8) or the warpgroup-MMA launch.
    const bool bf16 = f == GroupedFmt::kBf16, nvfp4 = f == GroupedFmt::kNvfp4;
    EXPECT_EQ(moe_launch(d, sm90, f, 1).pdl_light, bf16 || nvfp4) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 4).pdl_light, bf16 || nvfp4) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 5).pdl_light, bf16) << moe_fmt_name(f);
    EXPECT_EQ(moe_launch(d, sm90, f, 8).pdl_light, bf16) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm90, f, 9).pdl_light) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, limits(232448, 132), f, 1).pdl_light) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(w, sm90, f, 4).pdl_light) << moe_fmt_name(f);
    const GroupedLaunch small = moe_launch(d, sm90, f, 1);
    EXPECT_FALSE(small.pdl && small.pdl_light) << moe_fmt_name(f);
    // gate_up's tile list before the wait: on (run_grouped_experts takes it where it applies).
    EXPECT_TRUE(small.early_gate_up) << moe_fmt_name(f);
    EXPECT_EQ(small.early_down_max_slots, 16) << moe_fmt_name(f);
    // The grouping yields its SMs to gate_up's NVFP4 ring where gate_up has PDL after it.
    EXPECT_EQ(small.group_yields, nvfp4) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, sm90, f, 5).group_yields) << moe_fmt_name(f);
    EXPECT_FALSE(moe_launch(d, limits(232448, 132), f, 1).group_yields) << moe_fmt_name(f);
  }
  // 32 tokens per expert: every format takes wgmma on sm_90 (NVFP4 with two producer warpgroups
  // from 20, measured, moe_config.cc), none on sm_120; at 19 NVFP4 keeps streaming 32-token tiles
  // with the hybrid; 16 per expert: 32-token tiles for BF16 and FP8.
  for (GroupedFmt f : kFmts) {
    EXPECT_TRUE(moe_heuristic_config({1024, 6144, 2048, 256, 8, f}, sm90).wgmma) << moe_fmt_name(f);
    EXPECT_FALSE(moe_heuristic_config({1024, 6144, 2048, 256, 8, f}, sm120).wgmma);
  }
  EXPECT_TRUE(moe_heuristic_config({640, 6144, 2048, 256, 8, GroupedFmt::kNvfp4}, sm90).wgmma);
  const MoeKernelConfig h =
      moe_heuristic_config({608, 6144, 2048, 256, 8, GroupedFmt::kNvfp4}, sm90);
  EXPECT_EQ(h, (MoeKernelConfig{4, 4, 2, false}));
  EXPECT_EQ(moe_launch(h, sm90, GroupedFmt::kNvfp4, 608, 256, 2048).wgmma_min_tokens, 16);
  for (GroupedFmt f : {GroupedFmt::kBf16, GroupedFmt::kFp8Block})
    EXPECT_EQ(moe_heuristic_config({512, 6144, 2048, 256, 8, f}, sm90),
              (MoeKernelConfig{4, 4, 2, false}))
        << moe_fmt_name(f);
}

// The launch moe_grouped_test's GlmShapeSmallBatch runs on sm_90 (T 60, GLM-5's widths, 8 experts,
// top-2, every token on the same 2 experts): the hybrid with narrow big tiles, FP8 on the
// warp-specialized kernel with E4M3 activations. Pinned here so that a threshold change which
// moves that GPU test off the hybrid fails on CPU first (4 experts' 30 tokens per expert took the
// full warpgroup-MMA launch once FP8 / BF16's thresholds went to 20 / 24).
TEST(MoeConfig, GlmSmallBatchTakesTheHybridOnSm90) {
  MoeDeviceLimits sm90 = limits(232448, 132);
  sm90.cc = 90;
  for (GroupedFmt f : {GroupedFmt::kBf16, GroupedFmt::kFp8Block}) {
    const GroupedLaunch l =
        moe_launch(moe_heuristic_config({60, 6144, 2048, 8, 2, f}, sm90), sm90, f, 60);
    EXPECT_TRUE(grouped_hybrid(l, 60)) << moe_fmt_name(f);
    EXPECT_LE(grouped_hybrid_min_tiles(l, f, 6144, 2048), 16) << moe_fmt_name(f);
    EXPECT_TRUE(grouped_hybrid_narrow(l, 60)) << moe_fmt_name(f);
    EXPECT_EQ(l.fp8_act && l.wgmma_ws, f == GroupedFmt::kFp8Block) << moe_fmt_name(f);
    // 4 experts (30 per expert): the full launch.
    EXPECT_TRUE(moe_heuristic_config({60, 6144, 2048, 4, 2, f}, sm90).wgmma) << moe_fmt_name(f);
  }
}

// The warpgroup-MMA launch's threshold in expected tokens per expert (T K / E) depends on the
// shape: TP8 shards (I <= 256) from 24 (BF16) / 12 (FP8) / 12 (NVFP4), NVFP4 with fewer than 128
// experts from 12, else 24 (BF16) / 20 (FP8, NVFP4); and NVFP4's hybrid takes experts of 32 or
// more tokens from T 512 rows where its big tiles are F4 and gate_up is not split (I > 512).
TEST(MoeConfig, WarpgroupMmaThresholdsByShape) {
  MoeDeviceLimits sm90 = limits(232448, 132), sm120 = limits(101376, 188);
  sm90.cc = 90;
  sm120.cc = 120;
  const GroupedFmt bf16 = GroupedFmt::kBf16, fp8 = GroupedFmt::kFp8Block, nv = GroupedFmt::kNvfp4;
  auto wg = [&](int64_t T, int64_t I, int64_t E, int64_t K, GroupedFmt f) {
    return moe_heuristic_config({T, 6144, I, E, K, f}, sm90).wgmma;
  };
  // TP8 (I 256, 256 experts, top-8): T 8 T / 256 tokens per expert.
  EXPECT_FALSE(wg(736, 256, 256, 8, bf16));  // 23
  EXPECT_TRUE(wg(768, 256, 256, 8, bf16));   // 24
  EXPECT_FALSE(wg(352, 256, 256, 8, fp8));   // 11
  EXPECT_TRUE(wg(384, 256, 256, 8, fp8));    // 12
  EXPECT_FALSE(wg(352, 256, 256, 8, nv));    // 11
  EXPECT_TRUE(wg(384, 256, 256, 8, nv));     // 12
  // EP8 (32 local experts, a slot per row): NVFP4 from 12, the others as unsharded.
  EXPECT_FALSE(wg(383, 2048, 32, 1, nv));
  EXPECT_TRUE(wg(384, 2048, 32, 1, nv));
  // FP8 from 20 per expert, BF16 from 24 (as unsharded).
  EXPECT_FALSE(wg(639, 2048, 32, 1, fp8));
  EXPECT_TRUE(wg(640, 2048, 32, 1, fp8));
  EXPECT_FALSE(wg(767, 2048, 32, 1, bf16));
  EXPECT_TRUE(wg(768, 2048, 32, 1, bf16));
  // Unsharded GLM-5 / DeepSeek-V3 widths: T / 32 per expert.
  EXPECT_FALSE(wg(736, 2048, 256, 8, bf16));  // 23
  EXPECT_TRUE(wg(768, 2048, 256, 8, bf16));   // 24
  EXPECT_FALSE(wg(608, 2048, 256, 8, fp8));   // 19
  EXPECT_TRUE(wg(640, 2048, 256, 8, fp8));    // 20
  EXPECT_FALSE(wg(608, 2048, 256, 8, nv));    // 19
  EXPECT_TRUE(wg(640, 2048, 256, 8, nv));     // 20
  for (GroupedFmt f : kFmts)
    EXPECT_FALSE(moe_heuristic_config({640, 6144, 256, 256, 8, f}, sm120).wgmma);
  // NVFP4's hybrid threshold.
  const MoeKernelConfig d = moe_heuristic_config({608, 6144, 2048, 256, 8, nv}, sm90);
  ASSERT_FALSE(d.tc);
  // (unsharded from T 192: 16, with the big tiles on P2)
  EXPECT_EQ(moe_launch(d, sm90, nv, 1024, 256, 2048).wgmma_min_tokens, 16);
  EXPECT_EQ(moe_launch(d, sm90, nv, 192, 256, 2048).wgmma_min_tokens, 16);
  EXPECT_EQ(moe_launch(d, sm90, nv, 191, 256, 2048).wgmma_min_tokens, 48);
  EXPECT_EQ(moe_launch(d, sm90, nv, 512, 32, 2048).wgmma_min_tokens, 32);  // EP8: F4 from 256
  EXPECT_EQ(moe_launch(d, sm90, nv, 511, 32, 2048).wgmma_min_tokens, 48);
  EXPECT_EQ(moe_launch(d, sm90, nv, 1024, 256, 512).wgmma_min_tokens, 48);  // split gate_up
  EXPECT_EQ(moe_launch(d, sm90, nv, 1024, 256, 256).wgmma_min_tokens, 48);
  EXPECT_EQ(moe_launch(d, sm90, nv, 1024, 256).wgmma_min_tokens, 48);  // I unknown
  EXPECT_EQ(moe_launch(d, sm90, fp8, 1024, 256, 2048).wgmma_min_tokens, 48);
  EXPECT_EQ(moe_launch(d, sm90, bf16, 1024, 256, 2048).wgmma_min_tokens, 32);
  EXPECT_EQ(moe_launch(d, sm120, nv, 1024, 256, 2048).wgmma_min_tokens, 0);
  EXPECT_TRUE(moe_launch(d, sm90, nv, 1024, 256, 2048).nvfp4_f8);
}

// moe_streaming_config (moe_bench --wg 2): the heuristic's configuration wherever that is not a
// tile GEMM, and never a tile GEMM itself, on sm_90 and without wgmma.
TEST(MoeConfig, StreamingConfigIsTheHeuristicsBelowItsTileGemms) {
  MoeDeviceLimits sm90 = limits(232448, 132), sm120 = limits(101376, 188);
  sm90.cc = 90;
  sm120.cc = 120;
  int tile = 0;
  for (const MoeDeviceLimits& lim : {sm90, sm120})
    for (GroupedFmt f : kFmts)
      for (int64_t I : {256, 2048})
        for (int64_t T : {1, 8, 64, 256, 608, 640, 768, 1024, 4096}) {
          const MoeShape s{T, 6144, I, 256, 8, f};
          const MoeKernelConfig st = moe_streaming_config(s, lim), h = moe_heuristic_config(s, lim);
          EXPECT_FALSE(st.tc) << moe_fmt_name(f) << " T " << T << " I " << I;
          EXPECT_TRUE(moe_config_fits(st, f, lim));
          if (h.tc)
            ++tile;
          else
            EXPECT_EQ(st, h) << moe_fmt_name(f) << " T " << T << " I " << I;
        }
  EXPECT_GT(tile, 20);  // the heuristic took a tile GEMM in many of them
}

// Scratch of the FP8 activations (GroupedScratch::q): none unless FP8 experts reach the
// warpgroup-MMA GEMM with fp8_act (tc launch, or the hybrid at T >= its threshold); then the
// larger of x [T, D] and h [T*KS, I] in E4M3 bytes (16-byte rounded) plus an f32 per 128.
TEST(MoeConfig, Fp8ActivationScratch) {
  const int64_t T = 300, D = 384, I = 256, KS = 3;
  GroupedLaunch tc{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
  const int64_t big = std::max(T * D, T * KS * I);  // h: 230,400
  EXPECT_EQ(grouped_fp8_act_data_bytes(T, D, I, KS), (big + 15) / 16 * 16);
  EXPECT_EQ(grouped_fp8_act_bytes(tc, GroupedFmt::kFp8Block, T, D, I, KS),
            (big + 15) / 16 * 16 + big / 128 * 4);
  EXPECT_EQ(grouped_fp8_act_data_bytes(7, 6144, 128, 1), 7 * 6144);  // x the larger
  EXPECT_EQ(grouped_fp8_act_bytes(tc, GroupedFmt::kBf16, T, D, I, KS), 0);
  EXPECT_EQ(grouped_fp8_act_bytes(tc, GroupedFmt::kNvfp4, T, D, I, KS), 0);
  EXPECT_EQ(grouped_fp8_act_bytes(tc, GroupedFmt::kFp8Block, 0, D, I, KS), 0);
  GroupedLaunch off = tc;
  off.fp8_act = false;
  EXPECT_EQ(grouped_fp8_act_bytes(off, GroupedFmt::kFp8Block, T, D, I, KS), 0);
  GroupedLaunch hybrid{.nb = 2, .wgmma_min_tokens = 48, .fp8_act = true};
  EXPECT_GT(grouped_fp8_act_bytes(hybrid, GroupedFmt::kFp8Block, 48, D, I, KS), 0);
  EXPECT_EQ(grouped_fp8_act_bytes(hybrid, GroupedFmt::kFp8Block, 47, D, I, KS), 0);
  // h quantized in gate_up's epilogue (wgmma_hquant, the default): the hybrid's codes and scales
  // follow x's region (x's scales 16-byte rounded); without it the region is shared.
  EXPECT_TRUE(hybrid.wgmma_hquant);
  const int64_t x_region = (big + 15) / 16 * 16 + (big / 128 * 4 + 15) / 16 * 16;
  EXPECT_EQ(grouped_fp8_h_offset(T, D, I, KS), x_region);
  EXPECT_EQ(grouped_fp8_act_bytes(hybrid, GroupedFmt::kFp8Block, T, D, I, KS),
            x_region + T * KS * I + T * KS * I / 128 * 4);
  GroupedLaunch hybrid_apart = hybrid;
  hybrid_apart.wgmma_hquant = false;
  EXPECT_EQ(grouped_fp8_act_bytes(hybrid_apart, GroupedFmt::kFp8Block, T, D, I, KS),
            (big + 15) / 16 * 16 + big / 128 * 4);
  // ... and the tc launch's go to h's scratch (T * KS * I 16-bit values), which holds them.
  for (int64_t i : {128, 256, 2048})
    for (int64_t tk : {1, 7, 300, 65536})
      EXPECT_LE((tk * i + 15) / 16 * 16 + tk * i / 128 * 4, tk * i * 2) << tk << " x " << i;
  GroupedLaunch streaming{.nb = 2, .fp8_act = true};  // no warpgroup-MMA GEMM at all
  EXPECT_EQ(grouped_fp8_act_bytes(streaming, GroupedFmt::kFp8Block, T, D, I, KS), 0);
}

// The multi-block grouping's scratch: none up to 8192 slots (block 0 groups them), then one int32
// per (chunk of 4096 slots, expert); run_grouped_experts lends it h's bytes (T * slots * I * 2),
// which cover it for any I >= 1 and up to 512 experts.
TEST(MoeConfig, GroupScratchFitsInH) {
  EXPECT_EQ(grouped_group_scratch_bytes(8192, 256), 0);
  EXPECT_EQ(grouped_group_scratch_bytes(8193, 256), 3 * 256 * 4);
  EXPECT_EQ(grouped_group_scratch_bytes(65536, 257), 16 * 257 * 4);
  for (int64_t TK : {8193, 12000, 65536, 1 << 20})
    for (int64_t E : {1, 8, 256, 512})
      EXPECT_LE(grouped_group_scratch_bytes(TK, E), TK * 1 * 2) << TK << " slots, " << E;
}

TEST(MoeConfig, HeuristicTileGrowsWithTokensPerExpert) {
  const MoeDeviceLimits lim = limits(232448, 132);
  EXPECT_EQ(moe_heuristic_config({1, 6144, 2048, 256, 8, GroupedFmt::kNvfp4}, lim).nb, 1);
  EXPECT_EQ(moe_heuristic_config({256, 6144, 2048, 256, 8, GroupedFmt::kNvfp4}, lim).nb, 2);
  EXPECT_EQ(moe_heuristic_config({768, 6144, 2048, 256, 8, GroupedFmt::kBf16}, lim).nb, 4);
  EXPECT_EQ(moe_heuristic_config({1024, 6144, 2048, 256, 8, GroupedFmt::kBf16}, lim),
            (MoeKernelConfig{8, 8, 1, false, true}));
  EXPECT_EQ(moe_heuristic_config({8192, 6144, 2048, 256, 8, GroupedFmt::kBf16}, lim).nb, 16);
}

// NVFP4 decode sizes take the cp.async ring with 16 warps per SM (four 4-warp CTAs; 12 at T 1,
// where the items are fewer than 8 per SM) where the rings fit (sm_90: 4 x 48 KB); where they do
// not (sm_120's 99 KB) a fitting configuration. BF16 and FP8 stream through registers in 4-warp
// CTAs unless the items are at most 2 per SM (TP8 shards at T 1..2): then the ring's stream-K.
TEST(MoeConfig, HeuristicNvfp4TakesTheCpAsyncRing) {
  const MoeDeviceLimits sm90 = limits(232448, 132), sm120 = limits(101376, 188);
  for (int64_t T : {8, 64, 256}) {
    const MoeShape s{T, 6144, 2048, 256, 8, GroupedFmt::kNvfp4};
    const MoeKernelConfig h = moe_heuristic_config(s, sm90);
    EXPECT_TRUE(h.pipelined) << T;
    EXPECT_EQ(h.warps_per_cta, 4) << T;
    EXPECT_EQ(h.warps_per_cta * h.ctas_per_sm, 16) << T;  // items fill 16 warps per SM
    EXPECT_EQ(h.nb, T <= 64 ? 1 : 2) << T;
    EXPECT_TRUE(moe_config_fits(h, s.fmt, sm90));
    const MoeKernelConfig h120 = moe_heuristic_config(s, sm120);
    EXPECT_TRUE(moe_config_fits(h120, s.fmt, sm120)) << T;
    EXPECT_LE(h120.smem_bytes() * h120.ctas_per_sm, sm120.smem_per_block_optin) << T;
    for (GroupedFmt f : {GroupedFmt::kBf16, GroupedFmt::kFp8Block}) {
      const MoeKernelConfig d = moe_heuristic_config({T, 6144, 2048, 256, 8, f}, sm90);
      EXPECT_FALSE(d.pipelined) << moe_fmt_name(f) << " " << T;
      EXPECT_EQ(d.warps_per_cta, 4) << moe_fmt_name(f) << " " << T;
    }
  }
  // Up to 16 tokens per expert (T 512 here) the 16-token ring; above, 32-token tiles streaming in
  // 4-warp CTAs.
  EXPECT_EQ(moe_heuristic_config({512, 6144, 2048, 256, 8, GroupedFmt::kNvfp4}, sm90),
            (MoeKernelConfig{2, 4, 4, true}));
  EXPECT_EQ(moe_heuristic_config({768, 6144, 2048, 256, 8, GroupedFmt::kNvfp4}, sm90),
            (MoeKernelConfig{4, 4, 2, false}));
  // T 1: 8 experts x 128 gate_up items, fewer than 8 per SM: 12 warps per SM.
  const MoeKernelConfig t1 =
      moe_heuristic_config({1, 6144, 2048, 256, 8, GroupedFmt::kNvfp4}, sm90);
  EXPECT_TRUE(t1.pipelined);
  EXPECT_EQ(t1.warps_per_cta * t1.ctas_per_sm, 12);
  // ... unless down's items then take one round and a short stream-K remainder: DeepSeek-V3's
  // down (D 7168: 8 x 224 = 1792 items) on 12 x 132 = 1584 warps; on 16 x 132 one range each.
  EXPECT_EQ(moe_heuristic_config({1, 7168, 2048, 256, 8, GroupedFmt::kNvfp4}, sm90),
            (MoeKernelConfig{1, 4, 4, true}));
  EXPECT_EQ(moe_heuristic_config({1, 7168, 256, 256, 8, GroupedFmt::kNvfp4}, sm90),
            (MoeKernelConfig{1, 4, 4, true}));  // its TP8 shard
  // GLM-5's TP8 shard at T 2: down's ~3000 items are more than one per warp at 16 per SM too.
  EXPECT_EQ(moe_heuristic_config({2, 6144, 256, 256, 8, GroupedFmt::kNvfp4}, sm90),
            (MoeKernelConfig{1, 4, 3, true}));
  // TP8 shard (I = 256: 16 items per expert): 128 items at T 1, 256 at T 2 (<= 2 per SM): BF16
  // and FP8 take the ring too; from T 4 (~31 experts) register streaming again. The unsharded
  // layer's 1024 items at T 1 stream.
  for (GroupedFmt f : {GroupedFmt::kBf16, GroupedFmt::kFp8Block}) {
    for (int64_t T : {1, 2}) {
      const MoeKernelConfig h = moe_heuristic_config({T, 6144, 256, 256, 8, f}, sm90);
      EXPECT_TRUE(h.pipelined) << moe_fmt_name(f) << " " << T;
      EXPECT_TRUE(moe_config_fits(h, f, sm90));
      EXPECT_TRUE(
          moe_config_fits(moe_heuristic_config({T, 6144, 256, 256, 8, f}, sm120), f, sm120));
    }
    EXPECT_FALSE(moe_heuristic_config({4, 6144, 256, 256, 8, f}, sm90).pipelined);
    EXPECT_FALSE(moe_heuristic_config({1, 6144, 2048, 256, 8, f}, sm90).pipelined);
  }
  // BF16 streaming: 3 CTAs per SM where that takes one round of gate_up items fewer than 2 (the
  // shared expert folded at T 1: 9 x 128 = 1,152 items, 1,056 warps with 2 CTAs, 1,584 with 3;
  // T 2: ~17 experts); 2 otherwise (routed only at T 1: 1,024 items; T 4: ~32 experts, > 3
  // rounds).
  EXPECT_EQ(moe_heuristic_config({1, 6144, 2048, 257, 9, GroupedFmt::kBf16}, sm90),
            (MoeKernelConfig{1, 4, 3, false}));
  EXPECT_EQ(moe_heuristic_config({2, 7168, 2048, 257, 9, GroupedFmt::kBf16}, sm90),
            (MoeKernelConfig{1, 4, 3, false}));
  EXPECT_EQ(moe_heuristic_config({1, 6144, 2048, 256, 8, GroupedFmt::kBf16}, sm90),
            (MoeKernelConfig{1, 4, 2, false}));
  EXPECT_EQ(moe_heuristic_config({4, 6144, 2048, 257, 9, GroupedFmt::kBf16}, sm90),
            (MoeKernelConfig{1, 4, 2, false}));
  EXPECT_EQ(moe_heuristic_config({1, 6144, 2048, 257, 9, GroupedFmt::kFp8Block}, sm90),
            (MoeKernelConfig{1, 4, 2, false}));  // FP8 streaming does not fit 3 per SM
  EXPECT_TRUE(
      moe_config_fits(moe_heuristic_config({1, 6144, 2048, 257, 9, GroupedFmt::kBf16}, sm120),
                      GroupedFmt::kBf16, sm120));
}

// The stream-K workspace of a set of configurations is the largest of them: one counter per
// warp of the grid (and one claim counter per GEMM) and 2 slots x 32 lanes x 8*nb partial sums
// per warp (16 with nb 1: the NVFP4 ring's items of two sub-blocks); none without the ring.
TEST(MoeConfig, StreamKWorkspaceIsTheLargestOfTheConfigs) {
  const MoeDeviceLimits lim = limits(232448, 132);
  const GroupedFmt f = GroupedFmt::kNvfp4;
  const MoeKernelConfig streaming{1, 8, 1, false}, ring_small{1, 4, 2, true},
      ring_big{2, 8, 2, true};
  const GroupedSkSizes none = moe_sk_sizes({streaming}, lim, f);
  EXPECT_EQ(none.warps, 0);
  EXPECT_EQ(none.counters(), 0);
  EXPECT_EQ(none.partial_floats, 0);
  const GroupedSkSizes small = moe_sk_sizes({streaming, ring_small}, lim, f);
  EXPECT_EQ(small.warps, 132 * 2 * 4);
  EXPECT_EQ(small.counters(),
            2 * 132 * 2 * 4 + 2);  // + the two GEMMs' claim counters (ring_dynamic)
  EXPECT_EQ(small.partial_floats, 132 * 2 * 4 * 2 * 32 * 16);
  const GroupedSkSizes big = moe_sk_sizes({ring_small, ring_big, streaming}, lim, f);
  EXPECT_EQ(big.warps, 132 * 2 * 8);
  EXPECT_EQ(big.partial_floats, 132 * 2 * 8 * 2 * 32 * 16);
}

// Expected tiles under uniform routing: exact where ceil(n / 8) is 1 for every touched expert,
// and against a simulation (fixed seed) where experts get more than 8 tokens.
TEST(MoeConfig, ExpectedTilesOfUniformRouting) {
  EXPECT_NEAR(grouped_expected_tiles(1, 8, 256, false, 8), 8.0, 1e-9);
  EXPECT_NEAR(grouped_expected_tiles(1, 9, 257, true, 8), 9.0, 1e-9);  // + the shared expert
  EXPECT_NEAR(grouped_expected_tiles(8, 8, 256, false, 8),
              256.0 * (1.0 - std::pow(1.0 - 8.0 / 256.0, 8)), 1e-9);
  EXPECT_NEAR(grouped_expected_tiles(8, 9, 257, true, 8),
              256.0 * (1.0 - std::pow(1.0 - 8.0 / 256.0, 8)) + 1.0, 1e-9);
  EXPECT_NEAR(grouped_expected_tiles(17, 9, 257, true, 16),
              256.0 * (1.0 - std::pow(1.0 - 8.0 / 256.0, 17)) + 2.0, 1e-6);
  EXPECT_EQ(grouped_expected_tiles(0, 8, 256, false, 8), 0.0);
  // Simulation: each token picks K distinct experts uniformly (partial Fisher-Yates).
  auto simulate = [](int64_t T, int64_t K, int64_t E, int tt, int trials) {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    auto next = [&x] {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      return x;
    };
    double sum = 0;
    std::vector<int> perm(E), count(E);
    for (int r = 0; r < trials; ++r) {
      std::fill(count.begin(), count.end(), 0);
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t e = 0; e < E; ++e) perm[e] = static_cast<int>(e);
        for (int64_t k = 0; k < K; ++k) {
          std::swap(perm[k], perm[k + static_cast<int64_t>(next() % (E - k))]);
          ++count[perm[k]];
        }
      }
      for (int c : count) sum += (c + tt - 1) / tt;
    }
    return sum / trials;
  };
  for (int64_t T : {64, 128}) {
    const double want = simulate(T, 8, 256, 8, 400),
                 got = grouped_expected_tiles(T, 8, 256, false, 8);
    EXPECT_NEAR(got, want, 0.01 * want) << "T " << T;
  }
  // Many tokens per expert (the n / t + 1/2 approximation): within 2%.
  const double want = simulate(2048, 8, 64, 8, 20),
               got = grouped_expected_tiles(2048, 8, 64, false, 8);
  EXPECT_NEAR(got, want, 0.02 * want);
}

// Items of two sub-blocks: NVFP4 ring with 8-token tiles only, N a multiple of two sub-blocks,
// and at least kGroupedPipeR2MinRounds of them per warp (GLM-5 on the H200 heuristic's grid of
// 132 x 4 CTAs x 4 warps: not at T 8, from T 16 on).
TEST(MoeConfig, PipeR2NeedsRoundsOfItems) {
  GroupedLaunch l;
  l.nb = 1, l.warps_per_cta = 4, l.ctas_per_sm = 4, l.sm_count = 132, l.pipelined = true;
  l.pipe_two_step = false;  // the rounds rule for both GEMMs
  const GroupedFmt f = GroupedFmt::kNvfp4;
  auto tiles = [](int64_t T) { return grouped_expected_tiles(T, 8, 256, false, 8); };
  EXPECT_FALSE(grouped_pipe_r2(l, f, 2048, true, tiles(8)));
  EXPECT_FALSE(grouped_pipe_r2(l, f, 6144, false, tiles(8)));
  EXPECT_TRUE(grouped_pipe_r2(l, f, 2048, true, tiles(16)));
  EXPECT_TRUE(grouped_pipe_r2(l, f, 6144, false, tiles(64)));
  // The boundary: 3 rounds of the grid's 2112 warps.
  EXPECT_TRUE(grouped_pipe_r2(l, f, 2048, true, 3.0 * 2112 / 64));
  EXPECT_FALSE(grouped_pipe_r2(l, f, 2048, true, 3.0 * 2112 / 64 - 0.01));
  EXPECT_FALSE(grouped_pipe_r2(l, GroupedFmt::kFp8Block, 2048, true, tiles(64)));
  EXPECT_FALSE(grouped_pipe_r2(l, GroupedFmt::kBf16, 2048, true, tiles(64)));
  EXPECT_FALSE(grouped_pipe_r2(l, f, 2048 + 16, true, tiles(64)));   // N % 32
  EXPECT_FALSE(grouped_pipe_r2(l, f, 6144 + 32, false, tiles(64)));  // N % 64
  GroupedLaunch o = l;
  o.nb = 2;
  EXPECT_FALSE(grouped_pipe_r2(o, f, 2048, true, tiles(64)));
  o = l;
  o.pipelined = false;
  EXPECT_FALSE(grouped_pipe_r2(o, f, 2048, true, tiles(64)));
  // With two-step stages (the launch's default), gate_up keeps items of one sub-block at every
  // T whatever the layout; down keeps the rule.
  GroupedLaunch t = l;
  t.pipe_two_step = true;
  EXPECT_FALSE(grouped_pipe_r2(t, f, 2048, true, tiles(64)));
  EXPECT_FALSE(grouped_pipe_r2(t, f, 2048, true, 100.0 * 2112 / 64));
  EXPECT_TRUE(grouped_pipe_r2(t, f, 6144, false, tiles(64)));
  EXPECT_FALSE(grouped_pipe_r2(t, f, 6144, false, tiles(8)));
}

// The warp-specialized FP8 GEMMs' narrow instance: per call from the expected tokens per expert
// (FP8 T K / E <= 192: glm5 T 6144 yes, T 6145 and 8192 no; an EP rank's local experts, K 1 and
// 2..32 experts, <= 300; NVFP4 computed in FP8 <= 64: glm5 T 2048 yes, 2049 and 4096 no), unless
// the launch says.
TEST(MoeConfig, WgmmaNarrowByExpectedTokensPerExpert) {
  GroupedLaunch l;
  EXPECT_EQ(l.wgmma_narrow, -1);
  for (bool f4 : {false, true}) {
    EXPECT_TRUE(grouped_wgmma_narrow(l, 1024, 8, 256, f4)) << f4;  // 32 per expert
    EXPECT_TRUE(grouped_wgmma_narrow(l, 2048, 8, 256, f4)) << f4;  // 64
    EXPECT_EQ(grouped_wgmma_narrow(l, 2049, 8, 256, f4), !f4);
    EXPECT_EQ(grouped_wgmma_narrow(l, 4096, 8, 256, f4), !f4);  // 128
    EXPECT_EQ(grouped_wgmma_narrow(l, 5120, 8, 256, f4), !f4);  // 160
    EXPECT_EQ(grouped_wgmma_narrow(l, 6144, 8, 256, f4), !f4);  // 192
    EXPECT_FALSE(grouped_wgmma_narrow(l, 6145, 8, 256, f4)) << f4;
    // EP8's local experts (K 1, 32 experts): FP8 up to 300 per expert
    EXPECT_EQ(grouped_wgmma_narrow(l, 6208, 1, 32, f4), !f4);  // EP8 T 6144: 194 per expert
    EXPECT_EQ(grouped_wgmma_narrow(l, 8343, 1, 32, f4), !f4);  // EP8 T 8192: 261
    EXPECT_EQ(grouped_wgmma_narrow(l, 9600, 1, 32, f4), !f4);  // 300
    EXPECT_FALSE(grouped_wgmma_narrow(l, 9601, 1, 32, f4)) << f4;
    EXPECT_FALSE(grouped_wgmma_narrow(l, 10410, 1, 32, f4)) << f4;  // EP8 T 10240: 325
    EXPECT_FALSE(grouped_wgmma_narrow(l, 8343, 2, 64, f4)) << f4;   // K 2: the unsharded bound
    EXPECT_FALSE(grouped_wgmma_narrow(l, 16640, 1, 64, f4)) << f4;  // 64 experts: 260, unmeasured
    EXPECT_FALSE(grouped_wgmma_narrow(l, 260, 1, 1, f4)) << f4;     // one expert (shared): 260
    EXPECT_FALSE(grouped_wgmma_narrow(l, 8192, 8, 256, f4)) << f4;
    EXPECT_FALSE(grouped_wgmma_narrow(l, 100, 8, 0, f4)) << f4;  // no experts: never
  }
  EXPECT_EQ(grouped_wgmma_narrow(l, 4096, 8, 256), grouped_wgmma_narrow(l, 4096, 8, 256, false));
  l.wgmma_narrow = 0;
  EXPECT_FALSE(grouped_wgmma_narrow(l, 1024, 8, 256));
  EXPECT_FALSE(grouped_wgmma_narrow(l, 1024, 8, 256, true));
  l.wgmma_narrow = 1;
  EXPECT_TRUE(grouped_wgmma_narrow(l, 8192, 8, 256));
  EXPECT_TRUE(grouped_wgmma_narrow(l, 8192, 8, 256, true));
}

// gate_up's activations by position (GroupedLaunch::x_pos): per call from T K / E >= 128 and
// I >= 1024 (glm5 T 4096 yes, 4095 and 2048 no; the TP8 shard's I 256 never), unless the launch
// says.
TEST(MoeConfig, XByPositionByExpectedTokensPerExpert) {
  GroupedLaunch l;
  EXPECT_EQ(l.x_pos, -1);
  EXPECT_TRUE(grouped_x_pos(l, 4096, 8, 256, 2048));   // 128 per expert
  EXPECT_TRUE(grouped_x_pos(l, 8192, 8, 256, 2048));   // 256
  EXPECT_TRUE(grouped_x_pos(l, 8192, 8, 256, 1024));   // I at the bound
  EXPECT_FALSE(grouped_x_pos(l, 4095, 8, 256, 2048));  // just under 128
  EXPECT_FALSE(grouped_x_pos(l, 2048, 8, 256, 2048));
  EXPECT_FALSE(grouped_x_pos(l, 8192, 8, 256, 256));  // TP8: 2 column blocks
  EXPECT_FALSE(grouped_x_pos(l, 8192, 8, 256, 512));
  EXPECT_FALSE(grouped_x_pos(l, 100, 8, 0, 2048));  // no experts: never
  // NVFP4 computed in FP8: from 48 per expert.
  GroupedLaunch f4;
  f4.nvfp4_f8 = true;
  EXPECT_TRUE(grouped_x_pos(f4, 1536, 8, 256, 2048));
  EXPECT_FALSE(grouped_x_pos(f4, 1535, 8, 256, 2048));
  EXPECT_FALSE(grouped_x_pos(f4, 8192, 8, 256, 256));
  EXPECT_TRUE(grouped_x_pos(f4, 1536, 1, 32, 2048));  // EP8: 48 rows per local expert
  l.x_pos = 0;
  EXPECT_FALSE(grouped_x_pos(l, 8192, 8, 256, 2048));
  l.x_pos = 1;
  EXPECT_TRUE(grouped_x_pos(l, 1, 8, 256, 256));
}

// Two-step stages: the NVFP4 ring with 8- or 16-token tiles, packed weights and items of one
// sub-block, unless the launch turns them off.
TEST(MoeConfig, PipeTwoStepOnlyForPackedNvfp4RingItemsOfOneSubBlock) {
  GroupedLaunch l;
  l.nb = 1, l.warps_per_cta = 4, l.ctas_per_sm = 4, l.pipelined = true;
  const GroupedFmt f = GroupedFmt::kNvfp4;
  EXPECT_TRUE(grouped_pipe_two_step(l, f, true, false));
  EXPECT_FALSE(grouped_pipe_two_step(l, f, false, false));  // row-major weights
  EXPECT_FALSE(grouped_pipe_two_step(l, f, true, true));    // items of two sub-blocks
  EXPECT_FALSE(grouped_pipe_two_step(l, GroupedFmt::kFp8Block, true, false));
  EXPECT_FALSE(grouped_pipe_two_step(l, GroupedFmt::kBf16, true, false));
  GroupedLaunch o = l;
  o.nb = 2;  // 16-token tiles too (session 24)
  EXPECT_TRUE(grouped_pipe_two_step(o, f, true, false));
  o.nb = 4;
  EXPECT_FALSE(grouped_pipe_two_step(o, f, true, false));
  o = l;
  o.pipelined = false;
  EXPECT_FALSE(grouped_pipe_two_step(o, f, true, false));
  o = l;
  o.tc = true;
  EXPECT_FALSE(grouped_pipe_two_step(o, f, true, false));
  o = l;
  o.pipe_two_step = false;
  EXPECT_FALSE(grouped_pipe_two_step(o, f, true, false));
}

// The chunk-transposed activations (GroupedLaunch::act_transpose) only for NVFP4 and only where
// the streaming kernels run.
TEST(MoeConfig, ActTransposeForNvfp4StreamingKernels) {
  GroupedLaunch l;
  const GroupedFmt f = GroupedFmt::kNvfp4;
  EXPECT_TRUE(grouped_act_transposed(l, f, 256, 128));
  EXPECT_FALSE(grouped_act_transposed(l, GroupedFmt::kFp8Block, 256, 128));
  EXPECT_FALSE(grouped_act_transposed(l, GroupedFmt::kBf16, 256, 128));
  EXPECT_FALSE(grouped_act_transposed(l, f, 256 + 64, 128));  // D % 128
  EXPECT_FALSE(grouped_act_transposed(l, f, 256, 64));        // I % 128
  GroupedLaunch w = l;
  w.wgmma = true;  // every expert on the warpgroup-MMA GEMM: no streaming kernel gains from it
  EXPECT_FALSE(grouped_act_transposed(w, f, 256, 128));
  l.act_transpose = false;
  EXPECT_FALSE(grouped_act_transposed(l, f, 256, 128));
}

TEST(MoeConfig, TuneCacheRoundTripAndFallback) {
  const DeviceInfo h200 = device("NVIDIA H200", 9, 0, 232448, 132);
  const MoeShape s{100, 6144, 2048, 256, 8, GroupedFmt::kFp8Block};
  const std::string key = moe_tune_key(h200, s);
  EXPECT_EQ(key, "NVIDIA H200|sm_90|D6144|I2048|E256|K8|T<=128|fp8_block128");
  MoeTuneCache c;
  c.put(key, {2, 8, 1, true}, 123.5);
  const MoeShape sb{4096, 6144, 2048, 256, 8, GroupedFmt::kBf16};
  c.put(moe_tune_key(h200, sb), {8, 8, 2, false, true}, 4000.0);
  const MoeShape sw{8192, 6144, 2048, 256, 8, GroupedFmt::kNvfp4};
  c.put(moe_tune_key(h200, sw), {16, 8, 1, false, true, true}, 9000.0);
  const std::string path =
      (std::filesystem::temp_directory_path() / "moe_tune_cache_test.json").string();
  ASSERT_TRUE(c.save(path).ok());
  auto loaded = MoeTuneCache::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->size(), 3u);
  EXPECT_EQ(loaded->select(h200, sw), (MoeKernelConfig{16, 8, 1, false, true, true}));
  EXPECT_EQ(loaded->select(h200, s), (MoeKernelConfig{2, 8, 1, true}));
  EXPECT_EQ(loaded->select(h200, sb), (MoeKernelConfig{8, 8, 2, false, true}));
  // Another GPU (no entry) gets the heuristic; a stored config that does not fit is ignored.
  const DeviceInfo other = device("NVIDIA RTX PRO 6000", 12, 0, 101376, 188);
  EXPECT_EQ(loaded->select(other, s), moe_heuristic_config(s, moe_limits(other)));
  MoeTuneCache bad;
  bad.put(key, {8, 8, 1, false}, 1.0);  // nb 8 is not an fp8 tile width
  EXPECT_EQ(bad.select(h200, s), moe_heuristic_config(s, moe_limits(h200)));
  std::remove(path.c_str());
  EXPECT_TRUE(MoeTuneCache::load(path).ok());  // missing file: empty cache
}

// Tensor maps for the warpgroup-MMA GEMM's TMA loads: only FP8 block-128 and BF16 experts with D
// and I multiples of 128 (the reason says which); on a machine without the driver the encoder is
// missing and the call says so instead of crashing. The key covers every weight pointer.
TEST(MoeConfig, WeightTensorMapsNeedFp8OrBf16ExpertsOfWholeTiles) {
  static uint8_t w[6][256];
  GroupedExperts ge;
  ge.fmt = GroupedFmt::kFp8Block;
  ge.D = 256, ge.I = 128, ge.E = 2;
  for (MoeGemmParams* p : {&ge.gate_up, &ge.down}) {
    p->gate_up = p == &ge.gate_up;
    p->N = p->gate_up ? ge.I : ge.D;
    p->Kd = p->gate_up ? ge.D : ge.I;
  }
  for (int e = 0; e < 2; ++e) {
    ge.gate_up.w[0][e] = w[3 * e];
    ge.gate_up.w[1][e] = w[3 * e + 1];
    ge.down.w[0][e] = w[3 * e + 2];
  }
  std::vector<uint8_t> maps;
  std::string why;
  GroupedExperts nvfp4 = ge;  // (FP8 and BF16 experts take maps; NVFP4's are dequantized)
  nvfp4.fmt = GroupedFmt::kNvfp4;
  EXPECT_FALSE(grouped_weight_tmaps(nvfp4, &maps, &why));
  EXPECT_NE(why.find("FP8"), std::string::npos) << why;
  why.clear();
  GroupedExperts bf16_odd = ge;
  bf16_odd.fmt = GroupedFmt::kBf16;
  bf16_odd.I = 192;
  EXPECT_FALSE(grouped_weight_tmaps(bf16_odd, &maps, &why));
  EXPECT_NE(why.find("128"), std::string::npos) << why;
  GroupedExperts odd = ge;
  odd.D = 192;
  why.clear();
  EXPECT_FALSE(grouped_weight_tmaps(odd, &maps, &why));
  EXPECT_NE(why.find("128"), std::string::npos) << why;
  why.clear();
  if (grouped_weight_tmaps(ge, &maps, &why)) {  // a driver: one 128-byte map per expert, matrix
    EXPECT_EQ(maps.size(), 3u * 2 * 128);
  } else {
    EXPECT_NE(why.find("driver"), std::string::npos) << why;
  }
  GroupedExperts moved = ge;
  moved.down.w[0][1] = w[0];
  EXPECT_EQ(grouped_tmap_key(ge), grouped_tmap_key(GroupedExperts(ge)));
  EXPECT_NE(grouped_tmap_key(ge), grouped_tmap_key(moved));
  GroupedExperts repacked = ge;
  repacked.gate_up.packed = repacked.down.packed = true;
  EXPECT_NE(grouped_tmap_key(ge), grouped_tmap_key(repacked));
}

}  // namespace
}  // namespace moe::cuda
