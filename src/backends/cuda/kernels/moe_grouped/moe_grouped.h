// Grouped routed experts (expert-major): tokens are grouped by expert on the device, then each
// touched expert's weights are streamed once per tile of up to 8*NB of its tokens.
//   1. moe_group:   xa = activations of x in the GEMM input type; counts, offsets and the tile
//                   list (expert, first position, tokens) of the grouped order, all on device;
//                   slot_w = the routing weight of every slot.
//   2. gate_up:     h[pos, :] = silu(gate_e xa[tok]) * (up_e xa[tok])   (e, tok of position pos)
//   3. down:        out[slot, :] = slot_w[slot] * down_e h[pos]         (slot = t*K + k)
//   4. combine:     y[t, :] = sum_k out[t*K + k, :]
// A shared expert (always active, weight 1) can ride along as one more expert: with `shared` set,
// expert E-1 is the shared one and every token has K = (routed experts per token) + 1 slots, the
// last one (k = K-1) on the shared expert with weight 1; ids and routing weights keep their K-1
// routed columns. One group / gate_up / down / combine sequence then computes the whole layer.
// No host synchronisation and fixed grids, so the whole sequence is CUDA-graph capturable.
// Deterministic: every output element is written once by one thread, no atomics on values. The
// pipelined GEMMs split the last round of work items over all warps (stream-K, see the .cuh):
// partial sums go to a workspace and the last contributor of an item adds them up in a fixed
// order, so results do not depend on timing either.
// The per-call rules (which kernel path, items and instances a call of T tokens takes, with the
// measurements behind each threshold) are in moe_grouped_rules.h.
#pragma once

#include <cstdint>

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

constexpr int kMaxGroupedExperts = 512;

// Weight formats of the grouped kernels (ops::WeightFormat + dtype).
enum class GroupedFmt : int {
  kBf16 = 0,      // BF16 weights, BF16 activations, BF16 mma
  kFp8Block = 1,  // E4M3 weights + F32 scale per 128x128, F16 activations, F16 mma
  kNvfp4 = 2,     // E2M1 weights + E4M3 scale per 16 + F32 global, F16 activations, F16 mma
};

// Shared-memory pipeline of the grouped GEMMs (pipelined configs). A k-step of one warp is
// 4 x 32 lanes x 16 weight bytes (+ 4 x 32 x 4 bytes of nvfp4 scales); the ring of a warp holds
// grouped_pipe_groups copy groups of grouped_pipe_batch steps, all but one in flight.
constexpr int grouped_pipe_step_bytes(GroupedFmt f) {
  return f == GroupedFmt::kNvfp4 ? 4 * 32 * 16 + 4 * 32 * 4 : 4 * 32 * 16;
}
constexpr int grouped_pipe_batch(GroupedFmt f) { return f == GroupedFmt::kNvfp4 ? 1 : 2; }
constexpr int grouped_pipe_groups(GroupedFmt f) { return f == GroupedFmt::kNvfp4 ? 4 : 3; }
constexpr int grouped_pipe_stages(GroupedFmt f) {
  return grouped_pipe_groups(f) * grouped_pipe_batch(f);
}
// Shared memory of one warp's ring: the bound over formats (12,288 B).
constexpr int kGroupedPipeWarpBytes = 6 * 4 * 32 * 16;
// Two-step stages (GroupedLaunch::pipe_two_step, moe_gemm_pipe_kernel's SPS = 2; packed NVFP4
// with items of one sub-block): 2 stages of two k-steps in the same 12 KB per warp.
constexpr int kGroupedPipe2Stages = 2;
constexpr int kGroupedPipe2StageBytes = 2 * grouped_pipe_step_bytes(GroupedFmt::kNvfp4);
static_assert(kGroupedPipe2Stages * kGroupedPipe2StageBytes <= kGroupedPipeWarpBytes);
// Shared memory one warp's ring takes in a launch (the bound above for BF16 and FP8; NVFP4 only
// its stages, 10,240 B, + 128 for the bulk-copy instances' mbarriers): 4 CTAs of 4 NVFP4 warps
// then fill the 164 KB carveout (with the driver's 1 KB per CTA) instead of 196 KB, L1 92 KB
// instead of 60. Measured on the H200 (docs/perf.md session 34): 16-token tiles (T 256) 1.5-4%
// faster, the rest level (L2 reads unchanged: the activations' L1 reuse is not capacity-bound).
constexpr int grouped_pipe_warp_bytes(GroupedFmt f, bool bulk) {
  return f == GroupedFmt::kNvfp4
             ? grouped_pipe_stages(f) * grouped_pipe_step_bytes(f) + (bulk ? 128 : 0)
             : kGroupedPipeWarpBytes;
}
static_assert(kGroupedPipe2Stages * kGroupedPipe2StageBytes ==
              grouped_pipe_warp_bytes(GroupedFmt::kNvfp4, false));
// 4 CTAs of 4 NVFP4 ring warps (+ the driver's 1 KB each) within the 164 KB carveout.
static_assert(4 * (4 * grouped_pipe_warp_bytes(GroupedFmt::kNvfp4, false) + 1024) <= 164 * 1024);
static_assert(grouped_pipe_stages(GroupedFmt::kNvfp4) *
                      grouped_pipe_step_bytes(GroupedFmt::kNvfp4) <=
                  kGroupedPipeWarpBytes &&
              grouped_pipe_stages(GroupedFmt::kBf16) * grouped_pipe_step_bytes(GroupedFmt::kBf16) <=
                  kGroupedPipeWarpBytes);

// Tensor-core tile GEMM (tc configs, BF16; sm80_moe_tile_gemm.cuh): a CTA of 8 warps computes
// (tile of 64 or 128 tokens) x (128 weight rows) through a ring of kGroupedTileStages stages of
// [tokens + 128 rows] x kGroupedTileK bf16 (96 KB for 128-token tiles: two CTAs per sm_90 SM,
// one on sm_120).
constexpr int kGroupedTileK = 64;
constexpr int kGroupedTileStages = 3;
constexpr int grouped_tile_smem_bytes(int tile_tokens) {
  return kGroupedTileStages * (tile_tokens + 128) * kGroupedTileK * 2;
}

