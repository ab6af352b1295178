// Launch configurations of the grouped MoE kernels, chosen from the device's properties:
// candidate enumeration (every candidate fits the device), a heuristic for shapes without a
// measurement, and a JSON tune cache keyed by GPU name, compute capability, shape and format
// (written by `moengine tune-moe`). Plain C++: no CUDA headers; thread-compatible values only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/device_info.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_rules.h"
#include "core/status.h"

namespace moe::cuda {

// The MoE layer a configuration is chosen for (one GPU's share of it).
struct MoeShape {
  int64_t T = 0;  // tokens
  int64_t D = 0;  // hidden
  int64_t I = 0;  // expert intermediate size (per GPU under TP)
  int64_t E = 0;  // experts on this GPU
  int64_t K = 0;  // experts per token
  GroupedFmt fmt = GroupedFmt::kBf16;
};

struct MoeKernelConfig {
  int nb = 1;             // tokens per tile = 8 * nb
  int warps_per_cta = 8;  // <= 8
  int ctas_per_sm = 1;
  bool pipelined = false;  // shared-memory cp.async ring of the weight stream (not with nb 8)
  // Tensor-core tile GEMM (BF16; nb 8 or 16 = 64- or 128-token tiles, 8 warps, not pipelined):
  // for many tokens per expert (prefill, hot experts).
  bool tc = false;
  // With tc and nb 16: the Hopper warpgroup-MMA tile GEMM (sm_90 only, one CTA per SM).
  bool wgmma = false;

