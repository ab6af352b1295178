// moe_bench's launch flags: overrides of the GroupedLaunch that moe_launch chooses (--f8act,
// --pdl, --hybrid-min, ...), parsed from the command line and from --ab's string alike.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "backends/cuda/kernels/moe_grouped/moe_grouped_experts.h"

namespace moe::bench {

using cuda::GroupedLaunch;

// Overrides of the launch moe_launch chooses (-1: its choice / the launch's default).
struct LaunchOverrides {
  int f8act = -1;            // --f8act 0|1
  int r2 = -1;               // --r2 0|1 (-1: run_grouped_experts' choice)
  int two_step = -1;         // --two-step 0|1
  int tma = -1;              // --tma 0|1
  int ws = -1;               // --ws 0|1
  int pairs = -1;            // --pairs 0|1
  int narrow = -1;           // --narrow 0|1 (-1: chosen per call)
  int pdl = -1;              // --pdl 0|1
  int hybrid_min = -1;       // --hybrid-min N (0: no hybrid)
  int hybrid_pdl = -1;       // --hybrid-pdl 0|1
  int pdl_light = -1;        // --pdl-light 0|1
  int split_k = -1;          // --split-k 0|1
  int hquant = -1;           // --hquant 0|1
  int nvf8 = -1;             // --nvf8 0|1 (1: NVFP4 computed in FP8, with FP8 activations)
  int act_t = -1;            // --act-t 0|1 (GroupedLaunch::act_transpose)
  int dyn = -1;              // --dyn 0|1 (GroupedLaunch::ring_dynamic)
  int down_act_tma = -1;     // --act-tma 0|1 (GroupedLaunch::down_act_tma)
  int x_pos = -1;            // --x-pos 0|1 (GroupedLaunch::x_pos)
  int early_gu = -1;         // --early-gu 0|1 (GroupedLaunch::early_gate_up)
  int group_warp = -1;       // --group-warp 0|1 (GroupedLaunch::group_one_warp)
  int f4p2 = -1;             // --f4p2 N (GroupedLaunch::f4p2_max_mean)
  int f4p2_big = -1;         // --f4p2-big 0|1|2 (GroupedLaunch::f4p2_big)
  int f4p2_split = -1;       // --f4p2-split N (GroupedLaunch::f4p2_split)
  double hybrid_gb = -1;     // --hybrid-gb X (GroupedLaunch::hybrid_min_bytes / 1e9)
  double hybrid_share = -1;  // --hybrid-share X (GroupedLaunch::hybrid_min_share)
  double split_share = -1;   // --f4p2-split-share X (GroupedLaunch::f4p2_split_share)
  int defer = -1;            // --defer 0|1 (GroupedLaunch::sibling_defer)
  int early_down = -1;       // --early-down N (GroupedLaunch::early_down_max_slots)
  int group_yield = -1;      // --group-yield 0|1 (GroupedLaunch::group_yields)
  int bf16_tma = -1;         // --bf16-tma 0|1 (GroupedLaunch::bf16_tma)
  int bf16_ws = -1;          // --bf16-ws 0|1|2 (GroupedLaunch::bf16_ws)
  int bf16_defer = -1;       // --bf16-defer 0|1 (GroupedLaunch::bf16_defer)
  int x_scatter = -1;        // --x-scatter 0|1 (GroupedLaunch::x_pos_scatter)
  int narrow_box = -1;       // --narrow-box 0|1 (GroupedLaunch::narrow_act_box)

  // The launch with these overrides (--hybrid-min only where moe_launch gave the launch a
  // hybrid: sm_90).
  GroupedLaunch apply(GroupedLaunch l) const {
    if (f8act >= 0) l.fp8_act = f8act == 1;
    l.pipe_r2 = r2;
    if (two_step >= 0) l.pipe_two_step = two_step == 1;
    if (tma >= 0) l.wgmma_tma = tma == 1;
    if (ws >= 0) l.wgmma_ws = ws == 1;
    if (pairs >= 0) l.wgmma_pairs = pairs == 1;
    if (narrow >= 0) l.wgmma_narrow = narrow;
    if (pdl >= 0) l.pdl = pdl == 1;
    if (hybrid_min >= 0 && l.wgmma_min_tokens > 0) l.wgmma_min_tokens = hybrid_min;
    if (hybrid_pdl >= 0) l.hybrid_pdl = hybrid_pdl == 1;
    if (pdl_light >= 0) l.pdl_light = pdl_light == 1;
    if (split_k >= 0) l.hybrid_split_k = split_k == 1;
    if (hquant >= 0) l.wgmma_hquant = hquant == 1;
    if (nvf8 >= 0) {
      l.nvfp4_f8 = nvf8 == 1;
      if (nvf8 == 1) l.fp8_act = true;
    }
    if (act_t >= 0) l.act_transpose = act_t == 1;
    if (dyn >= 0) l.ring_dynamic = dyn == 1;
    if (down_act_tma >= 0) l.down_act_tma = down_act_tma == 1;
    if (x_pos >= 0) l.x_pos = x_pos;
    if (early_gu >= 0) l.early_gate_up = early_gu == 1;
    if (group_warp >= 0) l.group_one_warp = group_warp == 1;
    if (f4p2 >= 0) l.f4p2_max_mean = f4p2;
    if (f4p2_big >= 0) l.f4p2_big = f4p2_big;
    if (f4p2_split >= 0) l.f4p2_split = f4p2_split;
    if (hybrid_gb >= 0) l.hybrid_min_bytes = hybrid_gb * 1e9;
    if (hybrid_share >= 0) l.hybrid_min_share = hybrid_share;
    if (split_share >= 0) l.f4p2_split_share = split_share;
    if (defer >= 0) l.sibling_defer = defer == 1;
    if (early_down >= 0) l.early_down_max_slots = early_down;
    if (group_yield >= 0) l.group_yields = group_yield == 1;
    if (bf16_tma >= 0) l.bf16_tma = bf16_tma == 1;
    if (bf16_ws >= 0) l.bf16_ws = bf16_ws;
    if (bf16_defer >= 0) l.bf16_defer = bf16_defer == 1;
    if (x_scatter >= 0) l.x_pos_scatter = x_scatter == 1;
    if (narrow_box >= 0) l.narrow_act_box = narrow_box == 1;
    return l;
  }
};
// A number in [0, hi] for `flag` (value `v`) into *out; false (with a message saying what is
// expected) otherwise.
inline bool parse_in_range(const std::string& flag, const std::string& v, double hi,
                           const char* what, double* out) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x >= 0) || x > hi) {
    std::fprintf(stderr, "%s %s: expected %s\n", flag.c_str(), v.c_str(), what);
    return false;
  }
  *out = x;
  return true;
}