// Hopper warpgroup-MMA tile GEMM (wgmma configs, BF16, sm_90a; sm90_moe_wgmma_gemm.cuh): one
// 256-thread CTA per SM computes (tile of 128 tokens) x (BN = 256 or 128 weight rows) through a
// ring of 4 stages of [128 tokens + BN rows] x 64 k bf16 (+ 1 KB to align the swizzle atoms).
constexpr int grouped_wgmma_smem_bytes(int bn) { return 4 * (128 + bn) * 64 * 2 + 1024; }
// Its NVFP4-in-FP8 kernel (GroupedLaunch::nvfp4_f8; sm90_moe_wgmma_f4.cuh): 3 stages of [128
// tokens + 256 rows] x 128 k E4M3, 3 raw stages of NVFP4 codes and scale words (20 KB), the E4M3
// tables of the 256 scales (2 KB), a full and an empty mbarrier per stage, 1 KB of alignment: the
// largest CTA a wgmma launch can take.
constexpr int grouped_wgmma_f4_smem_bytes() {
  return 3 * (128 + 256) * 128 + 3 * (8 * 128 * 16 + 8 * 128 * 4) + 256 * 8 + 16 * 3 + 1024;
}
constexpr int kGroupedBigTile = 128;  // tokens per tile of the warpgroup-MMA GEMM
// ... of its NVFP4 two-producer kernel (GroupedLaunch::f4p2_max_mean, f4p2_big)
constexpr int kGroupedF4p2Tile = kGroupedBigTile / 2;
// That kernel (P2): 4 stages of [64 tokens + 256 rows] x 128 k E4M3, 3 raw stages, the tables,
// the stages' mbarriers, 1 KB of alignment.
constexpr int grouped_wgmma_f4p2_smem_bytes() {
  return 4 * (kGroupedF4p2Tile + 256) * 128 + 3 * (8 * 128 * 16 + 8 * 128 * 4) + 256 * 8 + 16 * 4 +
         1024;
}

