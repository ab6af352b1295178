// MoE layer benchmark: the grouped routed-expert path (group + gate_up + down + combine) on the
// GLM-5 (D 6144) and DeepSeek-V3 (D 7168) layer shapes, I 2048, E 256, top-8, and their shares of
// one GPU under 8-way sharding: TP8 (I 256 per GPU, all 256 experts) and EP8 (32 local experts
// of 256, D and I whole). Time = median of CUDA-event-timed CUDA-graph replays, L2 flushed
// (256 MiB memset) before each replay, outside the timed region.
// Routing (K distinct experts per token, same ids for every format): uniform; zipf1 / zipf1.5
// (expert popularity ~ 1/rank^s, drawn without replacement: Gumbel top-K); hot8 (every token on
// the same 8 experts). Popularity ranks map to expert ids through a fixed random permutation.
// EP8: T tokens are routed over all 256 experts; the GPU measured is the busiest of the 8 ranks
// (experts [32r, 32r+32): EP's critical path). The kernels have no "not on this GPU" slot (ids
// outside [0, E) make a NaN row), so the rank's assignments are renumbered into rows with one
// expert each (K = 1, ids - 32r): row j = (token t_j, expert e_j) with the routing weight
// applied, as an EP dispatch delivers them; the sum over a token's experts happens in the EP
// combine (all-to-all back to the token's GPU), not here.
// Bytes model: touched (local) experts' weights + scales, x read (f32) and y written (f32), per
// input row (T, or the EP rows). FLOP model: 2 * assignments * 3 * D * I (assignments = T*K, or
// the EP rows). Peak for %: 4.8 TB/s (H200 datasheet).
// Column big: the hybrid's 128-token tiles in the call ("-" for a launch without the hybrid; 0
// when no expert qualified or GroupedLaunch::hybrid_min_bytes kept them all streaming).
// Usage: moe_bench [--fmt bf16,fp8,nvfp4] [--shape glm5,dsv3,glm5-tp8,glm5-ep8,dsv3-tp8,dsv3-ep8]
//                  [--routing uniform,zipf1,zipf1.5,hot8,balanced] [--tokens 1,4,8,...,4096,8192]
//                  [--iters N] [--routing-dir DIR] [--json FILE] [--sweep 0|1|2]
//                  [--nb N] [--warps N] [--ctas N] [--pipe 0|1] [--wg 0|1|2]
//                  [--layout packed|rowmajor]
//                  [--shared 0|1|2] [--f8act 0|1] [--r2 0|1] [--two-step 0|1] [--tma 0|1]
//                  [--ws 0|1] [--pairs 0|1] [--narrow 0|1] [--pdl 0|1] [--hybrid-min N]
//                  [--hybrid-pdl 0|1] [--hybrid-gb X] [--hybrid-share X] [--pdl-light 0|1]
//                  [--split-k 0|1] [--hquant 0|1] [--nvf8 0|1] [--act-t 0|1] [--act-tma 0|1]
//                  [--x-pos 0|1] [--early-gu 0|1] [--group-warp 0|1] [--f4p2 N]
//                  [--f4p2-big 0|1|2] [--f4p2-split N] [--f4p2-split-share X] [--defer 0|1]
//                  [--early-down N] [--group-yield 0|1] [--bf16-tma 0|1] [--bf16-ws 0|1|2]
//                  [--bf16-defer 0|1] [--x-scatter 0|1] [--narrow-box 0|1] [--sustain-ms N]
//                  [--ab "LAUNCH FLAGS"]
//                  [--ab-blocks N]
//                  [--flush memset|read] [--phases 0|1]
// (tp8 and ep8 are short for glm5-tp8 and glm5-ep8.) --sweep 1 measures every candidate (tile
// width, pipelining) at 8 warps per SM and reports the best next to the heuristic's time
// (heur_us); --sweep 2 adds every warps-per-CTA x CTAs-per-SM that fits. Without a sweep,
// --nb / --warps / --ctas / --pipe override the heuristic's choice, --wg 1 takes the
// warpgroup-MMA GEMM's configuration instead, --wg 2 the streaming one (moe_streaming_config:
// what the heuristic takes below its tile GEMMs' thresholds) (a forced configuration that does
// not fit the device is skipped with a message).
// --routing-dir writes routing_<shape>_<routing>_T<T>.bin: int32 [rows, K] of the ids the
// kernels see (EP: [rows, 1] local ids) for bench/moe/moe_vs_torch.py. --shared 1 adds a shared
// expert of the routed shape that rides along in the grouped kernels (one more expert and slot
// per token), --shared 2 runs it apart after the routed ones (resolve_grouped_shared_alone,
// moe_shared_alone_launch), the two ways CudaOps::moe_experts runs GLM-5's and DeepSeek-V3's
// (up to / above moe_shared_fold_max_tokens); its bytes and FLOPs are counted and uniq includes
// it. Not with expert-parallel shapes (their rows are only the local assignments). --f8act 0|1
// overrides GroupedLaunch::fp8_act (FP8 experts on the warpgroup-MMA GEMM: E4M3 activations and
// FP8 wgmma, or F16 activations with weights dequantized to F16). --r2 0|1 overrides
// GroupedLaunch::pipe_r2 (the NVFP4 ring's items of one or two sub-blocks; default: chosen per GEMM
// by run_grouped_experts); --two-step 0|1 GroupedLaunch::pipe_two_step (the NVFP4 ring's stages of
// two k-steps with packed weights; default 1); --tma 0|1 GroupedLaunch::wgmma_tma (FP8 experts on
// the warpgroup-MMA GEMM: weight tiles by TMA, tensor maps of grouped_weight_tmaps); --ws 0|1
// GroupedLaunch::wgmma_ws (with TMA, the warp-specialized kernel at 256 rows where pairs do not
// apply); --pairs 0|1 GroupedLaunch::wgmma_pairs (2-CTA clusters sharing weight tiles); --narrow
// 0|1 GroupedLaunch::wgmma_narrow (their instance for tiles of <= 64 tokens; default: per call;
// for the hybrid also BF16 big tiles on the 64-token mma.sync tile GEMM, grouped_hybrid_narrow);
// --pdl 0|1 GroupedLaunch::pdl (programmatic dependent launch of the call's kernels; default:
// moe_launch's); --hybrid-min N GroupedLaunch::wgmma_min_tokens where the launch has the hybrid
// (experts with >= N tokens on the warpgroup-MMA GEMM; 0: no hybrid, so no warpgroup-MMA launches
// beside the streaming ones); --hybrid-pdl 0|1 GroupedLaunch::hybrid_pdl (the hybrid's
// warpgroup-MMA and quantization launches with programmatic dependent launch); --hybrid-gb X
// GroupedLaunch::hybrid_min_bytes = X * 1e9 (0: the hybrid whenever an expert qualifies);
// --hybrid-share X GroupedLaunch::hybrid_min_share (the hybrid also where the qualifying experts
// hold at least this share of the call's 8-token tiles; 0: only the bytes bound);
// --pdl-light 0|1 GroupedLaunch::pdl_light (PDL for gate_up and the combine only). --split-k 0|1
// GroupedLaunch::hybrid_split_k (the hybrid's gate_up split along k where its items fill at most
// half the GPU, for experts of I <= 512: grouped_hybrid_split_k). --hquant 0|1
// GroupedLaunch::wgmma_hquant (FP8 activations: h quantized to E4M3 in the warpgroup-MMA gate_up's
// epilogue, or by a moe_quant_rows launch). --nvf8 0|1 GroupedLaunch::nvfp4_f8 (1: NVFP4 experts on
// the warpgroup-MMA launch computed in FP8, weights dequantized to E4M3 by the warp-specialized
// kernel's producers; sets fp8_act). --act-t 0|1 GroupedLaunch::act_transpose (NVFP4 streaming
// GEMMs: x's 16-bit copy and h in the chunk-transposed order, whole-sector activation loads).
// --act-tma 0|1 GroupedLaunch::down_act_tma (FP8 down on the warp-specialized / pair kernels: its
// activation tiles by one TMA box from a map of h, or by the producers' cp.async gather).
// --x-pos 0|1 GroupedLaunch::x_pos (FP8 gate_up on the full warp-specialized / pair launch: x's
// codes copied by position and taken by TMA boxes; default from 128 tokens per expert).
// --early-gu 0|1 GroupedLaunch::early_gate_up (gate_up's ring works out the tile list of <= 32
// slots from the ids and issues its first weight stages before it waits for the grouping).
// --group-warp 0|1 GroupedLaunch::group_one_warp (1, the default: the grouping of <= 32 slots by
// one warp; 0: by block 0's 512 threads).
// --f4p2 N GroupedLaunch::f4p2_max_mean (NVFP4 computed in FP8 on the full warpgroup-MMA launch:
// two producer warpgroups for one consumer on 64-token tiles below N slots per expert; 0: never).
// --f4p2-big 0|1|2 GroupedLaunch::f4p2_big (the hybrid's F4 big tiles on that kernel, 64 tokens:
// never, where every big tile is narrow (T <= 64), always).
// --f4p2-split N GroupedLaunch::f4p2_split (that full launch split by expert: experts of >= N slots
// on the one-producer kernel's 128-token tiles, a second launch per GEMM; 0: not split; with the
// hybrid's big tiles on P2 the same, a third launch). --f4p2-split-share X
// GroupedLaunch::f4p2_split_share (the split only where those experts hold this share: of the
// hybrid's big experts' slots, of a full launch's 8-token tiles; 0: always). --defer 0|1
// GroupedLaunch::sibling_defer (a GEMM's launches after its first wait for their predecessor at
// their end; moe_launch's default on sm_90: 1). --early-down N GroupedLaunch::early_down_max_slots
// (down's ring works out the list and issues its first weight stages before it waits for gate_up,
// in calls of <= N slots; 0: never). --group-yield 0|1 GroupedLaunch::group_yields (the grouping
// lets gate_up launch when its blocks exit, and asks for a carveout that holds gate_up's ring).
// --bf16-tma 0|1 GroupedLaunch::bf16_tma (BF16 warpgroup-MMA weight tiles by TMA); --bf16-ws
// 0|1|2 GroupedLaunch::bf16_ws (with it, BF16 on the warp-specialized kernel / its pairs);
// --bf16-defer 0|1 GroupedLaunch::bf16_defer (its consumers release a stage a k-block later).
// --x-scatter 0|1 GroupedLaunch::x_pos_scatter (x_pos's copy by token instead of by position).
// --narrow-box 0|1 GroupedLaunch::narrow_act_box (the NARROW instance's activation boxes of 64
// rows: one for a narrow tile, two for the others).
// --ab "FLAGS": an interleaved A/B of each case (one configuration, no --sweep): A is the launch
// of the command line, B the same plus FLAGS (launch flags only: --f8act, --r2, --two-step,
// --tma, --ws, --pairs, --narrow, --pdl, --hybrid-min, --hybrid-pdl, --pdl-light, --split-k,
// --hquant, --nvf8, --act-t, --act-tma, --x-pos, --early-gu, --group-warp, --hybrid-gb,
// --hybrid-share, --f4p2, --f4p2-big, --f4p2-split, --f4p2-split-share, --defer, --early-down,
// --group-yield, --bf16-tma, --bf16-ws, --bf16-defer, --x-scatter, --narrow-box;
// e.g. --ab "--hybrid-min 0"; and --wg 0|1|2, B on the heuristic's / the warpgroup-MMA / the
// streaming configuration instead of A's, e.g. --ab "--wg 1" for where the heuristic should take
// the warpgroup-MMA launch, --ab "--wg 2" for where it takes a tile GEMM). Both graphs are captured
// and their replays alternate (A B, B A, ...; each after its own L2 flush), so both see the same
// clocks and power state; a line "ab ..." gives A's and B's medians and the median of the
// per-replay ratios B / A (the table row is A's;
// --json adds ab_us and ab_ratio). Separate calls of the same case differ by up to 2-5% at
// prefill and under NVFP4's power limit (docs/perf.md).
// --ab-blocks N (with --ab and --sustain-ms S): N rounds of blocks instead of single replays,
// each round A held S ms then `iters` timed replays of A, then the same for B (B first in odd
// rounds); the "ab" line gives the medians over the rounds of the blocks' medians and of the
// rounds' B / A, and an "ab-blocks" line each round's B / A. For effects that act through the
// power state: under the power limit (prefill, NVFP4 decode) the clock follows the average power
// over many replays, so single-replay interleaving gives both variants the same clock and hides
// a variant that draws less power (session 44: zero-filled padding rows, level interleaved, 2-5%
// faster in sustained separate runs).
// --phases 1: after each case's timing, its launch again (with --sweep the heuristic's) with an
// event between its kernels (phase_timing.h): a line "phases ..." with each kernel's median time,
// the GEMM kernels' sum and its TFLOP/s (the issue's "expert GEMMs" rate, without the grouping and
// the combine);
// --json adds gemm_us and phases. PDL overlap between kernels is cut there: the row's time stays
// the plain graph's.
// --flush memset|read: the L2 flush before each replay, a 256 MB memset (the default, as
// moe_vs_torch.py and Triton's do_bench flush) or a kernel reading the buffer (replay_timing.h:
// the memset leaves tens of MB of dirty lines that the replay's misses write back to HBM).
// --sustain-ms N: before the timed replays of each case, replay it (L2 flush included) for N ms
// of wall time, so the times are those of a GPU that has been under this load long enough for
// its power limit to act (H200, docs/perf.md session 27: the NVFP4 ring reaches the 700 W cap
// within ~1 s at T 8..64 and its SM clock drops from 1980 to ~1500-1700 MHz; short runs do not
// see it).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../common/bench_util.cuh"
#include "backends/cuda/device_info.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_experts.h"
#include "backends/cuda/moe_config/moe_config.h"
#include "launch_flags.h"
#include "phase_timing.h"
#include "replay_timing.h"
#include "routing.h"

