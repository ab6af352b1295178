// CudaOps against ReferenceOps, op by op, on random data over ragged token counts
// (T = 1, 3, 17, 64, 257, and 1000 where the reference is cheap), with poisoned outputs.
// Tolerances (max |cuda - ref| / max |ref|) are listed in docs/cuda-backend.md.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "backends/reference/reference_ops.h"
#include "cuda_test_util.h"

namespace moe::cuda::testing {
namespace {

constexpr double kTolExact = 0;  // integer outputs, copies
constexpr double kTolElementwise = 1e-6;
constexpr double kTolNorm = 1e-6;
constexpr double kTolRope = 1e-5;
constexpr double kTolMatmul = 2e-5;  // f32 accumulation vs the reference's f64
constexpr double kTolAttention = 5e-5;

const std::vector<int64_t> kTokens = {1, 3, 17, 64, 257};
const std::vector<int64_t> kTokensCheap = {1, 3, 17, 64, 257, 1000};

class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MOE_GPU_OR_SKIP(ops_);
    dev_ = std::make_unique<DeviceTensors>(*ops_);
  }
  ThreadPool pool_{2};
  reference::ReferenceOps ref_{pool_};
  std::unique_ptr<CudaOps> ops_;
  std::unique_ptr<DeviceTensors> dev_;
};

// A ragged batch of up to three sequences with cached context, its pages scattered over a pool.
struct Layout {
  Tensor token_seq, positions, seq_lens, page_table;
  ops::BatchLayout host, dev;
  int64_t num_pages = 0;
};

Layout make_layout(DeviceTensors& d, int64_t T, uint32_t seed, int64_t page_size = 16) {
  std::vector<int64_t> n_new, ctx;
  if (T == 1) {
    n_new = {1};
    ctx = {40};
  } else {
    const int64_t a = std::max<int64_t>(1, (T - 1) / 3);
    n_new = {1, a, T - 1 - a};
    ctx = {37, 0, 5};
  }
  const int64_t S = static_cast<int64_t>(n_new.size());
  std::vector<int32_t> tseq, pos, lens;
  int64_t max_pages = 1, total_pages = 0;
  for (int64_t s = 0; s < S; ++s) {
    for (int64_t i = 0; i < n_new[s]; ++i) {
      tseq.push_back(static_cast<int32_t>(s));
      pos.push_back(static_cast<int32_t>(ctx[s] + i));
    }
    lens.push_back(static_cast<int32_t>(ctx[s] + n_new[s]));
    const int64_t pages = (lens.back() + page_size - 1) / page_size;
    max_pages = std::max(max_pages, pages);
    total_pages += pages;
  }
  std::vector<int32_t> perm(total_pages + 3);  // a few pages belong to nobody
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  std::vector<int32_t> table(S * max_pages, -1);
  int64_t next = 0;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t p = 0; p < (lens[s] + page_size - 1) / page_size; ++p)
      table[s * max_pages + p] = perm[next++];
  Layout l;
  l.num_pages = static_cast<int64_t>(perm.size());
  l.token_seq = i32(tseq, {T});
  l.positions = i32(pos, {T});
  l.seq_lens = i32(lens, {S});
  l.page_table = i32(table, {S, max_pages});
  for (auto* b : {&l.host, &l.dev}) {
    b->num_tokens = T;
    b->num_seqs = S;
    b->page_size = page_size;
  }
  l.host.token_seq = l.token_seq.view();
  l.host.positions = l.positions.view();
  l.host.seq_lens = l.seq_lens.view();
  l.host.page_table = l.page_table.view();
  l.dev.token_seq = d.to_device(l.token_seq);
  l.dev.positions = d.to_device(l.positions);
  l.dev.seq_lens = d.to_device(l.seq_lens);
  l.dev.page_table = d.to_device(l.page_table);
  return l;
}