// One launch configuration of the grouped GEMMs (chosen by moe_config from DeviceInfo).
struct GroupedLaunch {
  int nb = 1;             // tokens per tile = 8 * nb (nb in {1, 2, 4, 8})
  int warps_per_cta = 8;  // warps of one CTA (each warp takes work items on its own)
  int ctas_per_sm = 2;    // persistent grid = sm_count * ctas_per_sm
  int sm_count = 132;
  bool pipelined = false;  // shared-memory cp.async ring of the weight stream (see the .cuh)
  // Tensor-core tile GEMM (BF16 only): tiles of 8 * nb = 64 or 128 tokens, nb in {8, 16};
  // warps_per_cta must be 8; ctas_per_sm is an upper bound (2 fit on sm_90).
  bool tc = false;
  // With tc and nb 16 on sm_90a: the warpgroup-MMA kernel instead of the mma.sync one (one CTA
  // per SM).
  bool wgmma = false;
  // Register-streaming configs on sm_90a: experts with at least this many tokens of a call go to
  // the warpgroup-MMA GEMM in 128-token tiles (decided on the device from the routing), the rest
  // to the streaming GEMM (0: off).
  int wgmma_min_tokens = 0;
  // The hybrid engages in a call if its qualifying experts (wgmma_min_tokens or more) would
  // stream at least this many weight bytes in the streaming GEMM (their tokens / 8, i.e. 8-token
  // tiles, times an expert's gate_up + down bytes) or hold hybrid_min_share (below), decided on
  // the device (MoeGroupParams::big_min_tiles, big_min_share); else every expert streams and the
  // warpgroup-MMA launches find empty lists.
  // 0: whenever one expert qualifies. The warpgroup-MMA GEMM runs after the streaming one, so a few
  // qualifying experts leave most SMs idle for its whole k-loop; moe_launch sets it per format from
  // measurements.
  double hybrid_min_bytes = 0;
  // ... or if the qualifying experts hold at least this share of the call's 8-token tiles (all
  // experts' tokens / 8, rounded up per expert): then little is left for the streaming GEMM, whose
  // launches are nearly empty, and the bytes bound above does not apply (it prices each 8-token
  // tile at the expert's full weights, which small experts serve from L2). Only with
  // hybrid_min_bytes > 0; 0: no such condition. moe_launch sets it per format from measurements.
  double hybrid_min_share = 0;
  // ... counting toward that share only experts with at least this many tokens (and at least
  // wgmma_min_tokens; 0: those): NVFP4's big tiles lose at 64 tokens or fewer.
  int hybrid_share_min_tokens = 0;
  // FP8 block-128 experts on the warpgroup-MMA GEMM (the tc launch or the hybrid's big tiles):
  // activations quantized to E4M3 per (row, 128 k) (grouped_fp8_act_bytes of scratch) and FP8
  // wgmma with both block scales applied per 128 k; false: F16 activations, weights dequantized
  // to F16 on the way to shared memory. moe_launch sets it for FP8 on sm_90a.
  bool fp8_act = false;
  // With fp8_act: NVFP4 experts on the warpgroup-MMA GEMM (the wgmma launch, or the hybrid's big
  // tiles where it does not split gate_up) computed in FP8 too, the weights dequantized to E4M3
  // (value * block scale, rounded to 4 significant bits) by the warp-specialized kernel's
  // producer warpgroup (moe_wgmma_f4ws_kernel) and FP8 wgmma on E4M3 activations, instead of F16
  // weights and activations on F16 wgmma. moe_launch sets it with the wgmma launch.
  bool nvfp4_f8 = false;
  // With fp8_act: the warpgroup-MMA gate_up quantizes h to E4M3 in its epilogue (per token and
  // 128-column block, moe_quant_rows' rule bit for bit: its 128 h columns are one CTA's item)
  // instead of writing 16-bit h for a moe_quant_rows launch between the GEMMs. The codes go to h's
  // scratch when every expert is on the warpgroup-MMA GEMM (l.wgmma), else (the hybrid) to a region
  // of q after x's (grouped_fp8_h_offset).
  bool wgmma_hquant = true;
  // NVFP4 ring with 8-token tiles (pipelined, nb 1): work items of two 16-row sub-blocks of each
  // matrix (down: 2 x 32 rows), one activation load per k-step for both (moe_gemm_pipe_kernel's
  // R = 2): 1 always, 0 never, -1 chosen per GEMM by run_grouped_experts (grouped_pipe_r2; a
  // launch_moe_gemm of -1 runs one sub-block). Ignored by other launches and when N is not a
  // multiple of 32 (gate_up) / 64 (down).
  int pipe_r2 = -1;
  // NVFP4 ring with items of one sub-block and packed weights (nb 1 or 2, pipelined): stages of
  // two k-steps (2 per warp in the same 12 KB, one in flight while the other is computed, filled
  // by every lane's cp.async) instead of 4 stages of one (grouped_pipe_two_step; nb 2: instead of
  // the bulk-copied one-step stages). Measured on the H200 (docs/perf.md, 2026-12-02 session 17;
  // the heuristic's launches, same routing, on / off): glm5 T 1 / 2 / 4 / 8 49.5 / 59.3 / 68.4 /
  // 77.4 against 47.7 / 57.5 / 66.5 / 74.2% of 4.8 TB/s, dsv3 T 1..8 +1.7..+2.4 points, TP8 and
  // EP8 T 1..64 +0.6..+1.9. nb 2 (session 24, two calls, whole layer): T 192 3.4-8.5% faster
  // (glm5 / dsv3 / TP8 / EP8), T 256 1.7-5.3% (glm5 -2.2 / +0.3), T 384 / 512 level (glm5 T 384
  // +1.3 / +1.5%).
  bool pipe_two_step = true;
  // FP8 warpgroup-MMA GEMM (fp8_act): weight tiles by TMA (one thread, tensor maps of
  // GroupedExperts::tmaps, which CudaOps::prepare_experts builds) instead of every thread's
  // cp.async, where the experts have maps. Bit-identical results. H200 (docs/perf.md, 2026-12-02
  // session 18): glm5 FP8 T 2048 / 4096 / 8192 3225 / 5163..5550 / 9053..9116 us -> 2994 /
  // 4919..4987 / 7957..8222.
  bool wgmma_tma = true;
  // BF16 warpgroup-MMA GEMM (the 256-thread kernel) with its weight tiles by TMA like FP8's
  // (wgmma_tma, tensor maps of GroupedExperts::tmaps: 128-row boxes of 64 k, 64-byte swizzle)
  // instead of every thread's cp.async; per k16 slice one wgmma m64n128 per box instead of one
  // m64n256 over gate and up interleaved. Off by default; moe_launch: on for BF16's full launch
  // (moe_bench --bf16-tma 0|1).
  bool bf16_tma = false;
  // With bf16_tma, BF16's full launch on the warp-specialized kernel (1; sm90_moe_wgmma_ws.cuh's
  // BF instances: a producer warpgroup, two consumer warpgroups, mbarrier hand-over, the ring
  // across items) or, where FP8's pair conditions hold (no hybrid, I % 256 == 0, D % 512 == 0),
  // its 2-CTA pairs sharing weight tiles (2; else 1); 0: the 256-thread kernel. The same bits.
  // 0 by default; moe_launch: 2 for BF16's full launch (moe_bench --bf16-ws 0|1|2).
  int bf16_ws = 0;
  // With bf16_ws, the consumers keep one k-block's wgmma in flight (wait 1) and release the stage
  // before it, instead of waiting for every wgmma of a k-block (wait 0) before its release. Off by
  // default; moe_launch: on for BF16's full launch (moe_bench --bf16-defer 0|1).
  bool bf16_defer = false;
  // With wgmma_tma, 2-CTA clusters where both GEMMs take 256-row CTAs with an even number of
  // n-blocks (I % 256 == 0, D % 512 == 0) and no hybrid: moe_group lists pair units
  // (MoeGroupParams::pair_units) and each weight tile is loaded once for two token tiles of its
  // expert (TMA multicast, half by each CTA; warp-specialized kernel, sm90_moe_wgmma_ws.cuh): 32
  // instead of 48 KB of L2 reads per CTA per stage. Bit-identical results. H200 (docs/perf.md,
  // session 23; whole layer, us): glm5 T 1024 / 2048 / 4096 / 8192 2990 / 3011 / 4746 / 7368 ->
  // 2882 / 3017 / 4492 / 7435, dsv3 3463 / 3560 / 5462 / 9008 -> 3326 / 3643 / 5373 / 8332.
  bool wgmma_pairs = true;
  // With wgmma_tma, 256-row CTAs (gate_up, and down where D % 256 == 0) that are not pairs: the
  // warp-specialized kernel (a producer warpgroup loads, two consumer warpgroups compute, stages
  // handed over by mbarriers) instead of every thread loading and a CTA barrier per k-block.
  // Bit-identical; measured level with the 256-thread kernel (-4% .. +7%, session 23), so off for
  // the full launch; moe_launch sets it for the hybrid's big tiles (session 28: level to 5%
  // faster, and its narrow instance 27% faster at T 64, grouped_hybrid_narrow).
  bool wgmma_ws = false;
  // Warp-specialized FP8 kernels (pairs or wgmma_ws): tiles of <= 64 tokens computed by both
  // consumer warpgroups on two quarters of the weight rows each instead of one warpgroup computing
  // 64 padding rows (the kernels' NARROW instance, MoeGemmParams::narrow): 1 always, 0 never, -1
  // when the call's experts expect at most kGroupedNarrowMaxMean tokens each (F4:
  // kGroupedNarrowMaxMeanF4, an EP rank's local experts kGroupedNarrowMaxMeanEp;
  // grouped_wgmma_narrow, from run_grouped_experts;
  // for the hybrid's big tiles when T <= 64, grouped_hybrid_narrow, which also gives BF16 big
  // tiles the 64-token mma.sync tile GEMM then). Bit-identical (FP8). H200 (docs/perf.md,
  // 2026-12-03 session 24; whole FP8 layer with pairs, two calls): glm5 / dsv3 T 1024 (32 tokens
  // per expert) 9-10% faster, T 2048 (64) 4-9%; at T 4096 / 8192 (128 / 256 per expert) the narrow
  // instance was then 5-6% slower (its spills, gone since session 50; sessions 64 / 65 moved FP8's
  // bound to 128 / 192), hence per call.
  int wgmma_narrow = -1;
  // Down's activation tiles on the warp-specialized FP8 / pair kernels by one TMA box each
  // instead of the producers' cp.async gather (h's rows are contiguous by position; rows past a
  // tile's count read the next positions, or zeros past the end, and are never stored), and no
  // proxy fence in down's consumers (every operand then comes through the async proxy).
  // Bit-identical to the gather (DownActivationsByTmaAreBitIdentical); glm5 / dsv3 FP8 prefill
  // T 4096 / 8192 2.1-2.6% faster, hot experts in decode 1-2% (docs/perf.md, session 41).
  // NVFP4 computed in FP8 (the F4 kernel, nvfp4_f8) takes the box too (its weights stay the
  // producers' stores, so its consumers keep the fence; its full barrier then counts one arrival
  // per producer thread, after its stores, and the box's bytes): F4ActivationsByTmaAreBitIdentical;
  // with x_pos below, H100 glm5 / dsv3 / EP8 T 4096 / 8192 5-7% faster (docs/perf.md, session 46).
  // false: the gather (kept for the test and for A/B).
  bool down_act_tma = true;
  // gate_up's activation tiles by TMA too (the full warp-specialized FP8 / pair launch and the
  // full F4 launch, not the hybrid or its split-K): after the grouping, moe_x_pos copies x's E4M3
  // codes by position into GroupedScratch::out (free until down writes it; T * K rows of D bytes),
  // and gate_up takes each tile as one TMA box like down (no cp.async gather, no proxy fence in its
  // consumers). With one expert taking every token's only slot (the shared expert run alone)
  // positions are tokens: the map is over x's codes themselves, no copy. Bit-identical
  // (GateUpActivationsByPositionAreBitIdentical). -1: from 128 tokens per expert and I >= 1024
  // (grouped_x_pos; the copy costs more than the gather below that: H100 glm5 / dsv3
  // T 8192 2.7-3.2% faster, T 4096 level, TP8 T 8192 16% slower; docs/perf.md session 43), from
  // 48 for NVFP4 computed in FP8 (session 47); 0 / 1 force.
  int x_pos = -1;
  // x_pos's copy as a scatter by token (moe_x_pos_scatter: each token's codes read once, written
  // to its K positions, from each slot's position, MoeGroupParams::slot_pos) instead of a gather
  // by position (each token's row read K times): the same bytes (the scatter checks of
  // GateUpActivationsByPositionAreBitIdentical; moe_bench --x-scatter 0|1). The copy 33% faster
  // (glm5 FP8 T 8192 171 against 254 us), the layer at T 8192 1.0-1.5% (uniform) and 1.5-2% (hot8)
  // faster, EP8 and T <= 1024 level (H100, docs/perf.md session 63).
  bool x_pos_scatter = true;
  // The NARROW instance's activation boxes (down_act_tma, x_pos) in 64 rows (session 68,
  // experiment): its tiles of <= 64 tokens load one box of 64 rows instead of 128 rows of which
  // the consumers read 64, the others two boxes of 64. A narrow item streams 48 KB per stage from
  // L2 (its own 32 KB of weights on a kLone unit) for half a full item's MMA cycles, and costs ~0.9
  // of a full item (docs/perf.md sessions 65-67): the 64-row box takes 8 KB of that away.
  // Bit-identical (NarrowActivationBoxesAreBitIdentical). Off: to be measured (moe_bench
  // --narrow-box 0|1).
  bool narrow_act_box = false;
  // The hybrid's gate_up (every format's warpgroup-MMA kernel; not BF16's narrow big tiles on the
  // mma.sync tile GEMM) with split-K where its items (big tiles x 256-row blocks) fill at most
  // half the grid (MoeGemmParams::split_partials; the partial sums live in GroupedScratch::out,
  // which only down writes), for experts of at most kHybridSplitMaxBlocks such blocks
  // (grouped_hybrid_split_k). TP8's I = 256 gives 2 items per big tile for a 6144-deep k-loop:
  // hot8 T 128 ran 16 CTAs.
  bool hybrid_split_k = true;
  // Programmatic dependent launch (sm_90): the call's launches (grouping, GEMMs, FP8 quantization,
  // combine) go out with programmatic stream serialization, each kernel waits for its predecessor
  // in its first instruction (griddepcontrol.wait) and the grouping and GEMM kernels let their
  // successor launch at once, so its CTAs are placed and started while they run. moe_launch sets
  // it for FP8 experts from sm_90 except on the warpgroup-MMA launch; results are the same bits
  // either way.
  bool pdl = false;
  // The hybrid's extra launches (warpgroup-MMA GEMMs over the big-tile lists, the FP8 quantization
  // of their h rows) with programmatic dependent launch even where `pdl` is off (NVFP4, BF16):
  // with uniform decode routing their lists are empty, and as plain launches they cost a kernel
  // boundary each (H200, session 25: NVFP4 TP8 T 48..128 ~17 us, 7-9% of the layer). Their CTAs
  // cannot share an SM with the ring's, so the early placement that costs the rings does not
  // arise. moe_launch sets it wherever it gives the launch a hybrid (sm_90); measured there.
  bool hybrid_pdl = false;
  // Programmatic dependent launch only across the boundaries whose predecessor holds no ring:
  // gate_up after the grouping kernel and the combine after down go out with programmatic
  // stream serialization even where `pdl` is off; down after gate_up does not (its CTAs, placed
  // early, would take shared memory and SM slots from gate_up's rings: why `pdl` costs NVFP4 and
  // BF16, session 20), except where early_down_max_slots gives it PDL. Same bits either way.
  bool pdl_light = false;
  // gate_up on the cp.async ring (fixed stream-K shares) with PDL after the grouping kernel, at
  // most 32 slots (T * K): each warp works out the call's tile list from the routing ids itself
  // (moe_group_kernel's one-warp placement, in registers) and issues its first weight stages before
  // griddepcontrol.wait, so they load while the grouping kernel runs (weights need nothing of it;
  // the activations and positions are read after the wait, as always). Same bits either way.
  bool early_gate_up = false;
  // ... and down the same way, where gate_up takes early_gate_up and the call has at most this
  // many slots (0: never): down goes out with PDL after gate_up, works out the list from the ids
  // and issues its first weight stages before it waits, so they load in gate_up's tail instead
  // of after it. The ids are complete by then (gate_up's CTAs all passed their wait for the
  // grouping kernel before down could start); h, positions and routing weights are read after the
  // wait. Same bits. moe_launch sets it (moe_config.cc says where it was measured);
  // moe_bench --early-down N.
  int early_down_max_slots = 0;
  // The grouping kernel yields its SMs to gate_up's ring: it lets gate_up launch only when its
  // blocks exit (no early griddepcontrol.launch_dependents), and its launch asks for a
  // shared-memory carveout that holds one of its blocks beside the ring's CTAs of an SM. Where
  // gate_up has PDL after the grouping, the grouping's blocks otherwise run while gate_up's
  // persistent CTAs are placed and hold their SMs, and the CTAs that land late finish their fixed
  // shares late. Same bits either way. moe_launch sets it (moe_config.cc says where it was
  // measured); moe_bench --group-yield 0|1.
  bool group_yields = false;
  // NVFP4 computed in FP8 (nvfp4_f8) on the full warpgroup-MMA launch: two producer warpgroups
  // dequantize for one consumer warpgroup (moe_wgmma_f4p2_kernel, "P2") on 64-token tiles, where a
  // call has fewer than this many slots per expert (T * K < f4p2_max_mean * E; 0: never). Twice the
  // dequantization per SM where it is the limit (an expert's tokens in one 64-token tile); above
  // it an expert takes several tiles, each reading its weights again. moe_launch sets it
  // (moe_config.cc says where it was measured); moe_bench --f4p2 N.
  int f4p2_max_mean = 0;
  // The hybrid's F4 big tiles on P2 (64-token big tiles, MoeGroupParams::big_tile): 0 never, 1 at
  // T <= 64 (no expert has more than 64 slots: one tile per big expert either way, where
  // grouped_hybrid_narrow takes the narrow instance), 2 always (hot experts then take twice the
  // tiles). moe_launch sets 1 for NVFP4 (moe_config.cc says where it was measured); moe_bench
  // --f4p2-big 0|1|2.
  int f4p2_big = 0;
  // NVFP4's full launch on P2 split by expert (0: not split): experts of at least this many slots
  // take the one-producer F4 kernel's 128-token tiles (a second list, MoeGroupParams::big_min /
  // big_tile, and a second launch per GEMM), the others P2's 64-token tiles, so a hot expert reads
  // its weights once per 128 tokens instead of 64. Only with wgmma_hquant (moe_quant_rows would
  // need both lists). The same bits (P2 and the one-producer kernel agree per output).
  // moe_bench --f4p2-split N. On the hybrid's big tiles on P2 (f4p2_big) the same: a third list
  // (MoeGroupParams::big2_min), from T >= N (below no expert can qualify).
  int f4p2_split = 0;
  // ... only where the experts of f4p2_split slots or more hold at least this share, decided on
  // the device (0: always): on the hybrid, of the big experts' slots (MoeGroupParams::
  // big2_min_share); on the full launch, of the call's 8-token tiles (the big list's gate,
  // big_min_share, without its bytes bound). A launch on a few experts runs after P2's with most
  // SMs idle. moe_bench --f4p2-split-share X.
  double f4p2_split_share = 0;
  // A GEMM's launches after its first (the hybrid's launch over the big tiles after the
  // streaming one, the split's list after P2's) wait for their predecessor at their end instead
  // of their start, where they go out with PDL (hybrid_pdl): their CTAs then compute in the
  // predecessor's tail, on the SMs its CTAs leave. Their inputs (the grouping's lists, x's codes;
  // for down, h of every gate_up launch) were complete before the GEMM's first launch let its
  // successor start: that launch triggers only after its own wait, and each deferred launch
  // starts only once the launch before it has started. Their wait at the end keeps each launch's
  // completion after its predecessor's, so the next GEMM's wait (and the combine's) still covers
  // every launch before it. Same bits. moe_bench --defer 0|1. The big tiles' kernels take it
  // (warp-specialized, warpgroup-MMA except its split-K instances, the 64-token tile GEMM); a
  // kernel that does not waits at its start (MoeGemmParams::defer_wait ignored).
  bool sibling_defer = false;
  // The grouping of a call of at most 32 slots where no expert can take big tiles (no hybrid, or
  // its threshold above the slot count) and the list holds no pair units: warp 0 of the grouping
  // kernel's block 0 builds the list and the positions alone, in registers (match mask and
  // shuffles; the same list and order), where block 0 otherwise counts, scans and places with
  // 512 threads and ~10 block barriers. On by default; off only to measure against that path.
  bool group_one_warp = true;
  // The NVFP4 ring's warps (8-token tiles) claim their work from a counter (StreamKDyn,
  // stream_k.h: whole items, then the last W / 4 items in pieces) instead of fixed stream-K
  // shares, where the GEMM has 12 rounds of items of >= 16 k-steps (stream_k_dynamic). Results
  // do not depend on which warp took what, but differ in the last bits from fixed shares (other
  // partial sums). moe_launch: on for NVFP4.
  bool ring_dynamic = false;
  int cc = 0;  // the device's compute capability, major * 10 + minor (moe_launch)
  // NVFP4 streaming GEMMs: x's 16-bit copy and h in the chunk-transposed order (act_index_t), so
  // each of a lane's four activation loads per k-step reads whole sectors together with the
  // other lanes of its row (one 16-byte load of 4 lanes: 64 contiguous bytes instead of 16 bytes
  // at a 64-byte stride). Only where no warpgroup-MMA GEMM reads the 16-bit x
  // (grouped_act_transposed). Same bits either way.
  bool act_transpose = true;
};