namespace {

using moe::bench::fill;
using moe::bench::find_shape;
using moe::bench::global_routing;
using moe::bench::LaunchOverrides;
using moe::bench::LayerShape;
using moe::bench::local_routing;
using moe::bench::LocalRouting;
using moe::bench::median;
using moe::bench::parse_int_in_range;
using moe::bench::parse_launch_flag;
using moe::bench::phase_is_gemm;
using moe::bench::PhaseTimes;
using moe::bench::ReplayTimes;
using moe::bench::time_phases;
using moe::bench::time_replays;

using namespace moe;
using namespace moe::cuda;

__global__ void fill_f32(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    p[i] = v * (1.f + 0.001f * static_cast<float>(i % 97));
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) out.push_back(t);
  return out;
}

struct Layer {  // device weights of all experts of one layer
  GroupedFmt fmt;
  LayerShape s;
  std::vector<void*> bufs;
  std::vector<ops::ExpertWeights> experts;
  ops::ExpertWeights shared;  // --shared 1
  double expert_bytes = 0;    // weights + scales of one expert
};

ConstTensorView dev_view(void* p, moe::Shape sh, DType dt) {
  return ConstTensorView(p, dt, sh, Device::kCuda);
}

bool g_row_major = false;    // --layout rowmajor
int g_shared = 0;            // --shared 1 (folded) or 2 (apart)
int g_sustain_ms = 0;        // --sustain-ms N (0: no sustained load before the timed replays)
int g_ab_blocks = 0;         // --ab-blocks N (0: --ab alternates single replays)
bool g_flush_reads = false;  // --flush read (memset: the default)
int g_phases = 0;            // --phases 1: each case's kernels timed apart (phase_timing.h)

