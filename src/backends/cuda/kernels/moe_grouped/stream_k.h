// Work split of the pipelined grouped GEMM (moe_gemm_pipe_kernel), host and device: which
// (item, k-step range) segments each warp computes, and the bookkeeping of items split between
// warps. Plain C++ so the CPU tests check its invariants over many grids
// (tests/moe_config/stream_k_test.cc): every k-step of every item computed exactly once, split
// items' contributors, slots and counters consistent.
//
// With W warps and n_items work items of nsteps k-steps: every warp takes n_items / W whole
// items round-robin (item w + j*W), then the last n_items % W items are cut into units of `unit`
// k-steps (FP8: one 128-k scale block) and warp w takes units [w*q, w*q + q) of them (stream-K),
// q = max(ceil(units / W), kStreamKMinSteps steps or one whole item where items are shorter), so
// no warp idles while others finish a last round. 32-bit: the stream-K part spans fewer than W
// items.
#pragma once

#if defined(__CUDACC__)
#define MOE_SK_HD __host__ __device__ __forceinline__
#else
#define MOE_SK_HD inline
#endif

namespace moe::cuda::grouped {

// Shortest range of a warp: shorter ones cost more in partial sums than they balance.
constexpr int kStreamKMinSteps = 4;

// Segment of a warp: k-steps [kb, ke) of item `item`.
struct StreamKSeg {
  int item, kb, ke;
};

struct StreamKSched {
  int w, W, rounds, sk_base, U, unit, nsteps, q, u0, u1, nseg;

  MOE_SK_HD StreamKSched(int w_, int W_, int n_items, int nsteps_, int unit_)
      : w(w_), W(W_), unit(unit_), nsteps(nsteps_) {
    rounds = n_items / W;
    sk_base = rounds * W;
    U = nsteps / unit;
    const int total = (n_items - sk_base) * U;
    // Items shorter than kStreamKMinSteps (NVFP4 down of I <= 384: 2-3 steps) take whole-item
    // ranges: no partial sums, and the remainder on as many warps as it has items (a range of
    // kStreamKMinSteps put two such items on half of them: the longest warp one item longer).
    const int fair = (total + W - 1) / W, min_steps = (kStreamKMinSteps + unit - 1) / unit,
              shortest = min_steps < U ? min_steps : U;
    q = fair > shortest ? fair : shortest;
    u0 = w * q < total ? w * q : total;
    u1 = u0 + q < total ? u0 + q : total;
    nseg = rounds + (u1 > u0 ? (u1 - 1) / U - u0 / U + 1 : 0);
  }

  // Segment j (0 <= j < nseg) of this warp.
  MOE_SK_HD StreamKSeg seg(int j) const {
    if (j < rounds) return {w + j * W, 0, nsteps};
    const int i = u0 / U + (j - rounds);
    const int lo = u0 > i * U ? u0 : i * U, hi = u1 < (i + 1) * U ? u1 : (i + 1) * U;
    return {sk_base + i, (lo - i * U) * unit, (hi - i * U) * unit};
  }