TEST_F(CudaOpsTest, Embed) {
  for (int64_t T : kTokensCheap) {
    Tensor table = cast(randn({50, 40}, 1), DType::kBF16);
    std::vector<int32_t> ids(T);
    std::mt19937 rng(T);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % 50);
    Tensor ids_h = i32(ids, {T});
    Tensor want = Tensor::empty({T, 40}, DType::kF32);
    ref_.embed(want.view(), ids_h.view(), table.view());
    TensorView y = dev_->poisoned({T, 40}, DType::kF32);
    ops_->embed(y, dev_->to_device(ids_h), dev_->to_device(table));
    EXPECT_LE(rel_error(dev_->to_host(y), want), kTolExact) << "T " << T;
  }
}

TEST_F(CudaOpsTest, LinearAllDtypesStridedRows) {
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (int64_t T : kTokensCheap) {
      const int64_t K = 96, N = 80;
      Tensor xw = randn({T, K + 8}, 10 + T);
      ConstTensorView x_h = xw.view().slice(1, 3, 3 + K);  // strided rows
      Tensor w = cast(randn({N, K}, 20), dt);
      Tensor want = Tensor::empty({T, N}, DType::kF32);
      ref_.linear(want.view(), x_h, w.cview());
      ConstTensorView x_d = dev_->to_device(xw).slice(1, 3, 3 + K);
      TensorView y_wide = dev_->poisoned({T, N + 5}, DType::kF32);
      TensorView y = y_wide.slice(1, 0, N);
      ops_->linear(y, x_d, ConstTensorView(dev_->to_device(w)));
      Tensor got = dev_->to_host(y_wide);
      Tensor got_n = Tensor::empty({T, N}, DType::kF32);
      for (int64_t t = 0; t < T; ++t)
        std::memcpy(got_n.data<float>() + t * N, got.data<float>() + t * (N + 5), N * 4);
      EXPECT_LE(rel_error(got_n, want), kTolMatmul) << dtype_name(dt) << " T " << T;
    }
  }
}

// Host dequantization written from ops/weight.h (independent of tensor/quant), to check the
// reference's weight_row_f32 and the kernel against the same formula.
float fp8_e4m3_host(uint8_t b) {
  const int e = (b >> 3) & 0xF, m = b & 7;
  const float v =
      e == 0 ? static_cast<float>(m) / 512.f : std::ldexp(1.f + static_cast<float>(m) / 8.f, e - 7);
  return (b & 0x80) ? -v : v;
}
float e2m1_host(int c) {
  static const float mag[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
  return (c & 8) ? -mag[c & 7] : mag[c & 7];
}

struct QuantCase {
  ops::WeightFormat format;
  int64_t N, K, block;
};

// Random codes and scales of `c` (FP8 codes avoid NaN), plus their dense F32 dequantization.
struct QuantWeightHost {
  Tensor data, scale, dense;
  float global_scale = 1.f;
};
QuantWeightHost random_quant_weight(const QuantCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  QuantWeightHost q;
  q.dense = Tensor::empty({c.N, c.K}, DType::kF32);
  float* d = q.dense.data<float>();
  if (c.format == ops::WeightFormat::kFp8Block) {
    const int64_t sr = (c.N + c.block - 1) / c.block, sc = (c.K + c.block - 1) / c.block;
    q.data = Tensor::empty({c.N, c.K}, DType::kF8E4M3);
    q.scale = Tensor::empty({sr, sc}, DType::kF32);
    std::uniform_real_distribution<float> us(0.001f, 0.01f);
    for (int64_t i = 0; i < sr * sc; ++i) q.scale.data<float>()[i] = us(rng);
    uint8_t* codes = q.data.data<uint8_t>();
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t k = 0; k < c.K; ++k) {
        uint8_t b;
        do b = static_cast<uint8_t>(rng());
        while ((b & 0x7F) == 0x7F);
        codes[n * c.K + k] = b;
        d[n * c.K + k] = fp8_e4m3_host(b) * q.scale.data<float>()[(n / c.block) * sc + k / c.block];
      }
  } else {
    q.data = Tensor::empty({c.N, c.K / 2}, DType::kU8);
    q.scale = Tensor::empty({c.N, c.K / 16}, DType::kF8E4M3);
    q.global_scale = 0.37f;
    uint8_t* packed = q.data.data<uint8_t>();
    uint8_t* sc = q.scale.data<uint8_t>();
    for (int64_t i = 0; i < c.N * c.K / 16; ++i)
      sc[i] = static_cast<uint8_t>(0x20 + rng() % 0x28);  // 2^-3 .. 2^2, positive
    for (int64_t i = 0; i < c.N * c.K / 2; ++i) packed[i] = static_cast<uint8_t>(rng());
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t k = 0; k < c.K; ++k) {
        const uint8_t byte = packed[n * (c.K / 2) + k / 2];
        const int code = (k & 1) ? byte >> 4 : byte & 0xF;
        d[n * c.K + k] =
            e2m1_host(code) * (fp8_e4m3_host(sc[n * (c.K / 16) + k / 16]) * q.global_scale);
      }
  }
  return q;
}