// Whether a call's streaming GEMMs take x's 16-bit copy and h in act_index_t order
// (GroupedLaunch::act_transpose): NVFP4 with some experts on the streaming kernels (the hybrid's
// warpgroup-MMA gate_up reads x's E4M3 codes, or its 16-bit copy through act_chunk_t; h rows
// belong to one tile, written and read by one kind of kernel: the warpgroup-MMA GEMMs keep
// theirs natural), with D and I whole k-steps of 128 (the transposition stays inside each).
inline bool grouped_act_transposed(const GroupedLaunch& l, GroupedFmt f, int64_t D, int64_t I) {
  return l.act_transpose && f == GroupedFmt::kNvfp4 && !l.wgmma && D > 0 && D % 128 == 0 && I > 0 &&
         I % 128 == 0;
}

// Kinds of a pair unit (MoeGroupParams::pair_units), the 4th int of its record.
enum PairUnitKind : int32_t { kPairEven = 1, kPairOdd = 2, kLone = 3 };

struct MoeGroupParams {
  const float* x = nullptr;  // [T, D]
  int64_t x_stride = 0;
  const int32_t* ids = nullptr;  // [T, K]
  int64_t ids_stride = 0;
  int64_t T = 0, D = 0, K = 0, E = 0;  // K: slots per token; E: experts (shared included)
  bool shared = false;  // expert E-1 is the shared expert, on slot K-1 of every token
  int fmt = 0;          // GroupedFmt: activation type and k-order of xa
  bool act_t = false;   // xa in act_index_t order (GroupedLaunch::act_transpose; NVFP4)
  int tile_tokens = 8;  // tokens per tile
  void* xa = nullptr;   // out [T, D] bf16 / f16 (nullptr: not written; FP8 activations on wgmma)
  // FP8 activations (GroupedLaunch::fp8_act): out x as E4M3 [T, D] and f32 scales [T, D / 128]
  // (fp8_act_block_quantize per row and 128 k), when set.
  uint8_t* xq = nullptr;
  float* xq_scale = nullptr;
  int32_t* sorted_slot = nullptr;  // out [T*K]: slot (t*K+k) at each grouped position
  int32_t* tiles = nullptr;        // out [max_tiles, 4]: expert, first position, tokens, 0
  int32_t* num_tiles = nullptr;    // out [1]
  int64_t max_tiles = 0;
  // Pair units (tile_tokens 128, no big tiles; GroupedLaunch::wgmma_pairs): the list holds the
  // units of the 2-CTA cluster GEMM instead of tiles, as many as the 128-token tiles: an expert's
  // tokens in chunks of 256 from its first position; a chunk of more than 128 tokens is listed
  // twice, kind kPairEven then kPairOdd (the cluster's two CTAs compute its two 128-token halves
  // for the even, then the odd n-blocks, sharing each weight tile), a chunk of 128 or fewer once as
  // kLone (each CTA computes it for its own n-blocks). The record is {expert, first position,
  // tokens of the chunk, kind}.
  bool pair_units = false;
  // GroupedLaunch::group_one_warp (run_grouped_experts sets it only where it applies: T * K <= 32,
  // no big tile possible, no pair units).
  bool one_warp = false;
  // Hybrid (big_min > 0): experts with at least big_min tokens get tiles of kGroupedBigTile tokens
  // in a second list (big_tiles, *num_big) for the warpgroup-MMA GEMM; the others get
  // tile_tokens-wide tiles in `tiles`. Grouped positions stay one contiguous order over both.
  int big_min = 0;
  // ... only if the experts at or above big_min hold at least big_min_tiles 8-token tiles (the
  // ring's narrowest, whatever tile_tokens is: wider tiles cost it about as much per token;
  // GroupedLaunch::hybrid_min_bytes) or the share below; otherwise no expert is big. 0: no such
  // condition (nor the share's).
  int big_min_tiles = 0;
  // ... or if they hold at least big_min_share / 1000 of all experts' 8-token tiles
  // (GroupedLaunch::hybrid_min_share; 0: no such condition). Only with big_min_tiles > 0.
  int big_min_share = 0;
  // ... where only experts with at least max(big_min, big_share_min) tokens count toward the
  // share (GroupedLaunch::hybrid_share_min_tokens).
  int big_share_min = 0;
  int32_t* big_tiles = nullptr;  // out [max big tiles, 4]
  int32_t* num_big = nullptr;    // out [1]
  // Zeroed by the kernel (the stream-K arrival counters of the GEMMs that follow; zero2: the
  // split-K counters of the hybrid's warp-specialized gate_up, MoeGemmParams::split_counters).
  int32_t* zero = nullptr;
  int64_t zero_count = 0;
  int32_t* zero2 = nullptr;
  int64_t zero2_count = 0;
  const float* route_w = nullptr;  // [T, K] routing weights; [T, K-1] with `shared`
  int64_t route_w_stride = 0;
  float* slot_w = nullptr;  // out [T*K]: routing weight of each slot (1 on the shared expert's)
  // Scratch of the multi-block grouping (launch_moe_group, more than 8192 slots): int32
  // [ceil(T*K / 4096), E] (grouped_group_scratch_bytes); without it block 0 groups every slot.
  // Set by launch_moe_group: chunks (0: one block).
  int32_t* chunk_hist = nullptr;
  int64_t chunk_hist_bytes = 0;
  int chunks = 0;
  // Tokens per big tile: kGroupedBigTile, or kGroupedF4p2Tile for the F4 two-producer kernel
  // (GroupedLaunch::f4p2_big). Last, so the other fields keep their offsets.
  int big_tile = kGroupedBigTile;
  // With big tiles of kGroupedF4p2Tile: big experts of at least big2_min tokens take
  // kGroupedBigTile-token tiles in a third list (big2_tiles, *num_big2) for the one-producer F4
  // kernel (GroupedLaunch::f4p2_split on the hybrid; 0: no third list). After the fields above.
  int big2_min = 0;
  int32_t* big2_tiles = nullptr;  // out [max 128-token tiles, 4]
  int32_t* num_big2 = nullptr;    // out [1]
  // ... only if those experts hold at least big2_min_share / 1000 of the big experts' slots
  // (GroupedLaunch::f4p2_split_share; 0: no such condition); otherwise all stay on big_tiles.
  int big2_min_share = 0;
  // GroupedLaunch::group_yields: no griddepcontrol.launch_dependents (the next launch starts when
  // the blocks exit). After the fields above.
  bool late_trigger = false;
  // GroupedLaunch::x_pos_scatter: out [T*K], each slot's grouped position (-1: a slot left out,
  // its id bad). Written by the placement (not the one-warp list: run_grouped_experts sets it only
  // without). After the fields above.
  int32_t* slot_pos = nullptr;
};
// Bytes of MoeGroupParams::chunk_hist for T*K slots over E experts (0 when one block groups them).
int64_t grouped_group_scratch_bytes(int64_t TK, int64_t E);

