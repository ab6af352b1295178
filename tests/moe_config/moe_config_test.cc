// MoE kernel configuration selection (CPU only): every configuration the selector can return
// fits the device it was chosen for, on sm_120's shared-memory limit (101,376 B per block)
// and sm_90's (232,448 B); the tune cache round-trips through JSON and falls back to the
// heuristic for missing or no-longer-fitting entries.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

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
  for (const MoeDeviceLimits& lim : {limits(101376, 188), limits(232448, 132)})
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

TEST(MoeConfig, RejectsWhatDoesNotFit) {
  const MoeDeviceLimits lim = limits(232448, 132);
  EXPECT_FALSE(moe_config_fits({8, 8, 1, false}, GroupedFmt::kNvfp4, lim));  // no nb 8 nvfp4
  EXPECT_FALSE(moe_config_fits({8, 8, 1, true}, GroupedFmt::kBf16, lim));    // no nb 8 pipe
  EXPECT_FALSE(moe_config_fits({1, 8, 4, false}, GroupedFmt::kBf16, lim));   // registers
  EXPECT_FALSE(moe_config_fits({3, 8, 1, false}, GroupedFmt::kBf16, lim));
  EXPECT_TRUE(moe_config_fits({1, 8, 1, false}, GroupedFmt::kBf16, lim));
}

TEST(MoeConfig, HeuristicTileGrowsWithTokensPerExpert) {
  const MoeDeviceLimits lim = limits(232448, 132);
  EXPECT_EQ(moe_heuristic_config({1, 6144, 2048, 256, 8, GroupedFmt::kNvfp4}, lim).nb, 1);
  EXPECT_EQ(moe_heuristic_config({256, 6144, 2048, 256, 8, GroupedFmt::kNvfp4}, lim).nb, 2);
  EXPECT_EQ(moe_heuristic_config({8192, 6144, 2048, 256, 8, GroupedFmt::kBf16}, lim).nb, 8);
}

TEST(MoeConfig, TuneCacheRoundTripAndFallback) {
  const DeviceInfo h200 = device("NVIDIA H200", 9, 0, 232448, 132);
  const MoeShape s{100, 6144, 2048, 256, 8, GroupedFmt::kFp8Block};
  const std::string key = moe_tune_key(h200, s);
  EXPECT_EQ(key, "NVIDIA H200|sm_90|D6144|I2048|E256|K8|T<=128|fp8_block128");
  MoeTuneCache c;
  c.put(key, {2, 8, 1, true}, 123.5);
  const std::string path =
      (std::filesystem::temp_directory_path() / "moe_tune_cache_test.json").string();
  ASSERT_TRUE(c.save(path).ok());
  auto loaded = MoeTuneCache::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->size(), 1u);
  EXPECT_EQ(loaded->select(h200, s), (MoeKernelConfig{2, 8, 1, true}));
  // Another GPU (no entry) gets the heuristic; a stored config that does not fit is ignored.
  const DeviceInfo other = device("NVIDIA RTX PRO 6000", 12, 0, 101376, 188);
  EXPECT_EQ(loaded->select(other, s), moe_heuristic_config(s, moe_limits(other)));
  MoeTuneCache bad;
  bad.put(key, {8, 8, 1, false}, 1.0);  // nb 8 is not an fp8 tile width
  EXPECT_EQ(bad.select(h200, s), moe_heuristic_config(s, moe_limits(h200)));
  std::remove(path.c_str());
  EXPECT_TRUE(MoeTuneCache::load(path).ok());  // missing file: empty cache
}

}  // namespace
}  // namespace moe::cuda