// W8A16 / W4A16: the kernel dequantizes FP8 block-128 (partial edge blocks included) and NVFP4
// weights; checked against ReferenceOps on the quantized Weight and on its dense dequantization.
TEST_F(CudaOpsTest, LinearFp8BlockAndNvfp4) {
  const std::vector<QuantCase> cases = {{ops::WeightFormat::kFp8Block, 200, 300, 128},
                                        {ops::WeightFormat::kFp8Block, 64, 96, 32},
                                        {ops::WeightFormat::kNvfp4, 80, 96, 0},
                                        {ops::WeightFormat::kNvfp4, 130, 272, 0}};
  for (const QuantCase& c : cases) {
    QuantWeightHost q = random_quant_weight(c, static_cast<uint32_t>(c.N * 7 + c.K));
    ops::Weight wh;
    wh.format = c.format;
    wh.data = q.data.view();
    wh.scale = q.scale.view();
    wh.block = c.block ? c.block : 128;
    wh.global_scale = q.global_scale;
    ops::Weight wd = wh;
    wd.data = dev_->to_device(q.data);
    wd.scale = dev_->to_device(q.scale);
    for (int64_t T : kTokensCheap) {
      Tensor x = randn({T, c.K}, static_cast<uint32_t>(30 + T));
      Tensor want = Tensor::empty({T, c.N}, DType::kF32);
      ref_.linear(want.view(), x.view(), wh);
      Tensor want_dense = Tensor::empty({T, c.N}, DType::kF32);
      ref_.linear(want_dense.view(), x.view(), q.dense.cview());
      EXPECT_LE(rel_error(want, want_dense), 1e-12)
          << "reference weight_row_f32 vs ops/weight.h formula, format "
          << static_cast<int>(c.format);
      TensorView y = dev_->poisoned({T, c.N}, DType::kF32);
      ops_->linear(y, dev_->to_device(x), wd);
      EXPECT_LE(rel_error(dev_->to_host(y), want), kTolMatmul)
          << "format " << static_cast<int>(c.format) << " N " << c.N << " K " << c.K << " T " << T;
    }
  }
}

TEST_F(CudaOpsTest, RmsNormInPlaceAndLayerNorm) {
  for (int64_t T : kTokensCheap) {
    const int64_t N = 96;
    Tensor x = randn({T, N}, 30 + T, 3.f);
    Tensor gamma = cast(randn({N}, 31), DType::kBF16);
    Tensor beta = randn({N}, 32);
    Tensor want = Tensor::empty({T, N}, DType::kF32);
    ref_.rms_norm(want.view(), x.view(), gamma.view(), 1e-6f);
    TensorView xd = dev_->to_device(x);
    ops_->rms_norm(xd, xd, dev_->to_device(gamma), 1e-6f);  // y aliases x
    EXPECT_LE(rel_error(dev_->to_host(xd), want), kTolNorm) << "rms T " << T;
    ref_.layer_norm(want.view(), x.view(), gamma.view(), beta.view(), 1e-6f);
    TensorView y = dev_->poisoned({T, N}, DType::kF32);
    ops_->layer_norm(y, dev_->to_device(x), dev_->to_device(gamma), dev_->to_device(beta), 1e-6f);
    EXPECT_LE(rel_error(dev_->to_host(y), want), kTolNorm) << "layer T " << T;
  }
}