LaunchOverrides g_ov;    // the command line's
LaunchOverrides g_ov_b;  // --ab: the command line's plus the --ab string's
bool g_ab = false;

GroupedLaunch with_overrides(GroupedLaunch l) { return g_ov.apply(l); }

ops::Weight make_weight(Layer& L, GroupedFmt f, int64_t N, int64_t K, uint32_t seed) {
  ops::Weight w;
  auto alloc = [&](size_t n, int kind, uint32_t sd) {
    void* p = nullptr;
    CK(cudaMalloc(&p, n));
    fill(p, n, sd, kind);
    L.bufs.push_back(p);
    L.expert_bytes += static_cast<double>(n) / 3.0;  // three matrices per expert
    return p;
  };
  switch (f) {
    case GroupedFmt::kBf16:
      w.data = dev_view(alloc(N * K * 2, 3, seed), {N, K}, DType::kBF16);
      break;
    case GroupedFmt::kFp8Block: {
      w.format = ops::WeightFormat::kFp8Block;
      w.data = dev_view(alloc(N * K, 1, seed), {N, K}, DType::kF8E4M3);
      const int64_t sn = (N + 127) / 128, sk = (K + 127) / 128;
      void* sp = alloc(sn * sk * 4, 0, seed + 1);
      fill_f32<<<64, 256>>>(static_cast<float*>(sp), sn * sk, 0.01f);
      w.scale = dev_view(sp, {sn, sk}, DType::kF32);
      break;
    }
    case GroupedFmt::kNvfp4:
      w.format = ops::WeightFormat::kNvfp4;
      w.data = dev_view(alloc(N * K / 2, 0, seed), {N, K / 2}, DType::kU8);
      w.scale = dev_view(alloc(N * K / 16, 2, seed + 1), {N, K / 16}, DType::kF8E4M3);
      w.global_scale = 0.02f;
      break;
  }
  // Random bytes, read in the layout CudaOps::prepare_experts gives the engine's (--layout
  // rowmajor: the checkpoint's, for A/B measurements of the layout).
  w.layout = g_row_major ? ops::WeightLayout::kRowMajor : ops::WeightLayout::kPacked;
  return w;
}