  int threads() const { return warps_per_cta * 32; }
  // Shared memory per CTA: the register-streaming GEMMs stage nothing (activations come through
  // L1); the pipelined ones keep a cp.async ring per warp (kGroupedPipeWarpBytes, the bound over
  // formats: NVFP4 launches take less, grouped_pipe_warp_bytes);
  // the tc GEMM a ring of token and weight tiles (grouped_tile_smem_bytes).
  int64_t smem_bytes() const {
    // The largest of its kernels: NVFP4 computed in FP8 on two producer warpgroups (P2: 4 stages
    // + its raw ring) above the one-producer one (3 stages + the raw ring) and the 4-stage 256-row
    // FP8 / F16 / BF16 ones.
    if (tc && wgmma)
      return std::max({grouped_wgmma_smem_bytes(256), grouped_wgmma_f4_smem_bytes(),
                       grouped_wgmma_f4p2_smem_bytes()});
    if (tc) return grouped_tile_smem_bytes(8 * nb);
    return pipelined ? int64_t{warps_per_cta} * kGroupedPipeWarpBytes : 0;
  }
  // Registers per thread the instance needs (ptxas -v of moe_grouped.cu, sm_90a, CUDA 13.0;
  // upper bound over gate_up and down).
  int regs_per_thread(GroupedFmt f) const;
  bool operator==(const MoeKernelConfig&) const = default;
};
// The Hopper warpgroup-MMA GEMM's configuration (128-token tiles, one 256-thread CTA per SM).
inline constexpr MoeKernelConfig kMoeWgmmaConfig{16, 8, 1, false, true, true};

// Device limits a configuration must respect (from DeviceInfo; tests build them by hand).
struct MoeDeviceLimits {
  int64_t smem_per_block_optin = 0;
  int sm_count = 0;
  int64_t regs_per_sm = 65536;
  int max_threads_per_sm = 2048;
  int cc = 0;  // compute capability, major * 10 + minor (wgmma needs exactly 90: sm_90a code)
};
MoeDeviceLimits moe_limits(const DeviceInfo& d);

// True if `c` can be launched on a device with `lim` for format `f` (smem, threads, registers).
bool moe_config_fits(const MoeKernelConfig& c, GroupedFmt f, const MoeDeviceLimits& lim);
// Every configuration the tuner may try for `s`; all of them fit `lim`.
std::vector<MoeKernelConfig> moe_candidate_configs(const MoeShape& s, const MoeDeviceLimits& lim);
// The streaming configuration for `s`: token tile from the expected tokens per expert (T*K/E,
// with room for Poisson spread); NVFP4 the cp.async ring in 4-warp CTAs (16 warps per SM, 12 for
// few items), BF16/FP8 register streaming in 4-warp CTAs, 2 per SM (BF16: 3 when that takes one
// round of gate_up items fewer, up to 3 rounds; stream-K in the ring when the gate_up items are at
// most 2 per SM); the first of these that fits. What moe_heuristic_config takes below its tile
// GEMMs' thresholds (moe_bench --wg 2 times it above them).
MoeKernelConfig moe_streaming_config(const MoeShape& s, const MoeDeviceLimits& lim);
// The configuration used without a tune-cache entry: on sm_90 the warpgroup-MMA tile GEMM from
// 24 (BF16) / 20 (FP8, NVFP4) expected tokens per expert, from 24 / 12 / 12 on TP8 shards (I <=
// 256) and from 12 for NVFP4 with fewer than 128 experts (EP8); elsewhere BF16 from 32 tokens per
// expert: the tc tile GEMM (64-token tiles; 128-token, 2 CTAs from 64); else
// moe_streaming_config.
MoeKernelConfig moe_heuristic_config(const MoeShape& s, const MoeDeviceLimits& lim);
// GroupedLaunch for the kernels from a configuration for format `f`; on sm_90 a register-streaming
// configuration also sends experts with many tokens of a call to the warpgroup-MMA GEMM
// (GroupedLaunch::wgmma_min_tokens: the hybrid, decided per expert on the device). FP8 experts on
// the warpgroup-MMA GEMM take E4M3 activations (GroupedLaunch::fp8_act): with a tc configuration,
// and in the hybrid (from T 48), whose big tiles take the warp-specialized kernel
// (GroupedLaunch::wgmma_ws; its narrow instance at T <= 64, grouped_hybrid_narrow). NVFP4 experts
// with a tc configuration are computed in FP8 (GroupedLaunch::nvfp4_f8, E4M3 activations), and in
// the hybrid's big tiles from T 256 rows, or from its first T with E >= 128 experts on the GPU
// (E: the call's experts, 0 if unknown). The hybrid's per-expert threshold is 32 tokens for BF16,
// 48 for FP8 and NVFP4, 32 for NVFP4 from T 512 rows where its big tiles are computed in FP8 and
// do not split gate_up (I > 512; I: the experts' intermediate size, 0 if unknown). NVFP4's full
// launch on two producer warpgroups (P2) sends experts of 96 slots or more to the one-producer
// kernel's 128-token tiles (GroupedLaunch::f4p2_split) with E >= 128 and I > 256; there, from
// T 192, the hybrid takes experts from 16 tokens with its big tiles on P2, split the same way
// where those experts hold 0.9 of the big experts' slots (f4p2_big 2, f4p2_split_share).
GroupedLaunch moe_launch(const MoeKernelConfig& c, const MoeDeviceLimits& lim, GroupedFmt f,
                         int64_t T, int64_t E = 0, int64_t I = 0);
// Calls of at most this many tokens run a shared expert of the routed shape inside the grouped
// kernels (one more expert and slot per token, CudaOps::moe_experts); larger ones run it alone
// after the routed ones (moe_shared_alone_launch): one below the hybrid's threshold (on devices
// without the hybrid too: their tiles would re-stream the shared expert's weights instead).
// Measured on the H200 (docs/perf.md, 2026-12-01: GLM-5, DeepSeek-V3, GLM-5 TP8; every format;
// T 1..64): folded, the shared expert costs 1-35 us up to that T (BF16 and FP8 at T 1 26-48 us: one
// more expert's items past a round of the grid's warps), but from the threshold on its T tokens
// take the warpgroup-MMA GEMM alone on 8..24 CTAs (+71..215 us), where alone it costs 34..72 us.
int64_t moe_shared_fold_max_tokens(GroupedFmt f);
// Launch of the shared expert alone (T tokens on one expert, resolve_grouped_shared_alone): below
// 256 tokens the stream-K ring (its few 16-row items spread over every warp by k-range), tiles of
// up to 32 tokens, no hybrid; from 256 the heuristic's (the warpgroup-MMA GEMM on sm_90).
GroupedLaunch moe_shared_alone_launch(int64_t T, int64_t D, int64_t I, GroupedFmt f,
                                      const MoeDeviceLimits& lim);
// The largest stream-K workspace of `configs` (one scratch for all of them: bench, tune-moe).
GroupedSkSizes moe_sk_sizes(const std::vector<MoeKernelConfig>& configs, const MoeDeviceLimits& lim,
                            GroupedFmt f);

const char* moe_fmt_name(GroupedFmt f);
// "NVIDIA H200|sm_90|D6144|I2048|E256|K8|T<=8|nvfp4": T is bucketed (powers of two).
std::string moe_tune_key(const DeviceInfo& d, const MoeShape& s);
int64_t moe_t_bucket(int64_t T);

// Winners of `moengine tune-moe`, persisted as JSON:
//   {"version": 1, "entries": {"<key>": {"nb": 2, "warps_per_cta": 8, "ctas_per_sm": 1,
//                                         "pipelined": true, "tc": false, "us": 812.5}}}
// (The boolean fields and "us" may be absent: false, 0.)
class MoeTuneCache {
 public:
  // A missing file is an empty cache. Errors (a Status naming the file and the fix: rerun
  // `moengine tune-moe` or leave the cache out): not JSON, a "version" other than 1 (or none),
  // no "entries" object, an entry without an int32 "nb", "warps_per_cta" or "ctas_per_sm", an
  // optional field of the wrong type. Whether entries fit a device is select()'s business.
  static Result<MoeTuneCache> load(const std::string& path);
  Status save(const std::string& path) const;
  // The cached config if present and still fitting the device; else the heuristic.
  MoeKernelConfig select(const DeviceInfo& d, const MoeShape& s) const;
  std::optional<MoeKernelConfig> find(const std::string& key) const;
  void put(const std::string& key, const MoeKernelConfig& c, double us);
  size_t size() const { return entries_.size(); }
  std::vector<std::string> keys() const;  // sorted

 private:
  struct Entry {
    MoeKernelConfig cfg;
    double us = 0;
  };
  std::map<std::string, Entry> entries_;
};

}  // namespace moe::cuda