TEST_F(CudaOpsTest, AddScaleSiluMul) {
  for (int64_t T : kTokensCheap) {
    const int64_t N = 70;
    Tensor a = randn({T, N}, 40 + T), b = randn({T, N}, 41 + T), gu = randn({T, 2 * N}, 42 + T);
    Tensor want = a;  // reference works in place on a copy
    want = Tensor::empty({T, N}, DType::kF32);
    std::memcpy(want.data<float>(), a.data<float>(), a.nbytes());
    ref_.add_inplace(want.view(), b.view());
    ref_.scale_inplace(want.view(), -1.7f);
    TensorView y = dev_->to_device(a);
    ops_->add_inplace(y, dev_->to_device(b));
    ops_->scale_inplace(y, -1.7f);
    EXPECT_LE(rel_error(dev_->to_host(y), want), kTolElementwise) << "add/scale T " << T;
    ref_.silu_mul(want.view(), gu.view().slice(1, 0, N), gu.view().slice(1, N, 2 * N));
    TensorView gd = dev_->to_device(gu);
    TensorView out = dev_->poisoned({T, N}, DType::kF32);
    ops_->silu_mul(out, gd.slice(1, 0, N), gd.slice(1, N, 2 * N));
    EXPECT_LE(rel_error(dev_->to_host(out), want), kTolElementwise) << "silu_mul T " << T;
  }
}

TEST_F(CudaOpsTest, RopeBothStylesOnStridedSlice) {
  for (auto style : {ops::RopeStyle::kInterleaved, ops::RopeStyle::kNeox}) {
    for (int64_t T : kTokensCheap) {
      const int64_t H = 3, Dn = 10, R = 16;
      Tensor q = randn({T, H, Dn + R}, 50 + T);
      std::vector<int32_t> pos(T);
      std::mt19937 rng(T);
      for (auto& p : pos) p = static_cast<int32_t>(rng() % 5000);
      Tensor pos_h = i32(pos, {T});
      std::vector<float> inv(R / 2);
      for (int64_t i = 0; i < R / 2; ++i) inv[i] = std::pow(10000.f, -2.f * i / R);
      ops::RopeParams rp{style, inv, 1.3f};
      TensorView qd = dev_->to_device(q);
      ref_.rope(q.view().slice(2, Dn, Dn + R), pos_h.view(), rp);
      ops_->rope(qd.slice(2, Dn, Dn + R), dev_->to_device(pos_h), rp);
      EXPECT_LE(rel_error(dev_->to_host(qd), q), kTolRope)
          << "style " << static_cast<int>(style) << " T " << T;
    }
  }
}

TEST_F(CudaOpsTest, CacheWriteScattersIntoPages) {
  for (int64_t T : kTokens) {
    Layout l = make_layout(*dev_, T, 60 + T);
    const int64_t W = 40;
    Tensor cache = randn({l.num_pages, 16, W}, 61);
    Tensor src = randn({T, W + 4}, 62 + T);
    TensorView cd = dev_->to_device(cache);
    ref_.cache_write({cache.view()}, src.view().slice(1, 0, W), l.host);
    ops_->cache_write({cd}, dev_->to_device(src).slice(1, 0, W), l.dev);
    EXPECT_LE(rel_error(dev_->to_host(cd), cache), kTolExact) << "T " << T;
  }
}

TEST_F(CudaOpsTest, DsaIndexTopkExactWithPadding) {
  for (int64_t top_k : {8, 64}) {
    for (int64_t T : kTokens) {
      Layout l = make_layout(*dev_, T, 70 + T);
      const int64_t Hi = 4, Di = 32;
      Tensor kc = randn({l.num_pages, 16, Di}, 71);
      Tensor q = randn({T, Hi, Di}, 72 + T);
      Tensor w = randn({T, Hi}, 73 + T);
      Tensor want = Tensor::empty({T, top_k}, DType::kI32);
      ref_.dsa_index_topk(want.view(), q.view(), w.view(), {kc.view()}, l.host);
      TensorView out = dev_->poisoned({T, top_k}, DType::kI32);
      ops_->dsa_index_topk(out, dev_->to_device(q), dev_->to_device(w), {dev_->to_device(kc)},
                           l.dev);
      Tensor got = dev_->to_host(out);
      int64_t mismatches = 0;
      for (int64_t i = 0; i < got.numel(); ++i)
        mismatches += got.data<int32_t>()[i] != want.data<int32_t>()[i];
      EXPECT_EQ(mismatches, 0) << "top_k " << top_k << " T " << T;
    }
  }
}

