// Reference ops against independent formulas: routing on hand-checked cases, RoPE's
// relative-position property, MLA forms, DSA selection, sampling statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "backends/reference/reference_ops.h"
#include "core/half.h"

namespace moe::reference {
namespace {

Tensor randn(Shape s, uint32_t seed, float scale = 1.f) {
  Tensor t = Tensor::empty(s, DType::kF32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(rng);
  return t;
}

Tensor i32(std::vector<int32_t> v, Shape s) {
  Tensor t = Tensor::empty(s, DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

class ReferenceOpsTest : public ::testing::Test {
 protected:
  ThreadPool pool{2};
  ReferenceOps ops{pool};
};

TEST_F(ReferenceOpsTest, LinearWithBf16WeightsMatchesDirectSum) {
  Tensor x = randn({3, 5}, 1);
  Tensor w = Tensor::empty({4, 5}, DType::kBF16);
  Tensor wf = randn({4, 5}, 2);
  for (int i = 0; i < 20; ++i) w.data<uint16_t>()[i] = f32_to_bf16(wf.data<float>()[i]);
  Tensor y = Tensor::empty({3, 4}, DType::kF32);
  ops.linear(y.view(), x.view(), w.cview());
  for (int t = 0; t < 3; ++t)
    for (int n = 0; n < 4; ++n) {
      double ref = 0;
      for (int k = 0; k < 5; ++k)
        ref += x.data<float>()[t * 5 + k] * round_to_bf16(wf.data<float>()[n * 5 + k]);
      EXPECT_NEAR(y.data<float>()[t * 4 + n], ref, 1e-5);
    }
}

// Weights a backend rearranged for its own MoE kernels (ops::WeightLayout::kPacked) are not
// the checkpoint's: the reference refuses them instead of computing with permuted bytes.
TEST(ReferenceOpsDeathTest, RefusesPackedWeights) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the pool's threads
  Tensor codes = Tensor::zeros({16, 64}, DType::kU8),
         scale = Tensor::zeros({16, 8}, DType::kF8E4M3);
  ops::Weight w;
  w.format = ops::WeightFormat::kNvfp4;
  w.data = codes.cview();
  w.scale = scale.cview();
  Tensor x = randn({1, 128}, 3), y = Tensor::empty({1, 16}, DType::kF32);
  ThreadPool pool{1};
  ReferenceOps ops{pool};
  ops.linear(y.view(), x.view(), w);  // row-major: fine
  w.layout = ops::WeightLayout::kPacked;
  EXPECT_DEATH(ops.linear(y.view(), x.view(), w), "packed layout");
  Tensor dense = randn({16, 128}, 4);  // any format
  ops::Weight d{dense.cview()};
  ops.linear(y.view(), x.view(), d);
  d.layout = ops::WeightLayout::kPacked;
  EXPECT_DEATH(ops.linear(y.view(), x.view(), d), "packed layout");
}

// moe_experts against the experts computed one by one with linear / silu_mul: the routed sum,
// and with a shared expert (another width, weight 1) that sum plus the shared MLP.
TEST_F(ReferenceOpsTest, MoeExpertsIsTheWeightedSumOfSwigluExperts) {
  const int64_t T = 3, D = 12, I = 5, Is = 7, E = 4, K = 2;
  std::vector<Tensor> mats;
  auto mlp = [&](int64_t width, uint32_t seed) {
    mats.push_back(randn({width, D}, seed, 0.3f));
    mats.push_back(randn({width, D}, seed + 1, 0.3f));
    mats.push_back(randn({D, width}, seed + 2, 0.3f));
    const size_t n = mats.size();
    return ops::ExpertWeights{ops::Weight(mats[n - 3].cview()), ops::Weight(mats[n - 2].cview()),
                              ops::Weight(mats[n - 1].cview())};
  };
  std::vector<ops::ExpertWeights> experts;
  for (int64_t e = 0; e < E; ++e) experts.push_back(mlp(I, 10 + 3 * e));
  const ops::ExpertWeights shared = mlp(Is, 99);
  Tensor x = randn({T, D}, 5), wts = randn({T, K}, 6);
  Tensor ids = i32({3, 0, 1, 3, 2, 1}, {T, K});
  // y = sum over (expert, weight) pairs of weight * down(silu(gate x) * up x), row by row.
  auto expect = [&](const ops::ExpertWeights& ew, int64_t t, float wk, std::vector<double>& acc) {
    const int64_t w = ew.gate.rows();
    Tensor xr = Tensor::empty({1, D}, DType::kF32), g = Tensor::empty({1, w}, DType::kF32),
           u = Tensor::empty({1, w}, DType::kF32), o = Tensor::empty({1, D}, DType::kF32);
    std::copy_n(x.data<float>() + t * D, D, xr.data<float>());
    ops.linear(g.view(), xr.view(), ew.gate);
    ops.linear(u.view(), xr.view(), ew.up);
    ops.silu_mul(g.view(), g.view(), u.view());
    ops.linear(o.view(), g.view(), ew.down);
    for (int64_t d = 0; d < D; ++d) acc[d] += wk * o.data<float>()[d];
  };
  for (const ops::ExpertWeights* sh : {static_cast<const ops::ExpertWeights*>(nullptr), &shared}) {
    Tensor y = Tensor::empty({T, D}, DType::kF32);
    ops.moe_experts(y.view(), x.view(), ids.view(), wts.view(), experts, sh);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> acc(D, 0.0);
      for (int64_t k = 0; k < K; ++k)
        expect(experts[ids.data<int32_t>()[t * K + k]], t, wts.data<float>()[t * K + k], acc);
      if (sh) expect(*sh, t, 1.f, acc);
      for (int64_t d = 0; d < D; ++d)
        EXPECT_NEAR(y.data<float>()[t * D + d], acc[d], 1e-5 * (1 + std::fabs(acc[d])))
            << "t " << t << " d " << d << (sh ? " with" : " without") << " the shared expert";
    }
  }
}

// Grouped routing: 8 experts in 4 groups, 2 groups kept. Expert 7 has the best single score
// but its group (3) loses on the sum of its top-2, so it must not be chosen.
TEST_F(ReferenceOpsTest, GroupLimitedRoutingFollowsGroupScores) {
  auto logit = [](float s) { return std::log(s / (1 - s)); };  // sigmoid^-1
  std::vector<float> s = {0.60f, 0.55f, 0.50f, 0.52f, 0.30f, 0.20f, 0.10f, 0.90f};
  Tensor logits = Tensor::empty({1, 8}, DType::kF32);
  for (int e = 0; e < 8; ++e) logits.data<float>()[e] = logit(s[e]);
  Tensor bias = Tensor::zeros({8}, DType::kF32);
  Tensor ids = Tensor::empty({1, 2}, DType::kI32), w = Tensor::empty({1, 2}, DType::kF32);
  ops.moe_route(ids.view(), w.view(), logits.view(), bias.view(), {2, 4, 2, true, 2.5f});
  // Group sums: g0 = 1.15, g1 = 1.02, g2 = 0.50, g3 = 1.00 -> keep g0, g1; best: 0 then 1.
  EXPECT_EQ(ids.data<int32_t>()[0], 0);
  EXPECT_EQ(ids.data<int32_t>()[1], 1);
  EXPECT_NEAR(w.data<float>()[0], 2.5 * 0.60 / 1.15, 1e-6);
  EXPECT_NEAR(w.data<float>()[1], 2.5 * 0.55 / 1.15, 1e-6);
  // The bias steers selection but not the weights: +0.5 on expert 2 selects it first.
  bias.data<float>()[2] = 0.5f;
  ops.moe_route(ids.view(), w.view(), logits.view(), bias.view(), {2, 4, 2, true, 2.5f});
  EXPECT_EQ(ids.data<int32_t>()[0], 2);
  EXPECT_EQ(ids.data<int32_t>()[1], 0);
  EXPECT_NEAR(w.data<float>()[0], 2.5 * 0.50 / 1.10, 1e-6);
  // Without grouping expert 7 wins.
  bias.data<float>()[2] = 0.f;
  ops.moe_route(ids.view(), w.view(), logits.view(), bias.view(), {2, 1, 1, false, 1.f});
  EXPECT_EQ(ids.data<int32_t>()[0], 7);
  EXPECT_NEAR(w.data<float>()[0], 0.90, 1e-6);
}

// q(m) . k(n) after RoPE depends only on m - n, for both pairings.
TEST_F(ReferenceOpsTest, RopeDotProductDependsOnlyOnRelativePosition) {
  std::vector<float> inv_freq = {1.0f, 0.1f, 0.01f, 0.001f};
  for (auto style : {ops::RopeStyle::kInterleaved, ops::RopeStyle::kNeox}) {
    Tensor base_q = randn({1, 1, 8}, 3), base_k = randn({1, 1, 8}, 4);
    auto rotated_dot = [&](int m, int n) {
      Tensor q = randn({1, 1, 8}, 3), k = randn({1, 1, 8}, 4);
      Tensor pm = i32({m}, {1}), pn = i32({n}, {1});
      ops.rope(q.view(), pm.view(), {style, inv_freq, 1.f});
      ops.rope(k.view(), pn.view(), {style, inv_freq, 1.f});
      double d = 0;
      for (int i = 0; i < 8; ++i) d += q.data<float>()[i] * k.data<float>()[i];
      return d;
    };
    EXPECT_NEAR(rotated_dot(7, 3), rotated_dot(14, 10), 1e-4);
    EXPECT_GT(std::fabs(rotated_dot(7, 3) - rotated_dot(3, 7)), 1e-3);
  }
  // Interleaved pairs (0,1): position 1, inv_freq 1 rotates (1, 0) to (cos 1, sin 1).
  Tensor x = Tensor::zeros({1, 1, 4}, DType::kF32);
  x.data<float>()[0] = 1.f;
  Tensor p = i32({1}, {1});
  std::vector<float> f2 = {1.0f, 0.5f};
  ops.rope(x.view(), p.view(), {ops::RopeStyle::kInterleaved, f2, 1.f});
  EXPECT_NEAR(x.data<float>()[0], std::cos(1.0), 1e-6);
  EXPECT_NEAR(x.data<float>()[1], std::sin(1.0), 1e-6);
  EXPECT_NEAR(x.data<float>()[2], 0.0, 1e-6);
}

struct MlaSetup {
  static constexpr int64_t H = 3, Dn = 4, R = 2, Dv = 5, L = 6, P = 4, N = 9;
  Tensor cache = randn({3, P, L + R}, 10);
  Tensor kvb = randn({H * (Dn + Dv), L}, 11, 0.5f);
  Tensor q = randn({2, H, Dn + R}, 12);
  Tensor token_seq = i32({0, 0}, {2});
  Tensor positions = i32({5, 8}, {2});
  Tensor seq_lens = i32({9}, {1});
  Tensor pages = i32({2, 0, 1}, {1, 3});
  ops::BatchLayout layout() {
    ops::BatchLayout b;
    b.num_tokens = 2;
    b.num_seqs = 1;
    b.token_seq = token_seq.view();
    b.positions = positions.view();
    b.seq_lens = seq_lens.view();
    b.page_table = pages.view();
    b.page_size = P;
    return b;
  }
};

TEST_F(ReferenceOpsTest, MlaNaiveAndAbsorbedFormsAgree) {
  MlaSetup m;
  for (bool sparse : {false, true}) {
    Tensor sel = i32({0, 3, 5, -1, 8, 1, 2, 7}, {2, 4});
    Tensor a = Tensor::empty({2, 3, 5}, DType::kF32), b = Tensor::empty({2, 3, 5}, DType::kF32);
    ops::MlaParams p{3, 4, 2, 5, 6, 0.3f, ops::MlaForm::kNaive};
    ConstTensorView selected = sparse ? sel.cview() : ConstTensorView();
    ops.mla_attention(a.view(), m.q.view(), {m.cache.view()}, m.kvb.view(), selected, m.layout(),
                      p);
    p.form = ops::MlaForm::kAbsorbed;
    ops.mla_attention(b.view(), m.q.view(), {m.cache.view()}, m.kvb.view(), selected, m.layout(),
                      p);
    for (int i = 0; i < 30; ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5);
  }
}

// Attending to one selected key returns exactly that key's value vector W_UV c_kv.
TEST_F(ReferenceOpsTest, MlaWithOneSelectedKeyReturnsItsValue) {
  MlaSetup m;
  Tensor sel = i32({4, -1, 2, -1}, {2, 2});
  Tensor out = Tensor::empty({2, 3, 5}, DType::kF32);
  ops.mla_attention(out.view(), m.q.view(), {m.cache.view()}, m.kvb.view(), sel.view(), m.layout(),
                    {3, 4, 2, 5, 6, 0.3f, ops::MlaForm::kNaive});
  // Position 4 -> page_table[1] = 0, slot 0; position 2 -> page 2, slot 2.
  const float* lat4 = m.cache.data<float>() + (0 * 4 + 0) * 8;
  for (int h = 0; h < 3; ++h)
    for (int d = 0; d < 5; ++d) {
      double v = 0;
      for (int c = 0; c < 6; ++c) v += m.kvb.data<float>()[(h * 9 + 4 + d) * 6 + c] * lat4[c];
      EXPECT_NEAR(out.data<float>()[h * 5 + d], v, 1e-5);
    }
}

// A token whose selection is all padding gets 0 in both forms; the other token is unaffected.
TEST_F(ReferenceOpsTest, MlaTokenWithoutAttendedKeysGivesZero) {
  MlaSetup m;
  Tensor sel = i32({-1, -1, -1, 8, 4, 6}, {2, 3});
  for (ops::MlaForm form : {ops::MlaForm::kNaive, ops::MlaForm::kAbsorbed}) {
    Tensor out = Tensor::empty({2, 3, 5}, DType::kF32);
    for (int i = 0; i < 30; ++i) out.data<float>()[i] = std::nanf("");
    ops.mla_attention(out.view(), m.q.view(), {m.cache.view()}, m.kvb.view(), sel.view(),
                      m.layout(), {3, 4, 2, 5, 6, 0.3f, form});
    for (int i = 0; i < 15; ++i) EXPECT_EQ(out.data<float>()[i], 0.f) << i;
    float norm = 0;
    for (int i = 15; i < 30; ++i) norm += std::fabs(out.data<float>()[i]);
    EXPECT_TRUE(std::isfinite(norm) && norm > 0) << norm;
  }
}

TEST_F(ReferenceOpsTest, DsaSelectsTopScoresCausallyAndPads) {
  MlaSetup m;
  Tensor kcache = randn({3, 4, 4}, 20);
  Tensor q = randn({2, 2, 4}, 21), w = randn({2, 2}, 22);
  Tensor out = Tensor::empty({2, 4}, DType::kI32);
  Tensor pos = i32({2, 8}, {2});
  ops::BatchLayout b = m.layout();
  b.positions = pos.view();
  ops.dsa_index_topk(out.view(), q.view(), w.view(), {kcache.view()}, b);
  // Token 0 at position 2: only 3 keys exist -> 3 picks (0..2) then -1.
  std::vector<int32_t> r0(out.data<int32_t>(), out.data<int32_t>() + 4);
  EXPECT_EQ(r0[3], -1);
  std::sort(r0.begin(), r0.begin() + 3);
  EXPECT_EQ(r0, (std::vector<int32_t>{0, 1, 2, -1}));
  // Token 1 at position 8: 4 distinct picks whose scores beat every unpicked key.
  auto score = [&](int j) {
    const int pages[3] = {2, 0, 1};
    const float* k = kcache.data<float>() + (pages[j / 4] * 4 + j % 4) * 4;
    double s = 0;
    for (int h = 0; h < 2; ++h) {
      double d = 0;
      for (int i = 0; i < 4; ++i) d += q.data<float>()[(1 * 2 + h) * 4 + i] * k[i];
      s += w.data<float>()[2 + h] * std::max(d, 0.0);
    }
    return s;
  };
  std::vector<int32_t> r1(out.data<int32_t>() + 4, out.data<int32_t>() + 8);
  double worst_picked = 1e30;
  for (int32_t j : r1) {
    ASSERT_GE(j, 0);
    ASSERT_LE(j, 8);
    worst_picked = std::min(worst_picked, score(j));
  }
  for (int j = 0; j <= 8; ++j) {
    if (std::find(r1.begin(), r1.end(), j) == r1.end()) {
      EXPECT_LE(score(j), worst_picked);
    }
  }
}

TEST_F(ReferenceOpsTest, SamplingGreedySeededAndDistribution) {
  Tensor logits = Tensor::empty({1, 4}, DType::kF32);
  float lv[4] = {0.5f, 2.0f, 1.0f, -1.0f};
  std::copy(lv, lv + 4, logits.data<float>());
  Tensor out = Tensor::empty({1}, DType::kI32);
  ops::SamplingParams greedy;
  uint64_t step = 0;
  ops.sample(out.view(), logits.view(), {&greedy, 1}, {&step, 1});
  EXPECT_EQ(out.data<int32_t>()[0], 1);
  // Temperature 1: frequencies over many seeds follow softmax(logits).
  std::map<int, int> count;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    ops::SamplingParams p{1.0f, 1.0f, 0, static_cast<uint64_t>(i)};
    ops.sample(out.view(), logits.view(), {&p, 1}, {&step, 1});
    count[out.data<int32_t>()[0]]++;
  }
  double z = 0;
  for (float v : lv) z += std::exp(v);
  for (int v = 0; v < 4; ++v) EXPECT_NEAR(count[v] / double(n), std::exp(lv[v]) / z, 0.015) << v;
  // top-k 2 never draws the two smallest; top-p 0.5 keeps only the most likely token.
  for (int i = 0; i < 200; ++i) {
    ops::SamplingParams p{1.0f, 1.0f, 2, static_cast<uint64_t>(i)};
    ops.sample(out.view(), logits.view(), {&p, 1}, {&step, 1});
    EXPECT_TRUE(out.data<int32_t>()[0] == 1 || out.data<int32_t>()[0] == 2);
    ops::SamplingParams q{1.0f, 0.5f, 0, static_cast<uint64_t>(i)};
    ops.sample(out.view(), logits.view(), {&q, 1}, {&step, 1});
    EXPECT_EQ(out.data<int32_t>()[0], 1);
  }
  // Same seed and step -> same token; the step changes the draw.
  ops::SamplingParams p{2.0f, 1.0f, 0, 42};
  std::vector<int> a, b;
  for (uint64_t s = 0; s < 50; ++s) {
    ops.sample(out.view(), logits.view(), {&p, 1}, {&s, 1});
    a.push_back(out.data<int32_t>()[0]);
    ops.sample(out.view(), logits.view(), {&p, 1}, {&s, 1});
    b.push_back(out.data<int32_t>()[0]);
  }
  EXPECT_EQ(a, b);
  EXPECT_GT(std::set<int>(a.begin(), a.end()).size(), 1u);
}

}  // namespace
}  // namespace moe::reference
