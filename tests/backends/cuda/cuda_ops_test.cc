// CudaOps against ReferenceOps, op by op, on random data over ragged token counts
// (T = 1, 3, 17, 64, 257, and 1000 where the reference is cheap), with poisoned outputs.
// Tolerances (max |cuda - ref| / max |ref|) are listed in docs/cuda-backend.md.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "backends/cuda/cuda_graph.h"
#include "backends/cuda/kernels/linear/linear.h"
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

// A batch of S sequences: sequence s holds ctx[s] cached tokens and n_new[s] new ones
// (positions ctx[s]...), its pages scattered over a pool with a few pages that belong to nobody.
Layout batch_layout(DeviceTensors& d, const std::vector<int64_t>& ctx,
                    const std::vector<int64_t>& n_new, uint32_t seed, int64_t page_size = 16) {
  const int64_t S = static_cast<int64_t>(ctx.size());
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
  const int64_t T = static_cast<int64_t>(tseq.size());
  std::vector<int32_t> perm(total_pages + 3);
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
  return batch_layout(d, ctx, n_new, seed, page_size);
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

// x [T, K] rounded to `dt` (BF16 or F16) and back: what the cuBLASLt path multiplies.
Tensor round_through(const Tensor& x, DType dt) {
  Tensor r = Tensor::empty(x.shape(), DType::kF32);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i];
    r.data<float>()[i] = dt == DType::kBF16 ? round_to_bf16(v) : f16_to_f32(to_f16(v));
  }
  return r;
}

// ops.linear with x [T, K] uploaded as columns [3, 3 + K) of a [T, K + 8] matrix whose other
// columns are NaN, into columns [y_off, y_off + N) of a poisoned [T, N + 5] output (strided rows
// on both sides). Returns y as a contiguous [T, N]; *outside_ok says whether every element
// outside the slice is still poisoned (no write past a row).
Tensor linear_strided(CudaOps& ops, DeviceTensors& dev, const Tensor& x, const ops::Weight& wd,
                      int64_t N, int64_t y_off, bool* outside_ok) {
  const int64_t T = x.dim(0), K = x.dim(1), W = N + 5;
  Tensor xw = Tensor::empty({T, K + 8}, DType::kF32);
  for (int64_t i = 0; i < xw.numel(); ++i) xw.data<float>()[i] = NAN;
  for (int64_t t = 0; t < T; ++t)
    std::memcpy(xw.data<float>() + t * (K + 8) + 3, x.data<float>() + t * K, K * 4);
  ConstTensorView x_d = dev.to_device(xw).slice(1, 3, 3 + K);  // [T, K], row stride K + 8
  TensorView y_wide = dev.poisoned({T, W}, DType::kF32);
  ops.linear(y_wide.slice(1, y_off, y_off + N), x_d, wd);
  Tensor got = dev.to_host(y_wide);
  Tensor y = Tensor::empty({T, N}, DType::kF32);
  *outside_ok = true;
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(y.data<float>() + t * N, got.data<float>() + t * W + y_off, N * 4);
    for (int64_t c = 0; c < W; ++c)
      if ((c < y_off || c >= y_off + N) && !std::isnan(got.data<float>()[t * W + c]))
        *outside_ok = false;
  }
  return y;
}