  // A split item: i = item - sk_base. Its contributors are the consecutive warps
  // first_warp(i)..last_warp(i); warp v keeps its partial sums of it in slot(v, i) (0 if it is
  // the first item of v's range, else 1: a warp holds at most two split items, its first and
  // its last); the arrival counter is last_warp(i)'s (only one split item ends in a warp's range
  // after starting before it).
  MOE_SK_HD int first_warp(int i) const { return i * U / q; }
  MOE_SK_HD int last_warp(int i) const { return ((i + 1) * U - 1) / q; }
  MOE_SK_HD int slot(int v, int i) const { return i == v * q / U ? 0 : 1; }
};

// Dynamic split (GroupedLaunch::ring_dynamic): the warps claim chunks in order from a counter
// instead of taking fixed shares, so a warp the HBM serves faster takes more of them (with fixed
// shares the warps of one grid finish 3-7% of the kernel apart at equal work; H200, session 36).
// Chunks 0..n_whole-1 are whole items; the last n_tail = W / kStreamKDynTailDiv items are cut
// into ppi pieces of nsteps / ppi k-steps (balanced), claimed after every whole item, so the grid
// ends within about one piece. Piece pc (chunk n_whole + pc) keeps its partial sums in slot pc
// (ppi * n_tail <= max(W, 4) <= 2 W slots, the stream-K partial-sum space); the last of an item's
// pieces to arrive adds them in piece order (deterministic) and runs the epilogue. Only for unit 1,
// items of >= kStreamKDynMinSteps steps (pieces of >= 4), grids of >= 2 warps and
// >= kStreamKDynMinRounds rounds of items (stream_k_dynamic). NOTE: measured on the H200
// (docs/perf.md, session 37; moe_bench
// --dyn 1 --ab "--dyn 0", NVFP4, 8-token tiles, 2112 warps): from ~13 rounds it gains (glm5 /
// dsv3 T 64 +0.5-1%, T 128 +2-2.7%), with fewer it loses (T 8 / 16 3-6%, 3.4-5 rounds; EP8
// down's 2.5 rounds 1-1.5%); the last W / 4 items in pieces rather than the last W: level
// unsharded, EP8 T 32 / 64 1-1.5% against 3.2-3.5% slower.
constexpr int kStreamKDynMinSteps = 16;
constexpr int kStreamKDynMinRounds = 12;
constexpr int kStreamKDynPieces = 4;
constexpr int kStreamKDynTailDiv = 4;

MOE_SK_HD bool stream_k_dynamic(int n_items, int W, int nsteps, int unit) {
  return unit == 1 && W >= 2 && nsteps >= kStreamKDynMinSteps &&
         static_cast<long long>(n_items) >= static_cast<long long>(kStreamKDynMinRounds) * W;
}

struct StreamKDyn {
  int n_whole, n_tail, ppi, n_chunks, nsteps;

  MOE_SK_HD StreamKDyn(int n_items, int W, int nsteps_) : nsteps(nsteps_) {
    const int tail = W / kStreamKDynTailDiv > 0 ? W / kStreamKDynTailDiv : 1;
    n_tail = n_items < tail ? n_items : tail;
    n_whole = n_items - n_tail;
    ppi = kStreamKDynPieces;
    n_chunks = n_whole + n_tail * ppi;
  }
  // Chunk c (< n_chunks): a whole item or piece c - n_whole.
  MOE_SK_HD StreamKSeg seg(int c) const {
    if (c < n_whole) return {c, 0, nsteps};
    const int pc = c - n_whole, k = pc % ppi;
    return {n_whole + pc / ppi, k * nsteps / ppi, (k + 1) * nsteps / ppi};
  }
};

// Split-K of the single-CTA warp-specialized FP8 GEMM (MoeGemmParams::split_partials): f32
// partial sums of one item (128 tokens x 256 rows) for one k-range, and the shortest range.
constexpr long long kWsSplitItemBytes = 128LL * 256 * 4;
constexpr int kWsSplitMinSteps = 4;  // k-steps of 128

// Ranges per item for n_items items of ksteps k-steps on a grid of `grid` CTAs: 1 when the items
// fill at least half the grid; else as many as fill it, each >= kWsSplitMinSteps k-steps, their
// partial sums within `bytes`, at most 64, and 1 when there are more items than `cap` counters.
MOE_SK_HD int ws_split_count(int n_items, int grid, int ksteps, long long bytes, int cap) {
  if (n_items <= 0 || 2 * n_items > grid || n_items > cap) return 1;
  int s = grid / n_items;
  const int by_k = ksteps / kWsSplitMinSteps;
  const long long by_bytes = bytes / (static_cast<long long>(n_items) * kWsSplitItemBytes);
  if (s > by_k) s = by_k;
  if (s > by_bytes) s = static_cast<int>(by_bytes);
  if (s > 64) s = 64;
  return s < 1 ? 1 : s;
}
// K-steps [kb0, kb1) of range `split` of S: balanced, each at least ksteps / S long.
MOE_SK_HD void ws_split_range(int split, int S, int ksteps, int* kb0, int* kb1) {
  *kb0 = static_cast<int>(static_cast<long long>(split) * ksteps / S);
  *kb1 = static_cast<int>(static_cast<long long>(split + 1) * ksteps / S);
}

}  // namespace moe::cuda::grouped

#undef MOE_SK_HD