// A whole decimal number in [lo, hi] for `flag` (value `v`) into *out; false (with a message
// saying what is expected) otherwise.
inline bool parse_int_in_range(const std::string& flag, const std::string& v, long long lo,
                               long long hi, const char* what, long long* out) {
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < lo || n > hi) {
    std::fprintf(stderr, "%s %s: expected %s\n", flag.c_str(), v.c_str(), what);
    return false;
  }
  *out = n;
  return true;
}

// One launch flag (LaunchOverrides) `a` with value `v` into *o: 1 when taken, 0 when `a` is not a
// launch flag, -1 for a bad value (with a message saying what is expected).
inline int parse_launch_flag(const std::string& a, const std::string& v, LaunchOverrides* o) {
  // Whole numbers in [0, hi] (what: the message saying what is expected).
  struct IntFlag {
    const char* name;
    long long hi;
    const char* what;
    int* out;
  };
  const IntFlag ints[] = {
      {"--hybrid-min", 1LL << 30, "a token count >= 0 (0: no hybrid)", &o->hybrid_min},
      {"--f4p2-big", 2, "0 (never), 1 (at T <= 64) or 2 (always)", &o->f4p2_big},
      {"--f4p2-split", 1 << 20,
       "N >= 0 (slots from which an expert of a P2 call takes 128-token tiles; 0: no split)",
       &o->f4p2_split},
      {"--f4p2", 1 << 20,
       "N >= 0 (slots per expert below which F4 runs on two producers; 0: never)", &o->f4p2},
      {"--early-down", 32,
       "0..32 (slots up to which down issues weights before its wait; 0: never)", &o->early_down},
      {"--bf16-ws", 2, "0 (the 256-thread kernel), 1 (warp-specialized) or 2 (its pairs)",
       &o->bf16_ws}};
  for (const IntFlag& f : ints) {
    if (a != f.name) continue;
    long long n = 0;
    if (!parse_int_in_range(a, v, 0, f.hi, f.what, &n)) return -1;
    *f.out = static_cast<int>(n);
    return 1;
  }
  if (a == "--hybrid-gb")
    return parse_in_range(a, v, 1e6, "GB >= 0 (0: the hybrid whenever an expert qualifies)",
                          &o->hybrid_gb)
               ? 1
               : -1;
  if (a == "--hybrid-share")
    return parse_in_range(a, v, 1, "a share in 0..1 (0: only the --hybrid-gb bound)",
                          &o->hybrid_share)
               ? 1
               : -1;
  if (a == "--f4p2-split-share")
    return parse_in_range(a, v, 1,
                          "a share in 0..1 (the split only where its experts of --f4p2-split "
                          "slots hold it: of the hybrid's big experts' slots, of a full "
                          "launch's 8-token tiles; 0: always)",
                          &o->split_share)
               ? 1
               : -1;
  int* flag01 = a == "--f8act"         ? &o->f8act
                : a == "--r2"          ? &o->r2
                : a == "--two-step"    ? &o->two_step
                : a == "--tma"         ? &o->tma
                : a == "--ws"          ? &o->ws
                : a == "--pairs"       ? &o->pairs
                : a == "--narrow"      ? &o->narrow
                : a == "--pdl"         ? &o->pdl
                : a == "--hybrid-pdl"  ? &o->hybrid_pdl
                : a == "--pdl-light"   ? &o->pdl_light
                : a == "--split-k"     ? &o->split_k
                : a == "--hquant"      ? &o->hquant
                : a == "--nvf8"        ? &o->nvf8
                : a == "--act-t"       ? &o->act_t
                : a == "--dyn"         ? &o->dyn
                : a == "--act-tma"     ? &o->down_act_tma
                : a == "--x-pos"       ? &o->x_pos
                : a == "--early-gu"    ? &o->early_gu
                : a == "--group-warp"  ? &o->group_warp
                : a == "--defer"       ? &o->defer
                : a == "--group-yield" ? &o->group_yield
                : a == "--bf16-tma"    ? &o->bf16_tma
                : a == "--bf16-defer"  ? &o->bf16_defer
                : a == "--x-scatter"   ? &o->x_scatter
                : a == "--narrow-box"  ? &o->narrow_box
                                       : nullptr;
  if (flag01 == nullptr) return 0;
  if (v != "0" && v != "1") {
    std::fprintf(stderr, "%s %s: expected 0 or 1\n", a.c_str(), v.c_str());
    return -1;
  }
  *flag01 = v == "1";
  return 1;
}

}  // namespace moe::bench
