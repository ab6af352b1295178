// The work split of the pipelined grouped GEMM (kernels/moe_grouped/stream_k.h) over many grids:
// every k-step of every item is computed by exactly one warp, whole rounds stay whole, split
// items' contributor ranges, partial-sum slots and arrival counters are what finish_split
// assumes. The GPU parity tests (moe_grouped_test.cc, StreamK*) check the sums themselves.
#include "backends/cuda/kernels/moe_grouped/stream_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace moe::cuda::grouped {
namespace {

struct Case {
  int n_items, W, nsteps, unit;
  std::string str() const {
    std::ostringstream o;
    o << "items " << n_items << " W " << W << " nsteps " << nsteps << " unit " << unit;
    return o.str();
  }
};

// Checks one grid; returns the number of split items (for coverage of the sweep).
int check_case(const Case& c) {
  SCOPED_TRACE(c.str());
  std::vector<int> covered(static_cast<size_t>(c.n_items) * c.nsteps, 0);
  std::map<int, std::vector<int>> split_contributors;  // split item -> warps, in warp order
  std::map<std::pair<int, int>, int> slot_owner;       // (warp, slot) -> split item
  int rounds = -1;
  for (int w = 0; w < c.W; ++w) {
    const StreamKSched sc(w, c.W, c.n_items, c.nsteps, c.unit);
    if (rounds < 0) rounds = sc.rounds;
    EXPECT_EQ(sc.rounds, c.n_items / c.W);
    int steps_in_range = 0;
    for (int j = 0; j < sc.nseg; ++j) {
      const StreamKSeg s = sc.seg(j);
      EXPECT_GE(s.item, 0);
      EXPECT_LT(s.item, c.n_items);
      EXPECT_GE(s.kb, 0);
      EXPECT_LT(s.kb, s.ke) << "empty segment " << j << " of warp " << w;
      EXPECT_LE(s.ke, c.nsteps);
      EXPECT_EQ(s.kb % c.unit, 0);
      EXPECT_EQ(s.ke % c.unit, 0);
      if (s.item < 0 || s.item >= c.n_items || s.kb < 0 || s.ke > c.nsteps) continue;
      for (int k = s.kb; k < s.ke; ++k) ++covered[static_cast<size_t>(s.item) * c.nsteps + k];
      if (j < sc.rounds) {  // whole items, round-robin
        EXPECT_EQ(s.item, w + j * c.W);
        EXPECT_EQ(s.kb, 0);
        EXPECT_EQ(s.ke, c.nsteps);
        continue;
      }
      steps_in_range += s.ke - s.kb;
      EXPECT_GE(s.item, sc.sk_base);
      if (j > sc.rounds) EXPECT_EQ(s.item, sc.seg(j - 1).item + 1) << "ranges are contiguous";
      if (s.kb == 0 && s.ke == c.nsteps) continue;
      // A split item: only the first or the last segment of the range.
      EXPECT_TRUE(j == sc.rounds || j == sc.nseg - 1) << "split segment inside a range";
      const int i = s.item - sc.sk_base;
      split_contributors[s.item].push_back(w);
      const auto key = std::make_pair(w, sc.slot(w, i));
      EXPECT_EQ(slot_owner.count(key), 0u) << "warp " << w << " slot " << key.second << " reused";
      slot_owner[key] = s.item;
    }
    // A range is at least kStreamKMinSteps long (one whole item where items are shorter) unless
    // the stream-K part runs out.
    if (steps_in_range > 0 && sc.u1 < (c.n_items - sc.sk_base) * sc.U)
      EXPECT_GE(steps_in_range, std::min(kStreamKMinSteps, c.nsteps));
  }
  for (int item = 0; item < c.n_items; ++item)
    for (int k = 0; k < c.nsteps; ++k)
      EXPECT_EQ(covered[static_cast<size_t>(item) * c.nsteps + k], 1)
          << "item " << item << " step " << k;
  // Split items: contributors are exactly first_warp..last_warp (every warp computes the same
  // numbers), and the counter keys (last_warp) are distinct.
  std::set<int> counter_keys;
  for (const auto& [item, warps] : split_contributors) {
    const StreamKSched any(0, c.W, c.n_items, c.nsteps, c.unit);
    const int i = item - any.sk_base;
    const int wf = any.first_warp(i), wl = any.last_warp(i);
    std::vector<int> want;
    for (int v = wf; v <= wl; ++v) want.push_back(v);
    EXPECT_EQ(warps, want) << "item " << item;
    EXPECT_GE(warps.size(), 2u) << "item " << item << " split but one contributor";
    EXPECT_TRUE(counter_keys.insert(wl).second) << "counter of warp " << wl << " shared";
    for (int v : warps) {  // each contributor agrees on the slot where v keeps it
      const StreamKSched sv(v, c.W, c.n_items, c.nsteps, c.unit);
      EXPECT_EQ(sv.slot(v, i), any.slot(v, i));
      EXPECT_EQ(slot_owner[std::make_pair(v, any.slot(v, i))], item);
    }
  }
  return static_cast<int>(split_contributors.size());
}

TEST(StreamK, EveryStepOnceAndSplitBookkeeping) {
  int splits = 0, cases = 0;
  for (int unit : {1, 2})
    for (int nsteps : {1, 2, 3, 4, 8, 16, 48, 96})
      for (int W : {1, 2, 3, 7, 16, 56, 208, 2112})
        for (int n_items : {0, 1, 2, 5, 16, 31, 100, 257, 1024, 4099}) {
          if (nsteps % unit != 0) continue;
          splits += check_case({n_items, W, nsteps, unit});
          ++cases;
          if (::testing::Test::HasFailure()) return;
        }
  EXPECT_GT(cases, 1000);
  EXPECT_GT(splits, 1000) << "the sweep must exercise split items";
}

// The shapes the heuristic runs on the H200 (132 SMs x 16 warps): glm5 T 1 gate_up (8 tiles x
// 128 row blocks, 48 NVFP4 steps) and down (8 x 192, 16 steps), FP8 down (unit 2).
TEST(StreamK, DecodeShapes) {
  EXPECT_GT(check_case({1024, 2112, 48, 1}), 0);
  EXPECT_GT(check_case({1536, 2112, 16, 1}), 0);
  EXPECT_GT(check_case({1536, 2112, 32, 2}), 0);
  // T 1 gate_up: no whole round, every warp gets 23-24 steps.
  const StreamKSched first(0, 2112, 1024, 48, 1);
  EXPECT_EQ(first.rounds, 0);
  EXPECT_EQ(first.q, 24);
  // GLM-5's TP8 down (I 256: items of 2 NVFP4 steps) at T 8 on 12 x 132 warps: 11025 items, 6
  // rounds and 1521 items left, one whole item each to 1521 warps (no split item, none with
  // two): the longest warp 14 steps, not 16.
  EXPECT_GT(check_case({11025, 1584, 2, 1}), -1);
  int longest = 0, split = 0;
  for (int w = 0; w < 1584; ++w) {
    const StreamKSched s(w, 1584, 11025, 2, 1);
    int steps = 0;
    for (int j = 0; j < s.nseg; ++j) {
      const StreamKSeg g = s.seg(j);
      steps += g.ke - g.kb;
      split += g.ke - g.kb < 2;
    }
    longest = std::max(longest, steps);
  }
  EXPECT_EQ(longest, 14);
  EXPECT_EQ(split, 0);
}

// The dynamic split: whichever warp claims which chunk, every k-step of every item is computed
// once, pieces only in the last W / kStreamKDynTailDiv items, kStreamKDynPieces per item, of at
// least 4 steps, in order, and piece slots stay below W (the stream-K partial-sum space).
TEST(StreamK, DynamicChunksCoverEveryStepOnce) {
  int dynamic = 0;
  for (int nsteps : {2, 8, 16, 17, 48, 56, 96})
    for (int W : {1, 2, 3, 7, 56, 2112})
      for (int n_items : {0, 1, 13, 111, 4224, 4225, 25343, 25344, 28544, 90000}) {
        if (!stream_k_dynamic(n_items, W, nsteps, 1)) continue;
        ++dynamic;
        SCOPED_TRACE((Case{n_items, W, nsteps, 1}).str());
        const StreamKDyn d(n_items, W, nsteps);
        const int tail = std::max(W / kStreamKDynTailDiv, 1);
        EXPECT_EQ(d.n_tail, std::min(n_items, tail));
        EXPECT_EQ(d.ppi, kStreamKDynPieces);
        EXPECT_LE(static_cast<int64_t>(d.n_tail) * d.ppi,
                  2LL * W);  // sk_partials: 2 slots per warp
        std::vector<int> covered(static_cast<size_t>(n_items) * nsteps, 0);
        for (int ch = 0; ch < d.n_chunks; ++ch) {
          const StreamKSeg s = d.seg(ch);
          ASSERT_GE(s.item, 0);
          ASSERT_LT(s.item, n_items);
          ASSERT_LT(s.kb, s.ke);
          ASSERT_LE(s.ke, nsteps);
          if (ch < d.n_whole) {
            EXPECT_EQ(s.item, ch);
            EXPECT_EQ(s.ke - s.kb, nsteps);
          } else {
            EXPECT_GE(s.item, n_items - tail) << "pieces only in the last items";
            EXPECT_GE(s.ke - s.kb, 4);
            const int pc = ch - d.n_whole;  // piece index = slot; the item's pieces in k order
            EXPECT_EQ(s.item, d.n_whole + pc / d.ppi);
            EXPECT_EQ(s.kb, (pc % d.ppi) * nsteps / d.ppi);
          }
          for (int k = s.kb; k < s.ke; ++k) ++covered[static_cast<size_t>(s.item) * nsteps + k];
        }
        for (size_t i = 0; i < covered.size(); ++i) ASSERT_EQ(covered[i], 1) << "step " << i;
      }
  EXPECT_GT(dynamic, 20);
  EXPECT_FALSE(stream_k_dynamic(90000, 2112, 2, 1));   // TP8 down: 2-step items stay static
  EXPECT_FALSE(stream_k_dynamic(25343, 2112, 48, 1));  // fewer than 12 rounds
  EXPECT_FALSE(stream_k_dynamic(21760, 2112, 48, 1));  // glm5 T 32 gate_up: 10.3 rounds
  EXPECT_FALSE(stream_k_dynamic(90000, 2112, 48, 2));  // FP8's 2-step units
  EXPECT_TRUE(stream_k_dynamic(25344, 2112, 48, 1));   // 12 rounds
  EXPECT_FALSE(stream_k_dynamic(90000, 1, 48, 1));     // one warp: nothing to balance
  EXPECT_TRUE(stream_k_dynamic(28544, 2112, 48, 1));   // glm5 T 64 gate_up: 13.5 rounds
}

// Split-K of the warp-specialized FP8 GEMM (ws_split_count / ws_split_range): the ranges of an
// item cover its k-steps once, in order, each at least kWsSplitMinSteps long; no split when the
// items fill half the grid, and the partial sums fit their buffer.
TEST(WsSplitK, RangesCoverEveryStepOnce) {
  int split_cases = 0;
  for (int n_items : {1, 2, 3, 7, 16, 33, 66, 67, 200})
    for (int grid : {2, 66, 132, 264})
      for (int ksteps : {1, 2, 4, 7, 8, 16, 48, 50, 56, 100})
        for (long long bytes : {0LL, kWsSplitItemBytes, 1LL << 24, 1LL << 40})
          for (int cap : {0, 8, 1 << 20}) {
            const int S = ws_split_count(n_items, grid, ksteps, bytes, cap);
            ASSERT_GE(S, 1);
            ASSERT_LE(S, 64);
            if (S == 1) continue;
            ++split_cases;
            EXPECT_LE(2 * n_items, grid);
            EXPECT_LE(n_items * S, grid);
            EXPECT_LE(n_items, cap);
            EXPECT_LE(static_cast<long long>(n_items) * S * kWsSplitItemBytes, bytes);
            int next = 0;
            for (int r = 0; r < S; ++r) {
              int kb0 = -1, kb1 = -1;
              ws_split_range(r, S, ksteps, &kb0, &kb1);
              EXPECT_EQ(kb0, next) << n_items << " " << grid << " " << ksteps << " S " << S;
              EXPECT_GE(kb1 - kb0, kWsSplitMinSteps) << ksteps << " S " << S << " r " << r;
              next = kb1;
            }
            EXPECT_EQ(next, ksteps);
          }
  EXPECT_GT(split_cases, 100);
  // TP8 hot8 T 64: 16 items (8 big tiles x 2 row blocks), 48 k-steps, 12.6 MB of out (less the
  // counters: 5.99 items of partial sums).
  EXPECT_EQ(ws_split_count(16, 132, 48, 64LL * 8 * 6144 * 4 - 256, 16 * 2), 5);
  EXPECT_EQ(ws_split_count(67, 132, 48, 1LL << 40, 1 << 20), 1);  // more than half the grid
  EXPECT_EQ(ws_split_count(4, 132, 7, 1LL << 40, 1 << 20), 1);    // too short to cut
}

}  // namespace
}  // namespace moe::cuda::grouped