// Dense weights. BF16/F16 with K % 128 == 0 go through cuBLASLt with x rounded to the weight
// dtype: checked against the reference on the rounded x (only f32 accumulation differs) and on
// the f32 x (the rounding's effect, docs/numerics.md); other K and F32 weights take the exact
// tile kernel (vs the reference on the f32 x).
TEST_F(CudaOpsTest, LinearDenseAllDtypesStridedRows) {
  constexpr double kTolRoundedXBf16 = 4e-3;  // x rounded to BF16 (2^-9 relative per element)
  constexpr double kTolRoundedXF16 = 1e-3;   // x rounded to F16 (2^-11)
  struct Case {
    int64_t N, K, y_off;
  };
  const std::vector<Case> cases = {{80, 96, 1}, {131, 384, 0}, {77, 203, 1}, {96, 256, 1}};
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const Case& c : cases) {
      Tensor w = cast(randn({c.N, c.K}, static_cast<uint32_t>(20 + c.K)), dt);
      ConstTensorView w_d = dev_->to_device(w);
      for (int64_t T : kTokensCheap) {
        Tensor x = randn({T, c.K}, static_cast<uint32_t>(10 + T));
        Tensor want = Tensor::empty({T, c.N}, DType::kF32);
        ref_.linear(want.view(), x.view(), w.cview());
        const int64_t lt_before = ops_->linear_cublaslt_calls();
        bool outside_ok = false;
        Tensor got = linear_strided(*ops_, *dev_, x, ops::Weight(w_d), c.N, c.y_off, &outside_ok);
        const bool lt = ops_->linear_cublaslt_calls() > lt_before;
        const std::string what = std::string(dtype_name(dt)) + " N " + std::to_string(c.N) + " K " +
                                 std::to_string(c.K) + " T " + std::to_string(T) +
                                 (lt ? " (cuBLASLt)" : " (tile)");
        EXPECT_TRUE(outside_ok) << what << ": wrote outside y's columns";
        if (dt == DType::kF32 || c.K % 128 != 0) {
          EXPECT_FALSE(lt) << what;
          EXPECT_LE(rel_error(got, want), kTolMatmul) << what;
          continue;
        }
        if (c.y_off == 0) {
          EXPECT_TRUE(lt) << what << ": aligned y, expected the cuBLASLt path";
        }
        if (!lt) {  // no cuBLASLt algorithm for this alignment: the exact fallback
          EXPECT_LE(rel_error(got, want), kTolMatmul) << what;
          continue;
        }
        Tensor xr = round_through(x, dt);
        Tensor want_r = Tensor::empty({T, c.N}, DType::kF32);
        ref_.linear(want_r.view(), xr.view(), w.cview());
        EXPECT_LE(rel_error(got, want_r), kTolMatmul) << what << " vs reference on rounded x";
        const double err = rel_error(got, want);
        EXPECT_LE(err, dt == DType::kBF16 ? kTolRoundedXBf16 : kTolRoundedXF16) << what;
        if (T == 1000) std::printf("[ linear ] %s: %.3g vs the f32 reference\n", what.c_str(), err);
      }
    }
  }
  EXPECT_GT(ops_->linear_cublaslt_calls(), 0);
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

// W8A16 / W4A16: FP8 block-128 (partial edge blocks included) and NVFP4 weights dequantized in
// the kernel, checked against ReferenceOps on the quantized Weight and on its dense
// dequantization. M <= 4 takes the small-M kernel (16-byte loads when K % 16 == 0 (FP8) /
// K % 32 == 0 (NVFP4), bytewise otherwise; split-K for few output rows and K >= 2048); larger M
// with K % 128 == 0 the BF16 dequantization + cuBLASLt path (x rounded to BF16; FP8 weights
// rounded to BF16 too: tolerance 6e-3), else the tile kernel; x and y are strided.
TEST_F(CudaOpsTest, LinearFp8BlockAndNvfp4) {
  const std::vector<QuantCase> cases = {
      {ops::WeightFormat::kFp8Block, 200, 300, 128},  {ops::WeightFormat::kFp8Block, 64, 96, 32},
      {ops::WeightFormat::kFp8Block, 131, 1040, 128}, {ops::WeightFormat::kFp8Block, 96, 4224, 128},
      {ops::WeightFormat::kNvfp4, 80, 96, 0},         {ops::WeightFormat::kNvfp4, 130, 272, 0},
      {ops::WeightFormat::kNvfp4, 131, 2080, 0},      {ops::WeightFormat::kNvfp4, 40, 4128, 0},
      {ops::WeightFormat::kNvfp4, 130, 384, 0},       {ops::WeightFormat::kFp8Block, 77, 256, 32}};
  const std::vector<int64_t> tokens = {1, 2, 3, 4, 5, 9, 16, 17, 64, 257, 1000};
  constexpr double kTolDequantBf16 = 6e-3;
  int dequant_taken = 0;
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
    for (int64_t T : tokens) {
      if (T == 1000 && c.K > 2048) continue;  // keep the f64 reference cheap
      Tensor x = randn({T, c.K}, static_cast<uint32_t>(30 + T));
      Tensor want = Tensor::empty({T, c.N}, DType::kF32);
      ref_.linear(want.view(), x.view(), wh);
      Tensor want_dense = Tensor::empty({T, c.N}, DType::kF32);
      ref_.linear(want_dense.view(), x.view(), q.dense.cview());
      EXPECT_LE(rel_error(want, want_dense), 1e-12)
          << "reference weight_row_f32 vs ops/weight.h formula, format "
          << static_cast<int>(c.format);
      bool outside_ok = false;
      const int64_t lt_before = ops_->linear_cublaslt_calls();
      Tensor got = linear_strided(*ops_, *dev_, x, wd, c.N, 1, &outside_ok);
      const bool lt = ops_->linear_cublaslt_calls() > lt_before;
      const bool eligible = c.K % 128 == 0 && T > 4;
      EXPECT_TRUE(eligible || !lt) << "cuBLASLt path, N " << c.N << " K " << c.K << " T " << T;
      dequant_taken += lt;  // eligible calls may fall back (cuBLASLt alignment), but not all
      EXPECT_TRUE(outside_ok) << "wrote outside y's columns, N " << c.N << " K " << c.K << " T "
                              << T;
      EXPECT_LE(rel_error(got, want), lt ? kTolDequantBf16 : kTolMatmul)
          << "format " << static_cast<int>(c.format) << " N " << c.N << " K " << c.K << " T " << T;
    }
  }
  EXPECT_GT(dequant_taken, 0) << "no quantized linear took the dequantize + cuBLASLt path";
}