struct MoeGemmParams {
  int fmt = 0;                // GroupedFmt
  bool gate_up = true;        // true: gate_up + SiLU·up -> h; false: down -> out
  int64_t N = 0;              // rows of one weight matrix (I for gate_up, D for down)
  int64_t Kd = 0;             // reduction length (D for gate_up, I for down)
  int64_t K = 0;              // experts per token (slot = t*K + k)
  const void* act = nullptr;  // gate_up: xa [T, D]; down: h [T*K, I] (grouped order)
  // FP8 activations (warpgroup-MMA GEMM, FP8 weights, GroupedLaunch::fp8_act): act holds E4M3
  // codes of the same rows and act_scale [rows, Kd / 128] their f32 block scales.
  const float* act_scale = nullptr;
  const int32_t* sorted_slot = nullptr;
  const int32_t* tiles = nullptr;
  const int32_t* num_tiles = nullptr;
  const float* slot_w = nullptr;  // [T*K] routing weight per slot (down; moe_group writes it)
  void* out = nullptr;            // gate_up: h [T*K, I] (bf16/f16); down: out [T*K, D] f32
  // down on the warpgroup-MMA GEMM: out is bf16 [T*K, D] (run_grouped_experts sets it when that
  // GEMM computes every expert, so the combine reads half the bytes; grouped_out_bf16).
  bool out_bf16 = false;
  // NVFP4 streaming GEMMs (GroupedLaunch::act_transpose): act, and gate_up's h, in act_index_t
  // order.
  bool act_t = false;
  // Per expert: matrix 0 = gate (gate_up) or down, matrix 1 = up (gate_up only).
  const void* w[2][kMaxGroupedExperts] = {};
  // fp8: [N/128, Kd/128] f32; nvfp4: [N, Kd/16] e4m3
  const void* s[2][kMaxGroupedExperts] = {};
  // Data (and nvfp4 scales) in the packed layout of CudaOps::prepare_experts instead of
  // row-major (dequant_bits.h)
  bool packed = false;
  // Largest power of two <= 16 that divides every w and s pointer (resolve_grouped_experts; 0:
  // unknown, the launchers then take the kernels without alignment needs).
  int weight_align = 0;
  float gs[2][kMaxGroupedExperts] = {};  // nvfp4 global scale
  // Stream-K workspace of the pipelined kernel (grouped_sk_sizes): partial sums of items split
  // between warps, and one arrival counter per warp of the grid, zero at launch.
  float* sk_partials = nullptr;
  int32_t* sk_counters = nullptr;
  // GroupedLaunch::ring_dynamic: the counter the ring's warps claim chunks from (zero at launch;
  // null: fixed shares).
  int32_t* sk_claim = nullptr;
  // GroupedLaunch::early_gate_up / early_down_max_slots (the ring only): the routing ids of the
  // grouping (MoeGroupParams::ids, ids_stride, E, shared) for the tile list a warp works out before
  // griddepcontrol.wait; early_slots = T * K <= 32 and early_tile_tokens the list's tile size.
  // null: the list is read after the wait.
  const int32_t* early_ids = nullptr;
  int64_t early_ids_stride = 0;
  int early_E = 0;
  bool early_shared = false;
  int early_slots = 0;
  int early_tile_tokens = 0;
  // FP8 warpgroup-MMA GEMM with FP8 activations: tensor maps (CUtensorMap, 128 bytes each, device
  // memory) of the weights, map of matrix m of expert e at tmap + (m * tmap_e + e) * 128 bytes
  // (grouped_weight_tmaps); null: the weights are copied by cp.async.
  const void* tmap = nullptr;
  int64_t tmap_e = 0;
  // `tiles` lists pair units (MoeGroupParams::pair_units): the 2-CTA cluster kernel.
  bool pairs = false;
  // BF16 warp-specialized kernels: GroupedLaunch::bf16_defer.
  bool bf16_defer = false;
  // Warp-specialized FP8 kernels: the NARROW instance (GroupedLaunch::wgmma_narrow).
  bool narrow = false;
  // GroupedLaunch::down_act_tma: down's activation tiles by TMA from act_tmap (a 2-D map of
  // h's E4M3 codes, T * K rows by position x I bytes, 128-byte swizzle, boxes of 128 rows x 128
  // bytes), encoded per call by the host; the warp-specialized FP8 / pair kernels and the F4
  // kernel (NVFP4 computed in FP8).
  bool act_tma = false;
  // act_tmap's boxes are 64 rows (GroupedLaunch::narrow_act_box; the NARROW instance): a narrow
  // tile loads one, the others two.
  bool act_box64 = false;
  alignas(64) unsigned char act_tmap[128] = {};
  // Split-K of the hybrid's gate_up on the warpgroup-MMA kernels (the 256-thread one and the
  // warp-specialized FP8 one; GroupedLaunch::hybrid_split_k): when the call's items fill at most
  // half the grid and there are at most split_counters_cap of them, each item's k-loop is cut
  // into S ranges
  // (chosen on the device from *num_tiles, ws_split_count in stream_k.h), each CTA writes its f32
  // accumulators to split_partials (kWsSplitItemBytes per item and range; split_bytes in all) and
  // the last of an item's S CTAs (split_counters[item], zero at launch; split_counters_cap of them)
  // adds the S partial sums in range order and runs the epilogue. null: no split.
  float* split_partials = nullptr;
  int64_t split_bytes = 0;
  int32_t* split_counters = nullptr;
  int32_t split_counters_cap = 0;
  // gate_up on the FP8 warpgroup-MMA GEMM with GroupedLaunch::wgmma_hquant: h leaves as E4M3
  // codes [rows, N] at hq and f32 scales [rows, N / 128] at hq_scale (rows: grouped positions)
  // instead of 16-bit h in out. null: 16-bit h.
  uint8_t* hq = nullptr;
  float* hq_scale = nullptr;
  // F4 on moe_wgmma_f4p2_kernel (two producer warpgroups, 64-token tiles; GroupedLaunch::
  // f4p2_max_mean). Last, so the other fields keep their offsets (and the kernels their SASS).
  bool f4p2 = false;
  // Wait for the predecessor grid at the end instead of the start (GroupedLaunch::sibling_defer;
  // the kernels that take it).
  bool defer_wait = false;
};