void make_layer(Layer& L) {
  L.experts.resize(L.s.E);
  for (int64_t e = 0; e < L.s.E; ++e) {
    L.experts[e].gate = make_weight(L, L.fmt, L.s.I, L.s.D, 11 + 7 * e);
    L.experts[e].up = make_weight(L, L.fmt, L.s.I, L.s.D, 13 + 7 * e);
    L.experts[e].down = make_weight(L, L.fmt, L.s.D, L.s.I, 17 + 7 * e);
  }
  L.expert_bytes /= static_cast<double>(L.s.E);
  L.expert_bytes *= 3;
  if (g_shared) {  // same shape as a routed expert (its bytes are not in expert_bytes' mean)
    const double per_expert = L.expert_bytes;
    L.shared.gate = make_weight(L, L.fmt, L.s.I, L.s.D, 5);
    L.shared.up = make_weight(L, L.fmt, L.s.I, L.s.D, 6);
    L.shared.down = make_weight(L, L.fmt, L.s.D, L.s.I, 7);
    L.expert_bytes = per_expert;
  }
}

void free_layer(Layer& L) {
  for (void* p : L.bufs) CK(cudaFree(p));
  L.bufs.clear();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> fmts = {"bf16", "fp8", "nvfp4"}, shapes = {"glm5", "dsv3"},
                           routings = {"uniform"};
  std::vector<int64_t> tokens = {1, 4, 8, 32, 64, 128, 256};
  int iters = 30, force_nb = 0, force_warps = 0, force_ctas = 0, force_pipe = -1;
  int sweep = 0, force_wg = 0;
  // --ab "--wg 0|1|2": B's configuration (the heuristic's / warpgroup MMA / streaming)
  int ab_wg = -1;
  std::string routing_dir, json_path;
  std::string ab_flags;
  struct IntFlag {
    const char* name;
    long long lo, hi;
    const char* what;
    int* out;
  };
  const IntFlag int_flags[] = {
      {"--iters", 3, 100000, "3..100000 replays", &iters},
      {"--nb", 0, 16, "0 (the heuristic's) or a row-block count", &force_nb},
      {"--warps", 0, 32, "0 (the heuristic's) or warps per CTA", &force_warps},
      {"--ctas", 0, 32, "0 (the heuristic's) or CTAs per SM", &force_ctas},
      {"--pipe", -1, 1, "-1 (the heuristic's), 0 or 1", &force_pipe},
      {"--wg", 0, 2, "0 (the heuristic's), 1 (the warpgroup-MMA GEMM) or 2 (streaming)", &force_wg},
      {"--sweep", 0, 2, "0, 1 or 2", &sweep},
      {"--shared", 0, 2, "0, 1 (folded) or 2 (apart)", &g_shared},
      {"--sustain-ms", 0, 600000, "milliseconds in 0..600000", &g_sustain_ms},
      {"--ab-blocks", 0, 1000, "rounds in 0..1000", &g_ab_blocks},
      {"--phases", 0, 1, "0 or 1", &g_phases}};
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h" || i + 1 >= argc) {
      std::fprintf(stderr, "usage: see the comment at the top of bench/moe/moe_bench.cu\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
    const std::string v = argv[i + 1];
    const IntFlag* nf = nullptr;
    for (const IntFlag& f : int_flags)
      if (a == f.name) nf = &f;
    if (nf != nullptr) {
      long long n = 0;
      if (!parse_int_in_range(a, v, nf->lo, nf->hi, nf->what, &n)) return 2;
      *nf->out = static_cast<int>(n);
    } else if (const int r = parse_launch_flag(a, v, &g_ov); r != 0) {
      if (r < 0) return 2;
    } else if (a == "--flush") {
      if (v != "memset" && v != "read") {
        std::fprintf(stderr, "--flush %s: expected memset or read\n", v.c_str());
        return 2;
      }
      g_flush_reads = v == "read";
    } else if (a == "--fmt")
      fmts = split(v);
    else if (a == "--shape")
      shapes = split(v);
    else if (a == "--routing")
      routings = split(v);
    else if (a == "--tokens") {
      tokens.clear();
      for (auto& t : split(v)) {
        long long n = 0;
        if (!parse_int_in_range(a, t, 1, 1 << 20, "token counts 1..1048576, comma-separated", &n))
          return 2;
        tokens.push_back(n);
      }
    } else if (a == "--routing-dir")
      routing_dir = v;
    else if (a == "--json")
      json_path = v;
    else if (a == "--ab") {
      g_ab = true;
      ab_flags = v;
    } else if (a == "--layout") {
      if (v != "packed" && v != "rowmajor") {
        std::fprintf(stderr, "unknown --layout %s (packed, rowmajor)\n", v.c_str());
        return 2;
      }
      g_row_major = v == "rowmajor";
    } else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  // --ab: B = the command line's launch flags plus the --ab string's (launch flags only).
  if (g_ab) {
    g_ov_b = g_ov;
    std::istringstream in(ab_flags);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.empty() || words.size() % 2 != 0) {
      std::fprintf(stderr,
                   "--ab \"%s\": expected launch flags with their values, e.g. --ab "
                   "\"--hybrid-min 0\"\n",
                   ab_flags.c_str());
      return 2;
    }
    for (size_t j = 0; j < words.size(); j += 2) {
      if (words[j] == "--wg") {  // B on another configuration: the one flag that is not a launch's
        if (words[j + 1] != "0" && words[j + 1] != "1" && words[j + 1] != "2") {
          std::fprintf(stderr,
                       "--ab: --wg takes 0 (the heuristic's), 1 (warpgroup MMA) or 2 "
                       "(streaming)\n");
          return 2;
        }
        ab_wg = words[j + 1][0] - '0';
        continue;
      }
      const int r = parse_launch_flag(words[j], words[j + 1], &g_ov_b);
      if (r == 0)
        std::fprintf(
            stderr,
            "--ab: %s is not a launch flag (the flags LaunchOverrides takes: see the usage "
            "comment of bench/moe/moe_bench.cu)\n",
            words[j].c_str());
      if (r <= 0) return 2;
    }
    if (sweep) {
      std::fprintf(stderr, "--ab times one configuration per case: not with --sweep\n");
      return 2;
    }
  }
  if (g_ab_blocks > 0 && (!g_ab || g_sustain_ms == 0)) {
    std::fprintf(stderr,
                 "--ab-blocks %d: needs --ab \"FLAGS\" and --sustain-ms N > 0 (each block is "
                 "held N ms before it is timed)\n",
                 g_ab_blocks);
    return 2;
  }
  // Validate every name before the first (slow) weight fill.
  std::vector<LayerShape> layer_shapes;
  for (const auto& n : shapes) {
    LayerShape sh;
    if (!find_shape(n, &sh)) {
      std::fprintf(stderr,
                   "unknown --shape %s (glm5, dsv3, glm5-tp8, glm5-ep8, dsv3-tp8, dsv3-ep8, "
                   "tp8, ep8)\n",
                   n.c_str());
      return 2;
    }
    if (g_shared && sh.E != sh.E_global) {
      std::fprintf(stderr,
                   "--shared with the expert-parallel shape %s: its rows are only the local "
                   "assignments, not every token (use glm5, dsv3 or a tp8 shape)\n",
                   n.c_str());
      return 2;
    }
    layer_shapes.push_back(sh);
  }
  for (const auto& r : routings) {
    std::vector<int32_t> probe;
    if (!global_routing(r, 1, 256, 8, 1, &probe)) {
      std::fprintf(
          stderr,
          "unknown --routing %s (uniform, zipf<s> e.g. zipf1.5, hot<N>, N >= 8, balanced)\n",
          r.c_str());
      return 2;
    }
  }
  for (const auto& f : fmts)
    if (f != "bf16" && f != "fp8" && f != "nvfp4") {
      std::fprintf(stderr, "unknown --fmt %s (bf16, fp8, nvfp4)\n", f.c_str());
      return 2;
    }
  // Output paths before any GPU work (an unwritable one would only show at the end, or never).
  std::ofstream json;
  if (!json_path.empty()) {
    json.open(json_path);
    if (!json) {
      std::fprintf(stderr, "--json %s: cannot write the file (does its folder exist?)\n",
                   json_path.c_str());
      return 2;
    }
  }
  if (!routing_dir.empty() && !std::filesystem::is_directory(routing_dir)) {
    std::fprintf(stderr, "--routing-dir %s: not a folder (create it first)\n", routing_dir.c_str());
    return 2;
  }
  auto dev = query_device(0);
  if (!dev.ok()) {
    std::fprintf(stderr, "%s\n", dev.status().to_string().c_str());
    return 1;
  }
  std::printf("device: %s\n", describe(*dev).c_str());
  const MoeDeviceLimits lim = moe_limits(*dev);
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  void* flush = nullptr;
  const size_t flush_bytes = size_t{256} << 20;
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMemset(flush, 0, flush_bytes));  // (--flush read reads it)
  std::printf("%-8s %-7s %-5s %5s %5s %4s %3s %4s %10s %9s %7s %9s %10s %5s %5s\n", "shape",
              "routing", "fmt", "T", "rows", "uniq", "nb", "pipe", "time_us", "GB/s", "%4.8TB",
              "TFLOP/s", "heur_us", "cfg", "big");
  for (const LayerShape& sh : layer_shapes) {
    const std::string& sname = sh.name;
    for (const auto& fname : fmts) {
      Layer L;
      L.s = sh;
      L.fmt = fname == "fp8"     ? GroupedFmt::kFp8Block
              : fname == "nvfp4" ? GroupedFmt::kNvfp4
                                 : GroupedFmt::kBf16;
      make_layer(L);
      auto ge = std::make_unique<GroupedExperts>();
      std::string why;
      auto gs = std::make_unique<GroupedExperts>();  // --shared 2: the shared expert alone
      if (!resolve_grouped_experts(L.experts, sh.D, ge.get(), &why) ||
          (g_shared == 1 && !add_grouped_shared_expert(L.shared, ge.get(), &why)) ||
          (g_shared == 2 && !resolve_grouped_shared_alone(L.shared, sh.D, gs.get(), &why))) {
        std::fprintf(stderr, "grouped path refused %s %s: %s\n", sname.c_str(), fname.c_str(),
                     why.c_str());
        return 1;
      }
      // FP8: tensor maps of the weights for the warpgroup-MMA GEMM's TMA loads (--tma).
      for (GroupedExperts* g : {ge.get(), gs.get()}) {
        std::string no;
        if (g->E > 0)
          g->tmaps = upload_grouped_tmaps(
              *g,
              [](size_t n) {
                void* d = nullptr;
                CK(cudaMalloc(&d, n));
                return d;
              },
              &no);
      }
      for (const std::string& rname : routings) {
        for (int64_t T : tokens) {
          std::vector<int32_t> global;
          global_routing(rname, T, sh.E_global, sh.K, 1234 + static_cast<uint32_t>(T), &global);
          const LocalRouting lr = local_routing(sh, global, T);
          // K: routed ids per row; KS: slots per row (the shared expert's included).
          const int64_t R = lr.rows, K = lr.k, KS = ge->slots(K), RK = R * KS;
          if (!routing_dir.empty() && fname == fmts[0]) {
            std::ofstream f(
                routing_dir + "/routing_" + sname + "_" + rname + "_T" + std::to_string(T) + ".bin",
                std::ios::binary);
            f.write(reinterpret_cast<const char*>(lr.ids.data()), lr.ids.size() * 4);
            if (!f) {
              std::fprintf(stderr, "--routing-dir %s: cannot write the routing files\n",
                           routing_dir.c_str());
              return 1;
            }
          }
          // Activations: x, y [R, D] f32, out [R*KS, D] f32, xa [R, D] and h [R*KS, I] 16-bit.
          const size_t act_bytes = size_t(R) * sh.D * 10 + size_t(RK) * (sh.D * 4 + sh.I * 2) +
                                   size_t(RK) * 16 + (size_t{64} << 20);
          size_t free_b = 0, total_b = 0;
          CK(cudaMemGetInfo(&free_b, &total_b));
          if (act_bytes > free_b) {
            std::printf("%-8s %-7s %-5s %5lld: skipped, activations need %.1f GiB, %.1f GiB free\n",
                        sname.c_str(), rname.c_str(), fname.c_str(), static_cast<long long>(T),
                        act_bytes / double(1 << 30), free_b / double(1 << 30));
            continue;
          }
          const MoeShape ms{R, sh.D, sh.I, ge->E, KS, L.fmt};  // as CudaOps::moe_experts
          const MoeKernelConfig heur = moe_heuristic_config(ms, lim);
          std::vector<MoeKernelConfig> cands;
          if (sweep) {
            for (const auto& c : moe_candidate_configs(ms, lim))
              if (sweep >= 2 || (c.warps_per_cta == 8 && c.ctas_per_sm == 1)) cands.push_back(c);
            if (std::find(cands.begin(), cands.end(), heur) == cands.end()) cands.push_back(heur);
          } else {
            MoeKernelConfig c = heur;
            if (force_wg == 1) c = kMoeWgmmaConfig;
            if (force_wg == 2) c = moe_streaming_config(ms, lim);
            if (force_nb) c.nb = force_nb;
            if (force_warps) c.warps_per_cta = force_warps;
            if (force_ctas) c.ctas_per_sm = force_ctas;
            if (force_pipe >= 0) c.pipelined = force_pipe == 1;
            if (!moe_config_fits(c, L.fmt, lim)) {
              std::fprintf(stderr, "forced configuration does not fit this device; skipped\n");
              continue;
            }
            cands.push_back(c);
          }
          // --ab "--wg N": B's configuration for each of A's (else A's own).
          auto config_b = [&](const MoeKernelConfig& c) {
            return ab_wg == 1   ? kMoeWgmmaConfig
                   : ab_wg == 2 ? moe_streaming_config(ms, lim)
                   : ab_wg == 0 ? heur
                                : c;
          };
          if (g_ab && ab_wg >= 0 && !moe_config_fits(config_b(heur), L.fmt, lim)) {
            std::fprintf(stderr,
                         "--ab --wg %d: that configuration does not fit this device; skipped\n",
                         ab_wg);
            continue;
          }
          std::vector<MoeKernelConfig> sized = cands;  // every configuration a graph runs
          if (g_ab)
            for (const MoeKernelConfig& c : cands) sized.push_back(config_b(c));
          const int64_t mt = grouped_max_tiles(R, KS, ge->E, 8);  // the widest: 8-token tiles
          float *x, *y, *w, *out;
          int32_t *idd, *slot, *tiles, *ntiles;
          void *xa, *h;
          CK(cudaMalloc(&x, R * sh.D * 4));
          CK(cudaMalloc(&y, R * sh.D * 4));
          CK(cudaMalloc(&w, R * K * 4));
          CK(cudaMalloc(&out, RK * sh.D * 4));
          CK(cudaMalloc(&idd, R * K * 4));
          CK(cudaMalloc(&slot, RK * 4));
          CK(cudaMalloc(&tiles, mt * 16));
          CK(cudaMalloc(&ntiles, 12));    // [3]: streaming and big-tile counts (64 / 128 tokens)
          CK(cudaMemset(ntiles, 0, 12));  // (the third: written only by the hybrid's split)
          CK(cudaMalloc(&xa, R * sh.D * 2));
          CK(cudaMalloc(&h, RK * sh.I * 2));
          fill_f32<<<256, 256>>>(x, R * sh.D, 0.5f);
          fill_f32<<<64, 256>>>(w, R * K, 0.125f);
          CK(cudaMemcpy(idd, lr.ids.data(), R * K * 4, cudaMemcpyHostToDevice));
          const GroupedLaunch l_alone =
              with_overrides(moe_shared_alone_launch(R, sh.D, sh.I, L.fmt, lim));
          GroupedSkSizes sk = moe_sk_sizes(sized, lim, L.fmt);
          if (g_shared == 2) {  // one workspace for both calls (they run one after the other)
            const GroupedSkSizes z = grouped_sk_sizes(l_alone);
            sk.warps = std::max(sk.warps, z.warps);
            sk.partial_floats = std::max(sk.partial_floats, z.partial_floats);
          }
          int32_t* sk_counters = nullptr;
          float* sk_partials = nullptr;
          CK(cudaMalloc(&sk_counters, std::max<int64_t>(sk.counters(), 1) * 4));
          CK(cudaMalloc(&sk_partials, std::max<int64_t>(sk.partial_floats, 1) * 4));
          float* slot_w = nullptr;
          CK(cudaMalloc(&slot_w, RK * 4));
          int64_t qbytes =
              g_shared == 2 ? grouped_fp8_act_bytes(l_alone, L.fmt, R, sh.D, sh.I, 1) : 0;
          for (const MoeKernelConfig& c : cands)
            for (const LaunchOverrides* o : {&g_ov, g_ab ? &g_ov_b : &g_ov})
              qbytes = std::max(
                  qbytes, grouped_fp8_act_bytes(o->apply(moe_launch(o == &g_ov_b ? config_b(c) : c,
                                                                    lim, L.fmt, R, ge->E, ge->I)),
                                                L.fmt, R, sh.D, sh.I, KS));
          uint8_t* q = nullptr;
          CK(cudaMalloc(&q, std::max<int64_t>(qbytes, 16)));
          GroupedScratch s{xa, slot, tiles, ntiles, h, out, sk_counters, sk_partials, slot_w, q};
          const int64_t uniq = lr.unique + (g_shared ? 1 : 0);
          const double bytes = uniq * L.expert_bytes + 2.0 * R * sh.D * 4;
          const double flop = 2.0 * R * (K + (g_shared ? 1 : 0)) * 3.0 * sh.D * sh.I;
          double best_us = 1e30, heur_us = 0, ab_us = 0, ab_ratio = 0;
          MoeKernelConfig best = heur;
          int best_big = -1;   // the hybrid's 128-token tiles in the reported configuration's call
          PhaseTimes phases;   // --phases 1: one launch, kernel by kernel
          double gemm_us = 0;  // ... the GEMM kernels' sum
          for (const MoeKernelConfig& cfg : cands) {
            const GroupedLaunch l = with_overrides(moe_launch(cfg, lim, L.fmt, R, ge->E, ge->I));
            auto capture = [&](const GroupedLaunch& lx, cudaGraph_t* graph) {
              auto layer = [&] {
                run_grouped_experts(*ge, y, sh.D, x, sh.D, idd, K, w, K, R, K, s, lx, st);
                if (g_shared == 2)  // its R slots fit the routed call's scratch
                  run_grouped_experts(*gs, y, sh.D, x, sh.D, idd, K, w, K, R, 0, s, l_alone, st,
                                      true);
              };
              layer();  // eager warm-up
              CK(cudaStreamSynchronize(st));
              cudaGraphExec_t exec;
              CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
              layer();
              CK(cudaStreamEndCapture(st, graph));
              CK(cudaGraphInstantiate(&exec, *graph, 0));
              return exec;
            };
            cudaGraph_t graph, graph_b = nullptr;
            cudaGraphExec_t exec = capture(l, &graph), exec_b = nullptr;
            // --ab: the same configuration with the B overrides, its replays interleaved with
            // A's (A B, then B A, ...), so both see the same clocks and power state.
            if (g_ab)
              exec_b = capture(g_ov_b.apply(moe_launch(config_b(cfg), lim, L.fmt, R, ge->E, ge->I)),
                               &graph_b);
            const std::string label = sname + " " + rname + " " + fname + " T " + std::to_string(T);
            // (with --ab-blocks: medians over the rounds of the blocks' medians and ratios)
            ReplayTimes rt = time_replays({st, exec, exec_b, flush, flush_bytes, g_flush_reads},
                                          iters, g_sustain_ms, g_ab_blocks, label);
            if (g_ab) {  // A runs last: its big-tile count below
              CK(cudaGraphLaunch(exec, st));
              CK(cudaStreamSynchronize(st));
            }
            // The hybrid's big-tile count (GroupedScratch::num_tiles[1], written by the grouping
            // only when the call has the hybrid; 0 when its gate kept every expert streaming),
            // with its split's 128-token tiles (num_tiles[2]).
            int32_t big = -1;
            if (grouped_hybrid(l, R)) {
              int32_t nb[3];
              CK(cudaMemcpy(nb, ntiles, 12, cudaMemcpyDeviceToHost));
              big = nb[1] + nb[2];
            }
            const double us = 1e3 * median(rt.a);
            if (g_ab) {
              ab_us = 1e3 * median(rt.b);
              ab_ratio = median(rt.ratio);
              std::printf("  ab %s: A %.1f us, B %.1f us, B/A %.4f (median of %d %s; B: %s)\n",
                          label.c_str(), us, ab_us, ab_ratio, static_cast<int>(rt.a.size()),
                          g_ab_blocks > 0 ? "rounds of sustained blocks" : "paired replays",
                          ab_flags.c_str());
            }
            if (us < best_us) best_us = us, best = cfg, best_big = big;
            if (cfg == heur) heur_us = us;
            // The heuristic's launch (with --sweep) or the one configuration timed (forced by
            // --wg / --nb / ... or the heuristic's), kernel by kernel.
            if (g_phases && (cfg == heur || !sweep)) {
              cudaGraph_t graph_p;
              CK(cudaGraphExecDestroy(capture(l, &graph_p)));
              phases = time_phases(
                  graph_p, {st, nullptr, nullptr, flush, flush_bytes, g_flush_reads}, iters);
              CK(cudaGraphDestroy(graph_p));
              gemm_us = 0;
              std::printf("  phases %s:", label.c_str());
              for (size_t k = 0; k < phases.ms.size(); ++k) {
                std::printf("%s %s %.1f", k ? " |" : "", phases.names[k].c_str(),
                            1e3 * phases.ms[k]);
                if (phase_is_gemm(phases.names[k])) gemm_us += 1e3 * phases.ms[k];
              }
              if (phases.why.empty())
                std::printf(" us; GEMMs %.1f us = %.1f TF/s (layer %.1f us)\n", gemm_us,
                            flop / (gemm_us * 1e6), us);
              else
                std::printf(" not timed: %s\n", phases.why.c_str());
            }
            if (sweep)
              std::printf(
                  "  sweep %s %s %s T %lld nb %d pipe %d tc %d wgmma %d warps %d ctas/SM %d: %.1f "
                  "us\n",
                  sname.c_str(), rname.c_str(), fname.c_str(), static_cast<long long>(T), cfg.nb,
                  cfg.pipelined ? 1 : 0, cfg.tc ? 1 : 0, cfg.wgmma ? 1 : 0, cfg.warps_per_cta,
                  cfg.ctas_per_sm, us);
            if (g_ab) {
              CK(cudaGraphExecDestroy(exec_b));
              CK(cudaGraphDestroy(graph_b));
            }
            CK(cudaGraphExecDestroy(exec));
            CK(cudaGraphDestroy(graph));
          }
          const double us = best_us, gbs = bytes / (us * 1e3), tflops = flop / (us * 1e6);
          // cfg: warps per CTA x CTAs per SM of the reported configuration, "wg" for the
          // warpgroup-MMA GEMM, "tc" for the mma.sync tile GEMM.
          const std::string cfg_s = best.wgmma ? "wg"
                                    : best.tc  ? "tc"
                                               : std::to_string(best.warps_per_cta) + "x" +
                                                    std::to_string(best.ctas_per_sm);
          std::printf(
              "%-8s %-7s %-5s %5lld %5lld %4lld %3d %4d %10.1f %9.0f %6.1f%% %9.1f %10.1f %5s "
              "%5s\n",
              sname.c_str(), rname.c_str(), fname.c_str(), static_cast<long long>(T),
              static_cast<long long>(R), static_cast<long long>(uniq), best.nb,
              best.pipelined ? 1 : 0, us, gbs, 100.0 * gbs / 4800.0, tflops, heur_us, cfg_s.c_str(),
              best_big < 0 ? "-" : std::to_string(best_big).c_str());
          std::fflush(stdout);
          if (json)
            json << "{\"shape\":\"" << sname << "\",\"routing\":\"" << rname << "\",\"fmt\":\""
                 << fname << "\",\"T\":" << T << ",\"rows\":" << R << ",\"K\":" << K
                 << ",\"D\":" << sh.D << ",\"I\":" << sh.I << ",\"E\":" << sh.E
                 << ",\"E_global\":" << sh.E_global << ",\"ep_rank\":" << lr.rank
                 << ",\"unique\":" << uniq << ",\"shared\":" << g_shared << ",\"nb\":" << best.nb
                 << ",\"pipelined\":" << (best.pipelined ? 1 : 0)
                 << ",\"warps_per_cta\":" << best.warps_per_cta
                 << ",\"ctas_per_sm\":" << best.ctas_per_sm << ",\"tc\":" << (best.tc ? 1 : 0)
                 << ",\"wgmma\":" << (best.wgmma ? 1 : 0) << ",\"big_tiles\":" << best_big
                 << ",\"us\":" << us << ",\"heuristic_us\":" << heur_us;
          if (json && g_ab) json << ",\"ab_us\":" << ab_us << ",\"ab_ratio\":" << ab_ratio;
          if (json && !phases.ms.empty() && phases.why.empty()) {
            json << ",\"gemm_us\":" << gemm_us << ",\"phases\":[";
            for (size_t k = 0; k < phases.ms.size(); ++k)
              json << (k ? "," : "") << "[\"" << phases.names[k] << "\"," << 1e3 * phases.ms[k]
                   << "]";
            json << "]";
          }
          if (json)
            json << ",\"bytes\":" << bytes << ",\"flop\":" << flop << ",\"gbs\":" << gbs
                 << ",\"pct_peak\":" << 100.0 * gbs / 4800.0 << ",\"tflops\":" << tflops << "}"
                 << std::endl;
          for (void* p : std::initializer_list<void*>{x, y, w, out, idd, slot, tiles, ntiles, xa, h,
                                                      sk_counters, sk_partials, slot_w, q})
            CK(cudaFree(p));
        }
      }
      for (GroupedExperts* g : {ge.get(), gs.get()})
        if (g->tmaps != nullptr) CK(cudaFree(const_cast<void*>(g->tmaps)));
      free_layer(L);
    }
  }
  return 0;
}