// Host-only (no GPU): the small-M kernel's split-K plan covers every K chunk exactly once, leaves
// no split empty, and splits only when the output rows give fewer than 3 CTAs per SM.
TEST(LinearGemvPlan, SplitsCoverKWithoutEmptySplits) {
  struct Case {
    int wt;
    int64_t M, N, K;
  };
  const std::vector<Case> cases = {{kWNvfp4, 1, 24576, 6144},  {kWNvfp4, 1, 6144, 12288},
                                   {kWNvfp4, 4, 40, 4128},     {kWFp8Block, 16, 96, 4224},
                                   {kWFp8Block, 3, 576, 6144}, {kWFp8Block, 1, 200, 300},
                                   {kWNvfp4, 9, 130, 272},     {kWFp8Block, 1, 7, 65536}};
  for (const Case& c : cases) {
    LinearParams p;
    p.wt = c.wt;
    p.w_block = 128;
    p.M = c.M;
    p.N = c.N;
    p.K = c.K;
    ASSERT_TRUE(linear_gemv_supported(p));
    const LinearGemvParams g = plan_linear_gemv(p, 132);
    const int64_t chunks = (c.K + 1023) / 1024;
    const std::string what =
        "M " + std::to_string(c.M) + " N " + std::to_string(c.N) + " K " + std::to_string(c.K);
    EXPECT_GE(g.splits, 1) << what;
    EXPECT_LE(g.splits, 16) << what;
    EXPECT_GE(g.chunks_per_split * g.splits, chunks) << what;        // every chunk covered
    EXPECT_LT(g.chunks_per_split * (g.splits - 1), chunks) << what;  // last split not empty
    EXPECT_EQ(partial_floats(g), g.splits > 1 ? g.splits * c.M * c.N : 0) << what;
    const int64_t ctas = (c.M + 7) / 8 * ((c.N + 15) / 16);
    if (ctas >= 3 * 132) {
      EXPECT_EQ(g.splits, 1) << what;
    }
  }
  LinearParams big;
  big.wt = kWNvfp4;
  big.M = kLinearGemvMaxM + 1;
  big.N = big.K = 128;
  EXPECT_FALSE(linear_gemv_supported(big));
  big.M = 1;
  big.wt = kWBF16;
  EXPECT_FALSE(linear_gemv_supported(big));
}