// Stream-K workspace of a grouped call with launch `l` (all zero unless pipelined): one counter
// per warp of the grid for each GEMM (gate_up's, then down's) and one partials buffer (the
// GEMMs run one after the other).
struct GroupedSkSizes {
  int64_t warps = 0;           // upper bound on the grid's warps: counters per GEMM
  int64_t partial_floats = 0;  // f32
  // int32: per GEMM one per warp, then the two GEMMs' claim counters (GroupedLaunch::ring_dynamic)
  int64_t counters() const { return warps > 0 ? 2 * warps + 2 : 0; }
};
GroupedSkSizes grouped_sk_sizes(const GroupedLaunch& l);

// Whether the pipelined GEMM with launch `l` copies these weights with bulk copies: packed NVFP4,
// tiles of 16 tokens or more (l.nb >= 2), sm_90 or later (l.cc), every data and scale matrix
// 16-byte aligned (p.weight_align). Host only, no CUDA calls.
bool grouped_pipe_bulk(const MoeGemmParams& p, const GroupedLaunch& l);

// K-granularity the GEMMs need of D and I (rows must be multiples of 32).
int64_t grouped_k_multiple(GroupedFmt f);

// pdl: GroupedLaunch::pdl (the grouping launches with programmatic stream serialization).
// ring_smem (GroupedLaunch::group_yields): shared memory per SM of the ring launch that follows;
// the grouping asks for a carveout that also holds one of its blocks (0: no preference).
void launch_moe_group(const MoeGroupParams& p, Stream stream, bool pdl = false,
                      int64_t ring_smem = 0);