struct MlaShape {
  int64_t H, Dn, R, Dv, L;
};

TEST_F(CudaOpsTest, MlaAttentionBothFormsWithAndWithoutSelection) {
  const std::vector<MlaShape> shapes = {{4, 16, 8, 16, 32}, {2, 128, 64, 128, 512}};
  for (const MlaShape& s : shapes) {
    for (int64_t T : kTokens) {
      if (s.L == 512 && T > 17) continue;  // the reference is slow at real widths
      Layout l = make_layout(*dev_, T, 80 + T);
      Tensor cache = randn({l.num_pages, 16, s.L + s.R}, 81);
      Tensor q = randn({T, s.H, s.Dn + s.R}, 82 + T, 0.3f);
      Tensor kv_b = cast(randn({s.H * (s.Dn + s.Dv), s.L}, 83, 0.2f), DType::kBF16);
      // Selection: a random subset of each token's causal keys, unsorted, -1 padded.
      const int64_t sel_k = 12;
      std::vector<int32_t> sel(T * sel_k, -1);
      std::mt19937 rng(84 + T);
      for (int64_t t = 0; t < T; ++t) {
        std::vector<int32_t> keys(l.positions.data<int32_t>()[t] + 1);
        std::iota(keys.begin(), keys.end(), 0);
        std::shuffle(keys.begin(), keys.end(), rng);
        for (int64_t i = 0; i < std::min<int64_t>(sel_k, keys.size()); ++i)
          sel[t * sel_k + i] = keys[i];
      }
      Tensor sel_h = i32(sel, {T, sel_k});
      TensorView cache_d = dev_->to_device(cache), q_d = dev_->to_device(q),
                 kvb_d = dev_->to_device(kv_b), sel_d = dev_->to_device(sel_h);
      for (auto form : {ops::MlaForm::kNaive, ops::MlaForm::kAbsorbed}) {
        for (bool use_sel : {false, true}) {
          ops::MlaParams mp{s.H, s.Dn, s.R, s.Dv, s.L, 0.11f, form};
          Tensor want = Tensor::empty({T, s.H, s.Dv}, DType::kF32);
          ref_.mla_attention(want.view(), q.view(), {cache.view()}, kv_b.view(),
                             use_sel ? sel_h.cview() : ConstTensorView(), l.host, mp);
          TensorView out = dev_->poisoned({T, s.H, s.Dv}, DType::kF32);
          ops_->mla_attention(out, q_d, {cache_d}, kvb_d,
                              use_sel ? ConstTensorView(sel_d) : ConstTensorView(), l.dev, mp);
          EXPECT_LE(rel_error(dev_->to_host(out), want), kTolAttention)
              << "L " << s.L << " T " << T << " form " << static_cast<int>(form) << " selected "
              << use_sel;
        }
      }
    }
  }
}

TEST_F(CudaOpsTest, MoeRouteGroupedAndFlat) {
  struct Case {
    int64_t E, K, G, topk_group;
    bool norm;
    float scale;
  };
  for (const Case& c : {Case{64, 6, 8, 3, true, 2.5f}, Case{8, 3, 4, 2, true, 1.f},
                        Case{256, 8, 1, 1, false, 1.8f}}) {
    for (int64_t T : kTokensCheap) {
      Tensor logits = randn({T, c.E}, 90 + T, 2.f);
      Tensor bias = randn({c.E}, 91, 0.1f);
      ops::MoeRouteParams rp{c.K, c.G, c.topk_group, c.norm, c.scale};
      Tensor ids_w = Tensor::empty({T, c.K}, DType::kI32),
             w_w = Tensor::empty({T, c.K}, DType::kF32);
      ref_.moe_route(ids_w.view(), w_w.view(), logits.view(), bias.view(), rp);
      TensorView ids = dev_->poisoned({T, c.K}, DType::kI32),
                 w = dev_->poisoned({T, c.K}, DType::kF32);
      ops_->moe_route(ids, w, dev_->to_device(logits), dev_->to_device(bias), rp);
      Tensor ids_g = dev_->to_host(ids);
      EXPECT_EQ(0, std::memcmp(ids_g.data<int32_t>(), ids_w.data<int32_t>(), ids_w.nbytes()))
          << "E " << c.E << " T " << T;
      EXPECT_LE(rel_error(dev_->to_host(w), w_w), kTolElementwise) << "E " << c.E << " T " << T;
    }
  }
}

