// Configuration selection for the grouped MoE kernels (see moe_config.h).
#include "backends/cuda/moe_config/moe_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace moe::cuda {

int MoeKernelConfig::regs_per_thread(GroupedFmt f) const {
  // NOTE: ptxas -v (sm_90a, CUDA 13.0), max over gate_up/down, rounded up to 8.
  if (tc) return 128;  // moe_tile_gemm_kernel: __launch_bounds__(256, 2) caps it at 128
  if (pipelined) {     // moe_gemm_pipe_kernel
    switch (f) {
      case GroupedFmt::kBf16:
        return nb <= 1 ? 80 : nb == 2 ? 96 : 128;
      case GroupedFmt::kFp8Block:
        return nb <= 1 ? 104 : nb == 2 ? 144 : 208;
      case GroupedFmt::kNvfp4:
        return nb <= 1 ? 120 : nb == 2 ? 168 : 248;
    }
  }
  switch (f) {  // moe_gemm_kernel
    case GroupedFmt::kBf16:
      return nb <= 2 ? 168 : nb == 4 ? 200 : 224;
    case GroupedFmt::kFp8Block:
      return nb <= 1 ? 176 : nb == 2 ? 224 : 232;
    case GroupedFmt::kNvfp4:
      return nb <= 1 ? 168 : nb == 2 ? 192 : 232;
  }
  return 255;
}

MoeDeviceLimits moe_limits(const DeviceInfo& d) {
  MoeDeviceLimits l;
  l.smem_per_block_optin = d.smem_per_block_optin;
  l.sm_count = d.sm_count;
  return l;
}

bool moe_config_fits(const MoeKernelConfig& c, GroupedFmt f, const MoeDeviceLimits& lim) {
  if (c.tc) {
    if (f != GroupedFmt::kBf16 || (c.nb != 8 && c.nb != 16) || c.pipelined ||
        c.warps_per_cta != 8 || c.ctas_per_sm < 1)
      return false;
    if (c.smem_bytes() * c.ctas_per_sm > lim.smem_per_block_optin) return false;
    const int64_t regs = int64_t{c.regs_per_thread(f)} * c.threads() * c.ctas_per_sm;
    return regs <= lim.regs_per_sm && c.threads() * c.ctas_per_sm <= lim.max_threads_per_sm;
  }
  const bool nb_ok = c.nb == 1 || c.nb == 2 || c.nb == 4 || (c.nb == 8 && f == GroupedFmt::kBf16);
  if (!nb_ok || (c.nb == 8 && c.pipelined) || c.warps_per_cta < 1 || c.warps_per_cta > 8 ||
      c.ctas_per_sm < 1)
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
constexpr double kTcWideTokensPerExpert = 64;

MoeKernelConfig moe_heuristic_config(const MoeShape& s, const MoeDeviceLimits& lim) {
  // Expected tokens per expert (T*K/E). Measured on the H200 (docs/perf.md, sweep of 2026-11-30):
  // 8-token tiles win up to ~4 tokens per expert (BF16: ~2), 16-token tiles up to ~16 (an
  // expert with more tokens takes a second tile and re-reads its weights, cheaper than wider
  // tiles' register pressure). Pipelined (the cp.async ring) stays off: its one-step-per-group
  // form lost to register streaming everywhere but NVFP4 T <= 4 (sweeps of 2026-11-30); the
  // grouped form is correct (tests) but not yet measured.
  const double mean = s.E > 0 ? static_cast<double>(s.T * s.K) / static_cast<double>(s.E) : 1;
  const bool bf16 = s.fmt == GroupedFmt::kBf16;
  MoeKernelConfig c;
  c.nb = mean <= (bf16 ? 2.5 : 4.5) ? 1 : mean <= 16 ? 2 : 4;
  if (bf16 && mean > 48) c.nb = 8;
  c.warps_per_cta = 8;
  c.ctas_per_sm = 1;
  c.pipelined = false;
  while (!moe_config_fits(c, s.fmt, lim) && c.nb > 1) c.nb /= 2;
  if (!moe_config_fits(c, s.fmt, lim)) c.warps_per_cta = 4;
  // Many tokens per expert: the tensor-core tile GEMM (BF16); 128-token tiles with two CTAs per
  // SM where they fit (sm_90; one on sm_120) from 64 tokens per expert, 64-token tiles below.
  if (bf16 && mean >= kTcMinTokensPerExpert) {
    const bool wide = mean >= kTcWideTokensPerExpert;
    for (int cps : {wide ? 2 : 1, 1}) {
      const MoeKernelConfig t{wide ? 16 : 8, 8, cps, false, true};
      if (moe_config_fits(t, s.fmt, lim)) return t;
    }
  }
  return c;
}

GroupedLaunch moe_launch(const MoeKernelConfig& c, const MoeDeviceLimits& lim) {
  GroupedLaunch l;
  l.nb = c.nb;
  l.warps_per_cta = c.warps_per_cta;
  l.ctas_per_sm = c.ctas_per_sm;
  l.sm_count = std::max(lim.sm_count, 1);
  l.pipelined = c.pipelined && c.nb != 8 && !c.tc;
  l.tc = c.tc;
  return l;
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

Result<MoeTuneCache> MoeTuneCache::load(const std::string& path) {
  MoeTuneCache c;
  std::ifstream in(path);
  if (!in) return c;  // no cache yet: heuristics
  nlohmann::json j;
  try {
    in >> j;
    for (auto& [key, v] : j.at("entries").items()) {
      Entry e;
      e.cfg.nb = v.at("nb").get<int>();
      e.cfg.warps_per_cta = v.at("warps_per_cta").get<int>();
      e.cfg.ctas_per_sm = v.at("ctas_per_sm").get<int>();
      e.cfg.pipelined = v.value("pipelined", false);
      e.cfg.tc = v.value("tc", false);
      e.us = v.value("us", 0.0);
      c.entries_[key] = e;
    }
  } catch (const std::exception& ex) {
    return invalid_argument("MoE tune cache " + path + " is not valid (" + ex.what() +
                            "); delete it and run `moengine tune-moe` again");
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
                         {"us", e.us}};
  std::ofstream out(path);
  if (!out) return invalid_argument("cannot write MoE tune cache " + path);
  out << j.dump(2) << "\n";
  return Status::ok_status();
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