// dst (packed) <- src (row-major), not overlapping (dequant_bits.h): the data of a matrix of N
// rows of row_bytes bytes (N % 16 == 0, row_bytes % 64 == 0, 16-byte aligned buffers), or the
// scales of an NVFP4 [N, Kd] matrix (N * Kd / 16 bytes; Kd % 128 == 0).
void launch_pack_data(uint8_t* dst, const uint8_t* src, int64_t N, int64_t row_bytes,
                      Stream stream);
void launch_nvfp4_pack_scales(uint8_t* dst, const uint8_t* src, int64_t N, int64_t Kd,
                              Stream stream);
void launch_moe_gemm(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream);
// Bytes of GroupedScratch::q a call needs: 0 unless launch `l` runs FP8 experts on the
// warpgroup-MMA GEMM with FP8 activations (l.fp8_act, and l.wgmma or the hybrid at T tokens; NVFP4
// experts with l.nvfp4_f8 and D % 256 == 0, the hybrid only where it does not split gate_up); then
// the larger of x [T, D] and h [T*KS, I] as E4M3 codes (grouped_fp8_act_data_bytes, 16-byte
// rounded), followed by their f32 scales per 128 k; for the hybrid with l.wgmma_hquant, then h's
// codes of the fused quantization [T*KS, I] from grouped_fp8_h_offset and their f32 scales after
// them, 16-byte rounded (gate_up writes those while x's codes are still being read).
int64_t grouped_fp8_act_data_bytes(int64_t T, int64_t D, int64_t I, int64_t KS);
int64_t grouped_fp8_h_offset(int64_t T, int64_t D, int64_t I, int64_t KS);
int64_t grouped_fp8_act_bytes(const GroupedLaunch& l, GroupedFmt f, int64_t T, int64_t D, int64_t I,
                              int64_t KS);