TEST_F(CudaOpsTest, MoeExperts) {
  for (DType dt : {DType::kBF16, DType::kF32}) {
    for (int64_t T : kTokensCheap) {
      const int64_t E = 8, K = 3, D = 64, I = 48;
      std::vector<Tensor> w_h;
      std::vector<ops::ExpertWeights> ew_h, ew_d;
      for (int64_t e = 0; e < E; ++e) {
        Tensor g = cast(randn({I, D}, 100 + e, 0.2f), dt),
               u = cast(randn({I, D}, 200 + e, 0.2f), dt),
               dn = cast(randn({D, I}, 300 + e, 0.2f), dt);
        w_h.insert(w_h.end(), {g, u, dn});
        ew_h.push_back({g.cview(), u.cview(), dn.cview()});
        ew_d.push_back({ConstTensorView(dev_->to_device(g)), ConstTensorView(dev_->to_device(u)),
                        ConstTensorView(dev_->to_device(dn))});
      }
      Tensor x = randn({T, D}, 110 + T);
      std::vector<int32_t> ids(T * K);
      std::mt19937 rng(T);
      for (int64_t t = 0; t < T; ++t) {
        std::vector<int32_t> all(E);
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng);
        for (int64_t k = 0; k < K; ++k) ids[t * K + k] = all[k];
      }
      Tensor ids_h = i32(ids, {T, K});
      Tensor wts = randn({T, K}, 120 + T);
      Tensor want = Tensor::empty({T, D}, DType::kF32);
      ref_.moe_experts(want.view(), x.view(), ids_h.view(), wts.view(), ew_h);
      TensorView y = dev_->poisoned({T, D}, DType::kF32);
      ops_->moe_experts(y, dev_->to_device(x), dev_->to_device(ids_h), dev_->to_device(wts), ew_d);
      EXPECT_LE(rel_error(dev_->to_host(y), want), kTolMatmul) << dtype_name(dt) << " T " << T;
    }
  }
}

TEST_F(CudaOpsTest, SampleGreedyAndSeededMatchReference) {
  for (int64_t S : kTokens) {
    for (int64_t V : {1000, 5000}) {
      Tensor logits = randn({S, V}, 130 + S + V, 3.f);
      std::vector<ops::SamplingParams> params(S);
      std::vector<uint64_t> steps(S);
      for (int64_t s = 0; s < S; ++s) {
        ops::SamplingParams& p = params[s];
        switch (s % 5) {
          case 0:
            break;  // greedy
          case 1:
            p = {0.8f, 1.f, 0, 7};
            break;
          case 2:
            p = {1.2f, 1.f, 50, 11};
            break;
          case 3:
            p = {0.7f, 0.9f, 0, 13};
            break;
          case 4:
            p = {1.0f, 0.5f, 40, 17};
            break;
        }
        steps[s] = static_cast<uint64_t>(s * 31 + 5);
      }
      Tensor want = Tensor::empty({S}, DType::kI32);
      ref_.sample(want.view(), logits.view(), params, steps);
      TensorView out = dev_->poisoned({S}, DType::kI32);
      ops_->sample(out, dev_->to_device(logits), params, steps);
      Tensor got = dev_->to_host(out);
      for (int64_t s = 0; s < S; ++s)
        EXPECT_EQ(got.data<int32_t>()[s], want.data<int32_t>()[s])
            << "S " << S << " V " << V << " row " << s;
    }
  }
}

}  // namespace
}  // namespace moe::cuda::testing