// One weight per linear path (cuBLASLt BF16, small-M FP8 and NVFP4 with split-K, F32 tile):
// after a warm-up call an eager pass allocates no scratch, the pass captured in a CUDA graph
// allocates none either, and each replay writes exactly the eager outputs.
TEST_F(CudaOpsTest, LinearGraphReplayEqualsEagerNoScratchGrowth) {
  const int64_t T = 4;
  Tensor w_bf16 = cast(randn({300, 512}, 51), DType::kBF16);
  Tensor w_f32 = randn({50, 64}, 52);
  QuantWeightHost fp8 = random_quant_weight({ops::WeightFormat::kFp8Block, 96, 4224, 128}, 53);
  QuantWeightHost nvfp4 = random_quant_weight({ops::WeightFormat::kNvfp4, 40, 4128, 0}, 54);
  struct HostWeight {
    Tensor data, scale;
  };
  const std::vector<HostWeight> host = {
      {w_bf16, {}}, {w_f32, {}}, {fp8.data, fp8.scale}, {nvfp4.data, nvfp4.scale}};
  std::vector<ops::Weight> wh(4), wd(4);
  wh[0] = w_bf16.cview();
  wh[1] = w_f32.cview();
  wh[2].format = ops::WeightFormat::kFp8Block;
  wh[2].data = fp8.data.view();
  wh[2].scale = fp8.scale.view();
  wh[2].block = 128;
  wh[3].format = ops::WeightFormat::kNvfp4;
  wh[3].data = nvfp4.data.view();
  wh[3].scale = nvfp4.scale.view();
  wh[3].global_scale = nvfp4.global_scale;
  std::vector<Tensor> xs;
  std::vector<ConstTensorView> xd;
  std::vector<TensorView> y_eager, y_graph;
  for (size_t i = 0; i < wh.size(); ++i) {
    wd[i] = wh[i];
    wd[i].data = dev_->to_device(host[i].data);
    if (wh[i].format != ops::WeightFormat::kDense) wd[i].scale = dev_->to_device(host[i].scale);
    xs.push_back(randn({T, wh[i].cols()}, static_cast<uint32_t>(60 + i)));
    xd.push_back(dev_->to_device(xs[i]));
    y_eager.push_back(dev_->poisoned({T, wh[i].rows()}, DType::kF32));
    y_graph.push_back(dev_->poisoned({T, wh[i].rows()}, DType::kF32));
  }
  auto pass = [&](std::vector<TensorView>& ys) {
    for (size_t i = 0; i < wd.size(); ++i) ops_->linear(ys[i], xd[i], wd[i]);
  };
  const int64_t lt_before = ops_->linear_cublaslt_calls();
  pass(y_eager);  // warm-up: sizes the scratch arena, caches the cuBLASLt plan
  ops_->synchronize();
  ops_->settle_scratch();
  const int growths = ops_->scratch_growths();
  pass(y_eager);
  EXPECT_EQ(ops_->scratch_growths(), growths) << "an eager pass after warm-up grew the scratch";
  EXPECT_EQ(ops_->linear_cublaslt_calls(), lt_before + 2) << "BF16 K = 512 takes cuBLASLt";
  std::vector<Tensor> eager;
  for (size_t i = 0; i < wd.size(); ++i) {
    eager.push_back(dev_->to_host(y_eager[i]));
    Tensor x_ref = i == 0 ? round_through(xs[i], DType::kBF16) : xs[i];
    Tensor want = Tensor::empty({T, wh[i].rows()}, DType::kF32);
    ref_.linear(want.view(), x_ref.view(), wh[i]);
    EXPECT_LE(rel_error(eager[i], want), kTolMatmul) << "weight " << i;
  }

  CudaGraph graph;
  graph.begin_capture(*ops_);
  pass(y_graph);
  graph.end_capture(*ops_);
  EXPECT_EQ(ops_->scratch_growths(), growths) << "the captured pass grew the scratch";
  for (int rep = 0; rep < 2; ++rep) {
    for (TensorView& y : y_graph) {  // re-poison: each replay must write every element
      std::vector<float> nan(static_cast<size_t>(y.numel()), NAN);
      ops_->copy_from_host(y, nan.data());
    }
    graph.replay(*ops_);
    for (size_t i = 0; i < wd.size(); ++i) {
      Tensor got = dev_->to_host(y_graph[i]);
      EXPECT_EQ(0, std::memcmp(got.data<float>(), eager[i].data<float>(), got.nbytes()))
          << "weight " << i << " replay " << rep;
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

// DSA-like selection rows [T, sel_k] in random order: distinct causal keys of each token, -1
// padding and, with `out_of_range`, positions after the token (some beyond its pages), which
// are not attended. `ref` is the same with those replaced by -1 (the reference rejects them).
struct MlaSelection {
  Tensor rows, ref;
};
MlaSelection mla_selection(const Layout& l, int64_t sel_k, uint32_t seed, bool out_of_range) {
  const int64_t T = l.host.num_tokens;
  std::vector<int32_t> rows(T * sel_k), ref(T * sel_k);
  std::mt19937 rng(seed);
  for (int64_t t = 0; t < T; ++t) {
    const int32_t pos = l.positions.data<int32_t>()[t];
    std::vector<int32_t> keys(pos + 1);
    std::iota(keys.begin(), keys.end(), 0);
    std::shuffle(keys.begin(), keys.end(), rng);
    // Leave room for padding: at most 3/4 of the row holds attended keys.
    keys.resize(std::min<int64_t>(keys.size(), std::max<int64_t>(1, sel_k * 3 / 4)));
    std::vector<int32_t> row(sel_k, -1);
    std::copy(keys.begin(), keys.end(), row.begin());
    if (out_of_range)
      for (int64_t i = static_cast<int64_t>(keys.size()); i < sel_k; i += 2)
        row[i] = pos + 1 + static_cast<int32_t>(rng() % 200);
    std::shuffle(row.begin(), row.end(), rng);
    for (int64_t i = 0; i < sel_k; ++i) {
      rows[t * sel_k + i] = row[i];
      ref[t * sel_k + i] = row[i] > pos ? -1 : row[i];
    }
  }
  return {i32(rows, {T, sel_k}), i32(ref, {T, sel_k})};
}

// Runs mla_attention on the reference and (output poisoned first) the cuda backend on random
// data; returns the cuda output and the reference's in *want.
Tensor run_mla(reference::ReferenceOps& ref, CudaOps& ops, DeviceTensors& dev, const Layout& l,
               const MlaShape& s, DType kvb_dtype, ops::MlaForm form, const MlaSelection* sel,
               uint32_t seed, Tensor* want) {
  const int64_t T = l.host.num_tokens;
  Tensor cache = randn({l.num_pages, l.host.page_size, s.L + s.R}, seed);
  Tensor q = randn({T, s.H, s.Dn + s.R}, seed + 1, 0.3f);
  Tensor kv_b = cast(randn({s.H * (s.Dn + s.Dv), s.L}, seed + 2, 0.2f), kvb_dtype);
  const float scale = 1.f / std::sqrt(static_cast<float>(s.Dn + s.R));
  ops::MlaParams mp{s.H, s.Dn, s.R, s.Dv, s.L, scale, form};
  *want = Tensor::empty({T, s.H, s.Dv}, DType::kF32);
  ref.mla_attention(want->view(), q.view(), {cache.view()}, kv_b.view(),
                    sel ? sel->ref.cview() : ConstTensorView(), l.host, mp);
  TensorView out = dev.poisoned({T, s.H, s.Dv}, DType::kF32);
  ops.mla_attention(out, dev.to_device(q), {dev.to_device(cache)}, dev.to_device(kv_b),
                    sel ? ConstTensorView(dev.to_device(sel->rows)) : ConstTensorView(), l.dev, mp);
  return dev.to_host(out);
}

// GLM-5 head dims at 16 heads (one group of 16) and 4 (a group of 8, half empty),
// DeepSeek-like dims at 20 heads (two groups, the second partial), and small odd dims:
// L + R = 42 is not a multiple of 4 (4-byte cache copies, padded shared rows); L = 36, Dn = 12,
// Dv = 20 leave partial column tiles.
const std::vector<MlaShape> kMlaDecodeShapes = {
    {16, 192, 64, 256, 512}, {4, 192, 64, 256, 512}, {20, 128, 64, 128, 512},
    {3, 12, 6, 20, 36},      {5, 16, 8, 24, 40},
};

// Decode batches: one new token per sequence, contexts of different lengths across page
// boundaries (up to 300 keys: several key splits per (token, head group) on any GPU).
TEST_F(CudaOpsTest, MlaAttentionAbsorbedDecodeRaggedBatches) {
  const std::vector<int64_t> kCtx = {300, 0, 15, 16, 17, 31, 32, 47, 100, 255, 63, 64, 129};
  for (const MlaShape& s : kMlaDecodeShapes) {
    for (int64_t T : {1, 3, 17, 64}) {
      std::vector<int64_t> ctx(T), n_new(T, 1);
      for (int64_t i = 0; i < T; ++i) ctx[i] = kCtx[(i * 5 + T) % kCtx.size()] + i % 3;
      if (T == 1) ctx[0] = 300;
      const Layout l = batch_layout(*dev_, ctx, n_new, 90 + T);
      const MlaSelection sel = mla_selection(l, 64, 91 + T, /*out_of_range=*/true);
      for (DType wdt : {DType::kBF16, DType::kF32}) {
        if (wdt == DType::kF32 && T == 64) continue;  // the F32 path differs only in the load
        for (bool use_sel : {false, true}) {
          Tensor want;
          Tensor got = run_mla(ref_, *ops_, *dev_, l, s, wdt, ops::MlaForm::kAbsorbed,
                               use_sel ? &sel : nullptr, 92 + T, &want);
          EXPECT_LE(rel_error(got, want), kTolAttention)
              << "H " << s.H << " Dn " << s.Dn << " R " << s.R << " Dv " << s.Dv << " L " << s.L
              << " T " << T << " kv_b " << dtype_name(wdt) << " selected " << use_sel;
        }
      }
    }
  }
}

// Short contexts (at most 2 pages per sequence: 1-2 key tiles, so a single split whose block
// normalises o^ itself) and a selection of 12 slots.
TEST_F(CudaOpsTest, MlaAttentionAbsorbedShortContextsSingleSplit) {
  for (const MlaShape& s : kMlaDecodeShapes) {
    for (int64_t T : {1, 3, 17}) {
      std::vector<int64_t> ctx(T), n_new(T, 1);
      for (int64_t i = 0; i < T; ++i) ctx[i] = (i * 7 + 3) % 31;
      const Layout l = batch_layout(*dev_, ctx, n_new, 100 + T);
      const MlaSelection sel = mla_selection(l, 12, 101 + T, /*out_of_range=*/true);
      for (bool use_sel : {false, true}) {
        Tensor want;
        Tensor got = run_mla(ref_, *ops_, *dev_, l, s, DType::kBF16, ops::MlaForm::kAbsorbed,
                             use_sel ? &sel : nullptr, 102 + T, &want);
        EXPECT_LE(rel_error(got, want), kTolAttention)
            << "H " << s.H << " L " << s.L << " T " << T << " selected " << use_sel;
      }
    }
  }
}

// Prefill-like: many new tokens of one sequence (causal), after 40 cached tokens or none,
// with and without selection; both forms.
TEST_F(CudaOpsTest, MlaAttentionAbsorbedPrefillCausal) {
  const std::vector<MlaShape> shapes = {
      {16, 192, 64, 256, 512}, {8, 128, 64, 128, 512}, {3, 12, 6, 20, 36}};
  for (const MlaShape& s : shapes) {
    for (auto [ctx, n] : {std::pair<int64_t, int64_t>{40, 64}, {0, 257}}) {
      if (s.L == 512 && n > 64 && s.H > 8) continue;  // keep the reference's time down
      const Layout l = batch_layout(*dev_, {ctx}, {n}, 110 + n);
      const MlaSelection sel = mla_selection(l, 48, 111 + n, /*out_of_range=*/true);
      for (auto form : {ops::MlaForm::kAbsorbed, ops::MlaForm::kNaive}) {
        if (form == ops::MlaForm::kNaive && s.L == 512) continue;  // slow reference
        for (bool use_sel : {false, true}) {
          Tensor want;
          Tensor got = run_mla(ref_, *ops_, *dev_, l, s, DType::kBF16, form,
                               use_sel ? &sel : nullptr, 112 + n, &want);
          EXPECT_LE(rel_error(got, want), kTolAttention)
              << "H " << s.H << " L " << s.L << " ctx " << ctx << " new " << n << " form "
              << static_cast<int>(form) << " selected " << use_sel;
        }
      }
    }
  }
}

// A token whose selection attends nothing (all -1 or after its position) gets o = 0 in both
// forms (sum over an empty set; the reference cannot take such a row, so it sees key 0 there
// and only the other tokens are compared).
TEST_F(CudaOpsTest, MlaAttentionNoAttendedKeyGivesZero) {
  const MlaShape s = {16, 192, 64, 256, 512};
  const Layout l = batch_layout(*dev_, {300, 20, 90}, {1, 1, 1}, 120);
  MlaSelection sel = mla_selection(l, 32, 121, /*out_of_range=*/false);
  for (int64_t i = 0; i < 32; ++i) {
    sel.rows.data<int32_t>()[32 + i] = i % 2 ? -1 : 21 + static_cast<int32_t>(i);
    sel.ref.data<int32_t>()[32 + i] = i == 5 ? 0 : -1;
  }
  for (auto form : {ops::MlaForm::kAbsorbed, ops::MlaForm::kNaive}) {
    Tensor want;
    Tensor got = run_mla(ref_, *ops_, *dev_, l, s, DType::kBF16, form, &sel, 122, &want);
    const int64_t row = s.H * s.Dv;
    int64_t nonzero = 0;
    for (int64_t i = 0; i < row; ++i) nonzero += got.data<float>()[row + i] != 0.f;
    EXPECT_EQ(nonzero, 0) << "form " << static_cast<int>(form);
    for (int64_t i = 0; i < row; ++i) {  // compare tokens 0 and 2 only
      got.data<float>()[row + i] = 0.f;
      want.data<float>()[row + i] = 0.f;
    }
    EXPECT_LE(rel_error(got, want), kTolAttention) << "form " << static_cast<int>(form);
  }
}

// Ties (logits on a coarse grid, zero bias) must go to the lower index, as the reference's stable
// sorts; K beyond the kept groups' experts takes masked (-inf) experts, lowest index first; the
// largest supported E and n_group.
TEST_F(CudaOpsTest, MoeRouteGroupedAndFlat) {
  struct Case {
    int64_t E, K, G, topk_group;
    bool norm;
    float scale;
    bool ties = false;
  };
  for (const Case& c :
       {Case{64, 6, 8, 3, true, 2.5f}, Case{8, 3, 4, 2, true, 1.f}, Case{256, 8, 1, 1, false, 1.8f},
        Case{256, 8, 1, 1, true, 1.f, true}, Case{64, 6, 8, 3, true, 1.f, true},
        Case{16, 6, 4, 1, true, 1.f}, Case{1024, 16, 64, 8, true, 2.5f}}) {
    for (int64_t T : kTokensCheap) {
      Tensor logits = randn({T, c.E}, 90 + T, 2.f);
      Tensor bias = randn({c.E}, 91, 0.1f);
      if (c.ties) {
        for (int64_t i = 0; i < logits.numel(); ++i)
          logits.data<float>()[i] = 0.5f * std::round(logits.data<float>()[i]);
        for (int64_t i = 0; i < c.E; ++i) bias.data<float>()[i] = 0.f;
      }
      ops::MoeRouteParams rp{c.K, c.G, c.topk_group, c.norm, c.scale};
      Tensor ids_w = Tensor::empty({T, c.K}, DType::kI32),
             w_w = Tensor::empty({T, c.K}, DType::kF32);
      ref_.moe_route(ids_w.view(), w_w.view(), logits.view(), bias.view(), rp);
      TensorView ids = dev_->poisoned({T, c.K}, DType::kI32),
                 w = dev_->poisoned({T, c.K}, DType::kF32);
      ops_->moe_route(ids, w, dev_->to_device(logits), dev_->to_device(bias), rp);
      Tensor ids_g = dev_->to_host(ids);
      EXPECT_EQ(0, std::memcmp(ids_g.data<int32_t>(), ids_w.data<int32_t>(), ids_w.nbytes()))
          << "E " << c.E << " G " << c.G << " ties " << c.ties << " T " << T;
      EXPECT_LE(rel_error(dev_->to_host(w), w_w), kTolElementwise)
          << "E " << c.E << " G " << c.G << " ties " << c.ties << " T " << T;
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
      // Odd T: with a shared expert of another width (token-major kernels, then linear).
      const bool with_shared = T % 2 == 1;
      const int64_t Is = 40;
      Tensor sg = cast(randn({Is, D}, 400, 0.2f), dt), su = cast(randn({Is, D}, 401, 0.2f), dt),
             sd = cast(randn({D, Is}, 402, 0.2f), dt);
      const ops::ExpertWeights sh_h{sg.cview(), su.cview(), sd.cview()},
          sh_d{ConstTensorView(dev_->to_device(sg)), ConstTensorView(dev_->to_device(su)),
               ConstTensorView(dev_->to_device(sd))};
      Tensor want = Tensor::empty({T, D}, DType::kF32);
      ref_.moe_experts(want.view(), x.view(), ids_h.view(), wts.view(), ew_h,
                       with_shared ? &sh_h : nullptr);
      TensorView y = dev_->poisoned({T, D}, DType::kF32);
      ops_->moe_experts(y, dev_->to_device(x), dev_->to_device(ids_h), dev_->to_device(wts), ew_d,
                        with_shared ? &sh_d : nullptr);
      EXPECT_LE(rel_error(dev_->to_host(y), want), kTolMatmul)
          << dtype_name(dt) << " T " << T << " shared " << with_shared;
    }
  }
}

// Quantized experts at widths the grouped kernels refuse (D, I not multiples of 128, like the
// tiny quantized fixtures): the token-major kernels dequantize per element, FP8 block (partial
// edge blocks) and NVFP4, against the reference on the same quantized weights.
TEST_F(CudaOpsTest, MoeExpertsQuantizedTokenMajor) {
  const int64_t E = 6, K = 2, D = 64, I = 48;
  for (ops::WeightFormat fmt : {ops::WeightFormat::kFp8Block, ops::WeightFormat::kNvfp4}) {
    const int64_t block = fmt == ops::WeightFormat::kFp8Block ? 32 : 0;
    std::vector<QuantWeightHost> hold;
    std::vector<ops::ExpertWeights> ew_h, ew_d;
    auto as_weight = [&](const QuantWeightHost& q, ConstTensorView data, ConstTensorView scale) {
      ops::Weight w;
      w.format = fmt;
      w.data = data;
      w.scale = scale;
      if (block) w.block = block;
      w.global_scale = q.global_scale;
      return w;
    };
    for (int64_t e = 0; e < E; ++e) {
      hold.push_back(random_quant_weight({fmt, I, D, block}, 400 + e));
      hold.push_back(random_quant_weight({fmt, I, D, block}, 500 + e));
      hold.push_back(random_quant_weight({fmt, D, I, block}, 600 + e));
      const QuantWeightHost *g = &hold[hold.size() - 3], *u = g + 1, *dn = g + 2;
      ew_h.push_back({as_weight(*g, g->data.cview(), g->scale.cview()),
                      as_weight(*u, u->data.cview(), u->scale.cview()),
                      as_weight(*dn, dn->data.cview(), dn->scale.cview())});
      auto dev = [&](const QuantWeightHost& q) {
        return as_weight(q, ConstTensorView(dev_->to_device(q.data)),
                         ConstTensorView(dev_->to_device(q.scale)));
      };
      ew_d.push_back({dev(*g), dev(*u), dev(*dn)});
    }
    for (int64_t T : {1, 3, 17}) {
      Tensor x = randn({T, D}, 130 + T, 0.5f);
      std::vector<int32_t> ids(T * K);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < K; ++k) ids[t * K + k] = static_cast<int32_t>((t * 5 + k * 2) % E);
      Tensor ids_h = i32(ids, {T, K});
      Tensor wts = randn({T, K}, 140 + T);
      Tensor want = Tensor::empty({T, D}, DType::kF32);
      ref_.moe_experts(want.view(), x.view(), ids_h.view(), wts.view(), ew_h, nullptr);
      TensorView y = dev_->poisoned({T, D}, DType::kF32);
      ops_->moe_experts(y, dev_->to_device(x), dev_->to_device(ids_h), dev_->to_device(wts), ew_d,
                        nullptr);
      EXPECT_LE(rel_error(dev_->to_host(y), want), kTolMatmul)
          << "format " << static_cast<int>(fmt) << " T " << T;
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