// q / qs <- h rows (16-bit F16, [*, I]) of the tiles in a tile list (grouped positions pos0 ..
// pos0 + cnt - 1 of each of the *num_tiles tiles), as E4M3 codes and f32 scales per 128 k
// (fp8_act_block_quantize per row); the other rows are left alone. I % 128 == 0. At most max_tiles.
void launch_moe_quant_rows(const void* h, int64_t I, const int32_t* tiles, const int32_t* num_tiles,
                           int64_t max_tiles, uint8_t* q, float* qs, int sm_count, Stream stream,
                           bool pdl = false);
// GroupedLaunch::x_pos: xs[pos] = xq[sorted_slot[pos] / K], rows of D bytes.
void launch_moe_x_pos(const uint8_t* xq, const int32_t* sorted_slot, int64_t rows, int K, int64_t D,
                      uint8_t* xs, int sm_count, Stream stream, bool pdl = false);
// GroupedLaunch::x_pos_scatter: xs[slot_pos[t K + k]] = xq[t] for the T tokens' K slots (slots
// at -1 skipped), rows of D bytes; positions no slot takes are left alone.
void launch_moe_x_pos_scatter(const uint8_t* xq, const int32_t* slot_pos, int64_t T, int K,
                              int64_t D, uint8_t* xs, int sm_count, Stream stream,
                              bool pdl = false);
// This process's calls whose gate_up took x by position (GroupedLaunch::x_pos), and how many of
// them copied x (moe_x_pos); the others read x's codes in place (one expert taking every token's
// only slot: the shared expert run alone, where positions are tokens); and the down launches of
// NVFP4 computed in FP8 (the F4 kernel) that took h by TMA (GroupedLaunch::down_act_tma). For the
// tests.
struct GroupedXPosCounts {
  int64_t calls = 0, copies = 0, f4_down = 0;
  int64_t scatters = 0;  // copies by token (GroupedLaunch::x_pos_scatter)
  int64_t box64 = 0;     // GEMMs given 64-row activation boxes (GroupedLaunch::narrow_act_box)
};
GroupedXPosCounts grouped_x_pos_counts();
// This process's calls on the F4 two-producer kernel (GroupedLaunch::f4p2_max_mean, f4p2_big). For
// the tests.
int64_t grouped_f4p2_calls();
// BF16 warpgroup-MMA GEMMs given tensor maps (GroupedLaunch::bf16_tma; split-K instances among
// them keep cp.async), for tests.
int64_t grouped_bf16_tma_gemms();
// ... of them split by expert (GroupedLaunch::f4p2_split). For the tests.
int64_t grouped_f4p2_split_calls();
// This process's GEMM launches that waited for their predecessor at their end (GroupedLaunch::
// sibling_defer). For the tests.
int64_t grouped_deferred_launches();
// This process's calls whose gate_up got the ids for its own tile list (GroupedLaunch::
// early_gate_up). For the tests.
int64_t grouped_early_gate_up_calls();
// Calls whose down took the early list (GroupedLaunch::early_down_max_slots).
int64_t grouped_early_down_calls();
// The tc GEMM (called by launch_moe_gemm when l.tc): BF16, Kd % 64 == 0, N % 64 (gate_up) or
// N % 128 (down) == 0, 16-byte aligned activations, weights and outputs.
void launch_moe_tile_gemm(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream);
// Registers per thread of the GEMM kernels launch `l` may run for format `f` (the most over gate_up
// and down, and for packed NVFP4 rings both copy variants); grouped_tile_gemm_regs for tc / wgmma.
// A GPU test holds MoeKernelConfig::regs_per_thread's table to these.
int grouped_gemm_regs(GroupedFmt f, const GroupedLaunch& l);
// Static shared memory per CTA (cudaFuncAttributes::sharedSizeBytes) of the streaming and ring
// kernels launch `l` (not tc) may run for format `f`, the most over gate_up / down and the copy
// variants. NOTE: must stay 0. Measured on the H200 (2026-12-01, one call, docs/perf.md session
// 13): the ring kernels' 4 CTAs of 4 x 12,288 B (+ 1 KB each for the driver) fill exactly the
// 196 KB shared-memory carveout, leaving 60 KB of L1 for the activations; one static 4-byte
// variable moved the carveout to 228 KB (L1 28 KB): L2 reads +56%, NVFP4 decode 9-10% slower
// (glm5 T 1 / 8 / 64 75 / 336 / 1263 -> 83 / 364 / 1381 us). Since session 34 the NVFP4 rings
// take 4 x 10,240 B per CTA (grouped_pipe_warp_bytes): the 164 KB carveout, L1 92 KB.
int grouped_gemm_static_smem(GroupedFmt f, const GroupedLaunch& l);
int grouped_tile_gemm_regs(GroupedFmt f, const GroupedLaunch& l);
// y[t, :] = sum_k out[t*K + k, :] (accumulate: y[t, :] += ...); NaN rows where an expert id is
// out of range. With `shared`, ids has K-1 columns of routed ids in [0, E-1) and slot K-1 is the
// shared expert's.
// out_bf16: out holds bf16 (MoeGemmParams::out_bf16), else f32. pdl: GroupedLaunch::pdl.
void launch_moe_combine(float* y, int64_t y_stride, const void* out, bool out_bf16,
                        const int32_t* ids, int64_t ids_stride, int64_t T, int64_t D, int64_t K,
                        int64_t E, bool shared, bool accumulate, Stream stream, bool pdl = false);
// Whether the down GEMMs of launch `l` write bf16 per-slot outputs: a warpgroup-MMA launch (every
// expert on the warpgroup-MMA GEMM; its epilogue rounds w * acc once to bf16, the combine sums in
// f32). Host only.
inline bool grouped_out_bf16(const GroupedLaunch& l) { return l.tc && l.wgmma; }

}  // namespace moe::cuda
