// Grouped routed experts (kernels/moe_grouped) against ReferenceOps on the same weights, for
// BF16, FP8 block-128 and NVFP4 experts, T = 1..8192 (odd sizes), experts without tokens, all
// tokens on one expert, every token-tile width, and the tensor-core tile GEMM (BF16). The grouped
// path rounds activations to BF16 (BF16 weights) or F16 (quantized weights), hence the 1e-2-level
// tolerance.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>

#include "backends/cuda/kernels/moe_grouped/dequant_bits.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_experts.h"
#include "backends/cuda/moe_config/moe_config.h"
#include "backends/reference/reference_ops.h"
#include "cuda_test_util.h"
#include "tensor/quant/fp8_block.h"
#include "tensor/quant/nvfp4.h"

namespace moe::cuda::testing {
namespace {

constexpr double kTolGrouped = 2e-2;  // max |err| / max |ref|, 16-bit activations
// FP8 experts on the warpgroup-MMA GEMM with E4M3 activations (GroupedLaunch::fp8_act): x and h
// each rounded to 3 mantissa bits (relative error up to 2^-4 per value, ~2.6% rms), twice.
constexpr double kTolFp8Act = 8e-2;
// The same against fp8_act_emulated (the E4M3 roundings done on the host): what is left is the
// tensor cores' FP8 accumulation (about 14 bits inside a wgmma, DeepSeek-V3 report 3.3.2; the
// kernel promotes to f32 every 128 k), f32 summation order and the rounding steps they flip.
// Max and rms (||got - emu|| / ||emu||) relative errors; measured on the H200 (2026-12-01): max
// 1.8e-3..2.8e-2, rms 2.0e-3..6.1e-3 (1.5e-2 for T 3 over 64 experts: few outputs), where the
// exact reference sees ~5e-2: a misplaced scale or row is well above these.
constexpr double kTolFp8ActEmulated = 4e-2;
constexpr double kTolFp8ActEmulatedRms = 2e-2;

// sqrt(sum (a - b)^2 / sum b^2) over two f32 tensors.
double rms_rel_error(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double d = static_cast<double>(a.data<float>()[i]) - b.data<float>()[i];
    num += d * d;
    den += static_cast<double>(b.data<float>()[i]) * b.data<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Value of an F16 (normal or zero; the test data has no subnormals, to_f16 flushes them).
float f16_value(uint16_t b) {
  const int e = (b >> 10) & 31, m = b & 1023;
  const float mag = e == 0 ? 0.f : std::ldexp(1.f + static_cast<float>(m) / 1024.f, e - 15);
  return b & 0x8000 ? -mag : mag;
}

enum class Fmt { kBf16, kFp8, kNvfp4 };
const char* name(Fmt f) { return f == Fmt::kBf16 ? "bf16" : f == Fmt::kFp8 ? "fp8" : "nvfp4"; }

// The stable grouping on the host: routed ids [T, KR] over ER experts (ids outside [0, ER) are
// left out), slots numbered t * KS + k with KS = KR + shared; each expert's slots in increasing
// slot order, experts in increasing id order, the shared expert (slot KR of every token) last.
std::vector<int32_t> host_sorted_slots(const std::vector<int32_t>& ids, int64_t T, int64_t KR,
                                       int64_t ER, bool shared) {
  const int64_t KS = KR + (shared ? 1 : 0);
  std::vector<int32_t> order;
  for (int64_t e = 0; e < ER; ++e)
    for (int64_t slot = 0; slot < T * KR; ++slot)
      if (ids[slot] == e) order.push_back(static_cast<int32_t>(slot / KR * KS + slot % KR));
  if (shared)
    for (int64_t t = 0; t < T; ++t) order.push_back(static_cast<int32_t>(t * KS + KR));
  return order;
}

// One matrix in host memory (kept alive) and its device copy.
struct Mat {
  Tensor data, scale;
  ops::Weight host, dev;
};

class MoeGroupedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MOE_GPU_OR_SKIP(ops_);
    dev_ = std::make_unique<DeviceTensors>(*ops_);
  }

  Mat make(Fmt f, int64_t N, int64_t K, uint32_t seed) {
    Tensor w = randn({N, K}, seed, 0.1f);
    Mat m;
    if (f == Fmt::kBf16) {
      m.data = cast(w, DType::kBF16);
      m.host = ops::Weight(m.data.cview());
      m.dev = ops::Weight(ConstTensorView(dev_->to_device(m.data)));
      return m;
    }
    ops::Weight h, d;
    if (f == Fmt::kFp8) {
      m.data = Tensor::empty({N, K}, DType::kF8E4M3);
      m.scale = Tensor::empty({(N + 127) / 128, (K + 127) / 128}, DType::kF32);
      quant::fp8_block_quantize(w.data<float>(), N, K, 128, m.data.data<uint8_t>(),
                                m.scale.data<float>());
      h.format = d.format = ops::WeightFormat::kFp8Block;
    } else {
      m.data = Tensor::empty({N, K / 2}, DType::kU8);
      m.scale = Tensor::empty({N, K / 16}, DType::kF8E4M3);
      float amax = 0;
      for (int64_t i = 0; i < w.numel(); ++i) amax = std::max(amax, std::fabs(w.data<float>()[i]));
      const float gs = quant::nvfp4_global_scale(amax);
      for (int64_t n = 0; n < N; ++n)
        quant::nvfp4_quantize_row(w.data<float>() + n * K, K, gs,
                                  m.data.data<uint8_t>() + n * K / 2,
                                  m.scale.data<uint8_t>() + n * K / 16);
      h.format = d.format = ops::WeightFormat::kNvfp4;
      h.global_scale = d.global_scale = gs;
    }
    h.data = m.data.cview();
    h.scale = m.scale.cview();
    d.data = ConstTensorView(dev_->to_device(m.data));
    d.scale = ConstTensorView(dev_->to_device(m.scale));
    if (scale_shift_ > 0) {  // the scales at an offset of scale_shift_ bytes (checkpoint buffers)
      const int64_t n = static_cast<int64_t>(m.scale.nbytes());
      TensorView buf = dev_->poisoned({n + 16}, DType::kU8);
      cudaStreamSynchronize(ops_->stream());  // the poison lands before the copy
      uint8_t* at = buf.data<uint8_t>() + scale_shift_;
      EXPECT_EQ(cudaMemcpy(at, m.scale.data<uint8_t>(), n, cudaMemcpyHostToDevice), cudaSuccess);
      d.scale = ConstTensorView(TensorView(at, m.scale.dtype(), m.scale.shape(), Device::kCuda));
    }
    m.host = h;
    m.dev = d;
    return m;
  }

  // ids: kRandom (distinct experts per token), kOne (every slot on expert `one` when K == 1,
  // else experts one..one+K-1 for every token).
  enum class Routing { kRandom, kOne };

  // The 2-CTA pair kernels' cases (GroupedLaunch::wgmma_pairs, bf16_ws 2; I % 256 == 0, D % 512
  // == 0): chunks of 129..256 tokens (both halves, even and odd n-blocks), lone chunks of <= 128
  // (each CTA its own n-blocks), experts of exactly 256 (T 256, K 1 on one expert) and 256 + 128
  // tokens (T 384, K 2 on two experts), several chunks per expert (T 700), empty experts, several
  // items per cluster.
  struct PairCase {
    int64_t T, D, I, E, K;
    Routing r;
  };
  static constexpr PairCase kPairCases[] = {
      {300, 512, 256, 8, 2, Routing::kRandom},   {1000, 512, 256, 64, 3, Routing::kRandom},
      {77, 1024, 512, 8, 3, Routing::kOne},      {256, 512, 256, 8, 1, Routing::kOne},
      {384, 512, 256, 8, 2, Routing::kOne},      {700, 512, 256, 4, 2, Routing::kOne},
      {2500, 1024, 256, 16, 2, Routing::kRandom}};

  // A case of the FP8 warpgroup-MMA bit-identity tests (FusedHQuant, DownActivationsByTma,
  // GateUpActivationsByPosition): shape, routing, base launch, and which kernel runs it (TMA
  // weights, warp-specialized, 2-CTA pairs, narrow instance).
  struct WgmmaCase {
    const char* what;
    int64_t T, D, I, E, K;
    Routing r;
    GroupedLaunch l;
    bool tma, ws, pairs;
    int narrow;
    GroupedLaunch launch() const {
      GroupedLaunch x = l;
      x.wgmma_tma = tma;
      x.wgmma_ws = ws;
      x.wgmma_pairs = pairs;
      x.wgmma_narrow = narrow;
      return x;
    }
  };

  // The cases of the activations-by-TMA bit-identity tests (DownActivationsByTma,
  // GateUpActivationsByPosition): the warp-specialized kernel (whole and narrow tiles), the 2-CTA
  // pairs and the hybrid's big tiles; T * K not a multiple of 128, one expert holding everything,
  // empty experts, h's codes from gate_up's epilogue and from moe_quant_rows ("rows").
  static std::vector<WgmmaCase> act_tma_cases() {
    const GroupedLaunch tc{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
    const GroupedLaunch hy{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};
    GroupedLaunch tc_rows = tc, hy_rows = hy;  // h quantized by moe_quant_rows
    tc_rows.wgmma_hquant = hy_rows.wgmma_hquant = false;
    return {
        {"ws", 400, 768, 512, 4, 2, Routing::kRandom, tc, true, true, false, 0},
        {"ws, h by moe_quant_rows", 400, 768, 512, 4, 2, Routing::kRandom, tc_rows, true, true,
         false, 0},
        {"ws narrow", 300, 256, 128, 8, 2, Routing::kRandom, tc, true, true, false, 1},
        {"ws, one expert", 77, 512, 256, 8, 3, Routing::kOne, tc, true, true, false, 0},
        {"ws, many experts", 1000, 256, 128, 64, 3, Routing::kRandom, tc, true, true, false, 0},
        {"pairs", 700, 512, 256, 4, 2, Routing::kOne, tc, true, false, true, 0},
        {"pairs narrow", 1000, 512, 256, 64, 3, Routing::kRandom, tc, true, false, true, 1},
        {"pairs, odd chunks", 2500, 1024, 256, 16, 2, Routing::kRandom, tc, true, false, true, 0},
        {"hybrid ws", 300, 384, 256, 8, 2, Routing::kRandom, hy, true, true, false, 0},
        {"hybrid ws narrow", 200, 256, 128, 8, 2, Routing::kOne, hy, true, true, false, 1},
        {"hybrid ws, h by moe_quant_rows", 300, 384, 256, 8, 2, Routing::kRandom, hy_rows, true,
         true, false, 0}};
  }

  // The two launches of the activations-by-TMA tests: the producers' gather, and the TMA boxes
  // (down's h, gate_up's x by position where the launch takes it).
  static std::pair<GroupedLaunch, GroupedLaunch> gather_and_boxes(GroupedLaunch l) {
    l.down_act_tma = false;
    l.x_pos = 0;
    GroupedLaunch boxes = l;
    boxes.down_act_tma = true;
    boxes.x_pos = 1;
    return {l, boxes};
  }

  // The shared expert run alone by CudaOps (300 tokens, above moe_shared_fold_max_tokens, 2 I =
  // 1024 wide, prepared weights): one expert on every token's only slot, so gate_up maps x's codes
  // in place (a call by position without a copy), within the reference's tolerance (check). The
  // routed call (75 tokens per expert) keeps the gather. Returns how the counts moved.
  GroupedXPosCounts shared_alone_counts(Fmt f) {
    shared_ = 2;
    prepare_ = true;
    const GroupedXPosCounts before = grouped_x_pos_counts();
    check(f, 300, 512, 512, 8, 2);
    const GroupedXPosCounts after = grouped_x_pos_counts();
    prepare_ = false;
    shared_ = 0;
    return {after.calls - before.calls, after.copies - before.copies,
            after.f4_down - before.f4_down};
  }

  // Returns y (host) for comparisons between launches.
  Tensor check(Fmt f, int64_t T, int64_t D, int64_t I, int64_t E, int64_t K,
               Routing r = Routing::kRandom, std::optional<GroupedLaunch> launch = std::nullopt) {
    std::vector<Mat> mats;
    std::vector<ops::ExpertWeights> ew_h, ew_d;
    mats.reserve(3 * E);
    for (int64_t e = 0; e < E; ++e) {
      mats.push_back(make(f, I, D, 1000 + 3 * e));
      mats.push_back(make(f, I, D, 1001 + 3 * e));
      mats.push_back(make(f, D, I, 1002 + 3 * e));
      ew_h.push_back({mats[3 * e].host, mats[3 * e + 1].host, mats[3 * e + 2].host});
      ew_d.push_back({mats[3 * e].dev, mats[3 * e + 1].dev, mats[3 * e + 2].dev});
    }
    // shared_ > 0: a shared expert of intermediate size shared_ * I (1: rides along in the grouped
    // kernels as expert E; else CudaOps runs it through linear).
    ops::ExpertWeights sh_h, sh_d;
    if (shared_ > 0) {
      for (int64_t i = 0; i < 3; ++i)
        mats.push_back(i < 2 ? make(f, shared_ * I, D, 5000 + i) : make(f, D, shared_ * I, 5002));
      sh_h = {mats[3 * E].host, mats[3 * E + 1].host, mats[3 * E + 2].host};
      sh_d = {mats[3 * E].dev, mats[3 * E + 1].dev, mats[3 * E + 2].dev};
    }
    const ops::ExpertWeights* shd = shared_ > 0 ? &sh_d : nullptr;
    if (prepare_) {  // CudaOps::prepare_experts: the grouped path's experts packed in place
      GroupedExperts ge;
      std::string why;
      const bool grouped = resolve_grouped_experts(ew_d, D, &ge, &why);
      GroupedExperts gs;
      const bool shared_grouped =
          grouped && shd && resolve_grouped_shared_alone(*shd, D, &gs, &why);
      ops_->prepare_experts(ew_d, shared_ > 0 ? &sh_d : nullptr, D);
      const ops::WeightLayout want_layout =
          grouped ? ops::WeightLayout::kPacked : ops::WeightLayout::kRowMajor;
      for (const ops::ExpertWeights& ew : ew_d)
        for (const ops::Weight* w : {&ew.gate, &ew.up, &ew.down})
          EXPECT_EQ(w->layout, want_layout) << name(f);
      // FP8: tensor maps of the packed table for the warpgroup-MMA GEMM (none for the others).
      GroupedExperts packed;
      if (grouped && resolve_grouped_experts(ew_d, D, &packed, &why)) {
        EXPECT_EQ(ops_->expert_tmaps(packed) != nullptr, f == Fmt::kFp8 || f == Fmt::kBf16)
            << name(f);
      }
      if (shd) {  // packed when the grouped kernels run it (with the routed experts or alone)
        for (const ops::Weight* w : {&sh_d.gate, &sh_d.up, &sh_d.down}) {
          EXPECT_EQ(w->layout,
                    shared_grouped ? ops::WeightLayout::kPacked : ops::WeightLayout::kRowMajor)
              << name(f) << " shared " << shared_;
        }
      }
    }
    Tensor x = randn({T, D}, 7 + T);
    std::vector<int32_t> ids(T * K);
    std::mt19937 rng(T * 31 + E);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<int32_t> all(E);
      std::iota(all.begin(), all.end(), 0);
      if (r == Routing::kRandom) std::shuffle(all.begin(), all.end(), rng);
      for (int64_t k = 0; k < K; ++k)
        ids[t * K + k] = r == Routing::kOne ? (E / 2 + k) % E : all[k];
    }
    Tensor ids_h = i32(ids, {T, K});
    Tensor wts = randn({T, K}, 9 + T, 0.5f);
    Tensor want = Tensor::empty({T, D}, DType::kF32);
    ref_.moe_experts(want.view(), x.view(), ids_h.view(), wts.view(), ew_h,
                     shared_ > 0 ? &sh_h : nullptr);
    TensorView y = dev_->poisoned({T, D}, DType::kF32);
    // bad_every_ > 0: every bad_every_-th token gets an expert id outside [0, E) on the device
    // (-1 or E, at k = t % K): its row must come out NaN, the other rows as the reference.
    std::vector<bool> bad(T, false);
    std::vector<int32_t> ids_dev = ids;
    if (bad_every_ > 0)
      for (int64_t t = 0; t < T; t += bad_every_) {
        bad[t] = true;
        ids_dev[t * K + t % K] = (t / bad_every_) % 2 ? static_cast<int32_t>(E) : -1;
      }
    TensorView xd = dev_->to_device(x), idd = dev_->to_device(i32(ids_dev, {T, K})),
               wd = dev_->to_device(wts);
    if (!launch) {
      ops_->set_moe_fp8_activations(!f16_act_);
      ops_->moe_experts(y, xd, idd, wd, ew_d, shd);
    } else {  // an explicit launch (tile width, kernel) through the launcher
      auto ge = std::make_unique<GroupedExperts>();
      std::string why;
      EXPECT_TRUE(resolve_grouped_experts(ew_d, D, ge.get(), &why)) << why;
      if (!why.empty()) return Tensor();
      if (shd) {
        EXPECT_TRUE(add_grouped_shared_expert(*shd, ge.get(), &why)) << why;
        if (!why.empty()) return Tensor();
      }
      GroupedLaunch l = *launch;
      // Weight tiles by TMA (FP8 warpgroup-MMA GEMM with FP8 activations): the tensor maps in
      // device memory.
      // BF16: with GroupedLaunch::bf16_tma.
      if (l.wgmma_tma && (l.wgmma || l.wgmma_min_tokens > 0) &&
          ((f == Fmt::kFp8 && l.fp8_act) || (f == Fmt::kBf16 && l.bf16_tma))) {
        ge->tmaps = upload_grouped_tmaps(
            *ge,
            [&](size_t n) {
              TensorView d = dev_->poisoned({static_cast<int64_t>(n)}, DType::kU8);
              cudaStreamSynchronize(ops_->stream());  // the poison lands before the maps
              return static_cast<void*>(d.data<uint8_t>());
            },
            &why);
        EXPECT_NE(ge->tmaps, nullptr) << why;
        if (ge->tmaps == nullptr) return Tensor();
      }
      // sm_override_: a smaller grid than the device's (other stream-K splits).
      l.sm_count = sm_override_ > 0 ? sm_override_ : ops_->device().sm_count;
      // The device's kernels (the bulk-copy ring from sm_90) as moe_launch would choose them.
      if (l.cc == 0) l.cc = ops_->device().cc_major * 10 + ops_->device().cc_minor;
      const int64_t KS = ge->slots(K), TK = T * KS;  // slots: the shared expert's last
      GroupedScratch s;
      s.xa = dev_->poisoned({T, D}, DType::kF32).raw();  // f32 poison is big enough for 16-bit
      s.sorted_slot = dev_->poisoned({TK}, DType::kI32).data<int32_t>();
      s.tiles = dev_->poisoned({grouped_max_tiles(T, KS, ge->E, 8 * l.nb), 4}, DType::kI32)
                    .data<int32_t>();
      s.num_tiles = dev_->poisoned({3}, DType::kI32).data<int32_t>();
      s.h = dev_->poisoned({TK, I}, DType::kF32).raw();
      s.out = dev_->poisoned({TK, D}, DType::kF32).data<float>();
      s.slot_w = dev_->poisoned({TK}, DType::kF32).data<float>();
      if (const int64_t qb = grouped_fp8_act_bytes(l, ge->fmt, T, D, I, KS); qb > 0)
        s.q = static_cast<uint8_t*>(dev_->poisoned({(qb + 3) / 4}, DType::kF32).raw());
      const GroupedSkSizes sk = grouped_sk_sizes(l);
      if (sk.warps > 0) {  // poisoned: the group kernel must zero the counters
        s.sk_counters = dev_->poisoned({sk.counters()}, DType::kI32).data<int32_t>();
        s.sk_partials = dev_->poisoned({sk.partial_floats}, DType::kF32).data<float>();
      }
      run_grouped_experts(*ge, y.data<float>(), D, xd.data<float>(), D, idd.data<int32_t>(), K,
                          wd.data<float>(), K, T, K, s, l, ops_->stream());
      claims_[0] = claims_[1] = -1;
      if (sk.warps > 0) {
        const Tensor claims = dev_->to_host(
            TensorView(s.sk_counters + 2 * sk.warps, DType::kI32, {2}, Device::kCuda));
        claims_[0] = claims.data<int32_t>()[0];
        claims_[1] = claims.data<int32_t>()[1];
      }
      // Grouping is stable: each expert's slots in increasing slot order (no atomics order),
      // experts in increasing id order (the shared expert E last, slot K of every token); slots
      // with bad ids are left out.
      const std::vector<int32_t> want_order = host_sorted_slots(ids_dev, T, K, E, shd != nullptr);
      const Tensor order =
          dev_->to_host(TensorView(s.sorted_slot, DType::kI32, {TK}, Device::kCuda));
      EXPECT_TRUE(std::equal(want_order.begin(), want_order.end(), order.data<int32_t>()))
          << name(f) << " T " << T << ": sorted_slot is not the stable order";
    }
    Tensor got = dev_->to_host(y);
    if (bad_every_ > 0) {  // bad rows: all NaN, then excluded from the comparison
      int64_t not_nan = 0;
      for (int64_t t = 0; t < T; ++t)
        if (bad[t])
          for (int64_t d = 0; d < D; ++d) {
            not_nan += !std::isnan(got.data<float>()[t * D + d]);
            got.data<float>()[t * D + d] = want.data<float>()[t * D + d];
          }
      EXPECT_EQ(not_nan, 0) << name(f) << " T " << T << ": rows of bad expert ids not NaN";
    }
    const double err = rel_error(got, want);
    std::ostringstream how;
    if (launch)
      how << " nb " << launch->nb << " pipelined " << launch->pipelined << " tc " << launch->tc
          << " wgmma " << launch->wgmma << " hybrid " << launch->wgmma_min_tokens << " r2 "
          << launch->pipe_r2 << " two-step " << launch->pipe_two_step << " warps "
          << launch->warps_per_cta << " ctas " << launch->ctas_per_sm << " sms " << sm_override_;
    // E4M3 activations where the warpgroup-MMA GEMM may run FP8 experts (explicit launch, or
    // the heuristic's at T tokens; folded or apart, the shared expert's call counts too).
    const GroupedFmt gf = f == Fmt::kBf16  ? GroupedFmt::kBf16
                          : f == Fmt::kFp8 ? GroupedFmt::kFp8Block
                                           : GroupedFmt::kNvfp4;
    const MoeDeviceLimits lim = moe_limits(ops_->device());
    GroupedLaunch used =
        launch ? *launch
               : moe_launch(moe_heuristic_config({T, D, I, E, K, gf}, lim), lim, gf, T, E, I);
    if (!launch && f16_act_) used.fp8_act = false;  // CudaOps::set_moe_fp8_activations(false)
    const bool f8 = grouped_fp8_act_bytes(used, gf, T, D, I, K) > 0 ||
                    (shared_ > 0 && !launch && !f16_act_ && gf == GroupedFmt::kFp8Block &&
                     T > moe_shared_fold_max_tokens(gf));
    if (f8) max_f8_err_ = std::max(max_f8_err_, err);
    EXPECT_LE(err, f8 ? kTolFp8Act : kTolGrouped)
        << name(f) << " T " << T << " D " << D << " I " << I << " E " << E << " K " << K
        << " shared " << shared_ << " fp8 activations " << f8 << how.str();
    // Every expert on the E4M3 kernel (tc launch): also against the host emulation of its
    // roundings, at a tolerance that a misplaced scale or row cannot pass.
    if (f8 && launch && launch->wgmma && shared_ == 0 && bad_every_ == 0 && scale_shift_ == 0) {
      const Tensor emu = fp8_act_emulated(x, ids, wts, mats, T, D, I, K);
      const double e8 = rel_error(got, emu), r8 = rms_rel_error(got, emu);
      max_f8_emulated_err_ = std::max(max_f8_emulated_err_, e8);
      max_f8_emulated_rms_ = std::max(max_f8_emulated_rms_, r8);
      ++f8_emulated_checks_;
      std::printf("fp8 emulation T %ld D %ld I %ld E %ld K %ld: max %.2e rms %.2e\n",
                  static_cast<long>(T), static_cast<long>(D), static_cast<long>(I),
                  static_cast<long>(E), static_cast<long>(K), e8, r8);
      EXPECT_LE(e8, kTolFp8ActEmulated)
          << "fp8 T " << T << " D " << D << " I " << I << " E " << E << " K " << K << how.str();
      EXPECT_LE(r8, kTolFp8ActEmulatedRms)
          << "fp8 T " << T << " D " << D << " I " << I << " E " << E << " K " << K << how.str();
    }
    return got;
  }

  // NVFP4 weights as the E4M3 kernel computes them (GroupedLaunch::nvfp4_f8): value * block scale
  // * 2^-3 (exact in f32) rounded to E4M3, times 8 * global scale.
  static void nvfp4_as_e4m3_row(const uint8_t* codes, const uint8_t* scale, float gs, int64_t K,
                                float* out) {
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t c = k % 2 ? codes[k / 2] >> 4 : codes[k / 2] & 0xF;
      const float v = quant::e2m1_to_f32(c) * quant::fp8_e4m3_to_f32(scale[k / 16]) * 0.125f;
      out[k] = quant::fp8_e4m3_to_f32(quant::f32_to_fp8_e4m3(v)) * 8.f * gs;
    }
  }

  // What the FP8-activation path computes, on the host (every expert on the E4M3 kernel, no
  // shared expert): x rows to E4M3 per 128 k (quant::fp8_block_quantize), gate / up with the
  // dequantized FP8 weights (NVFP4: nvfp4_as_e4m3_row; f64 sums), h = silu(g) * u rounded to F16
  // (saturated) and then to E4M3 per 128 k, down, y = sum of weight * out over a token's slots.
  static Tensor fp8_act_emulated(const Tensor& x, const std::vector<int32_t>& ids,
                                 const Tensor& wts, const std::vector<Mat>& mats, int64_t T,
                                 int64_t D, int64_t I, int64_t K) {
    auto deq = [](const Mat& m, int64_t N, int64_t Kd) {
      std::vector<float> w(N * Kd);
      if (m.host.format == ops::WeightFormat::kNvfp4) {  // NVFP4 computed in FP8
        for (int64_t n = 0; n < N; ++n)
          nvfp4_as_e4m3_row(m.data.data<uint8_t>() + n * Kd / 2,
                            m.scale.data<uint8_t>() + n * Kd / 16, m.host.global_scale, Kd,
                            w.data() + n * Kd);
        return w;
      }
      for (int64_t n = 0; n < N; ++n)
        quant::fp8_block_dequantize_row(m.data.data<uint8_t>() + n * Kd,
                                        m.scale.data<float>() + (n / 128) * ((Kd + 127) / 128), Kd,
                                        128, w.data() + n * Kd);
      return w;
    };
    auto e4m3 = [](const float* v, int64_t n, float* out) {  // per 128: codes, back to f32
      std::vector<uint8_t> q(n);
      std::vector<float> sc(n / 128);
      quant::fp8_act_block_quantize(v, 1, n, 128, q.data(), sc.data());
      quant::fp8_block_dequantize_row(q.data(), sc.data(), n, 128, out);
    };
    const int64_t E = static_cast<int64_t>(mats.size()) / 3;
    std::vector<std::vector<float>> wg, wu, wd;
    for (int64_t e = 0; e < E; ++e) {
      wg.push_back(deq(mats[3 * e], I, D));
      wu.push_back(deq(mats[3 * e + 1], I, D));
      wd.push_back(deq(mats[3 * e + 2], D, I));
    }
    Tensor y = Tensor::empty({T, D}, DType::kF32);
    std::vector<float> xd(D), h(I), hd(I);
    for (int64_t t = 0; t < T; ++t) {
      float* yt = y.data<float>() + t * D;
      std::fill(yt, yt + D, 0.f);
      e4m3(x.data<float>() + t * D, D, xd.data());
      for (int64_t k = 0; k < K; ++k) {
        const int32_t e = ids[t * K + k];
        for (int64_t i = 0; i < I; ++i) {
          double g = 0, u = 0;
          for (int64_t d = 0; d < D; ++d) {
            g += static_cast<double>(xd[d]) * wg[e][i * D + d];
            u += static_cast<double>(xd[d]) * wu[e][i * D + d];
          }
          const float hv =
              std::clamp(static_cast<float>(g / (1.0 + std::exp(-g)) * u), -65504.f, 65504.f);
          h[i] = f16_value(to_f16(hv));
        }
        e4m3(h.data(), I, hd.data());
        const float w = wts.data<float>()[t * K + k];
        for (int64_t d = 0; d < D; ++d) {
          double o = 0;
          for (int64_t i = 0; i < I; ++i) o += static_cast<double>(hd[i]) * wd[e][d * I + i];
          yt[d] += w * static_cast<float>(o);
        }
      }
    }
    return y;
  }

  int sm_override_ = 0;
  // After a check with an explicit launch: the claims gate_up and down made from their claim
  // counters (GroupedLaunch::ring_dynamic; 0: fixed shares; -1: the launch has no counters).
  int32_t claims_[2] = {-1, -1};
  int64_t bad_every_ = 0;
  double max_f8_err_ = 0;           // largest error of the checks with FP8 activations
  double max_f8_emulated_err_ = 0;  // the same against fp8_act_emulated
  double max_f8_emulated_rms_ = 0;
  int f8_emulated_checks_ = 0;
  bool prepare_ = false;
  int64_t scale_shift_ = 0;  // make(): device scales at this byte offset (0: aligned uploads)
  int64_t shared_ = 0;       // shared expert of shared_ * I (0: none)
  bool f16_act_ = false;     // CudaOps::set_moe_fp8_activations(false) for the CudaOps calls

  ThreadPool pool_{8};
  reference::ReferenceOps ref_{pool_};
  std::unique_ptr<CudaOps> ops_;
  std::unique_ptr<DeviceTensors> dev_;
};

const Fmt kFmts[] = {Fmt::kBf16, Fmt::kFp8, Fmt::kNvfp4};
// A grouping call's inputs (launch_moe_group): x [T, D] f32, ids [T, ids_stride] over E experts, K
// slots per token, activations of format f; the caller adds its outputs.
MoeGroupParams group_inputs(const TensorView& x, const TensorView& ids, int64_t ids_stride,
                            int64_t T, int64_t D, int64_t K, int64_t E, GroupedFmt f) {
  MoeGroupParams gp;
  gp.x = x.data<float>();
  gp.x_stride = D;
  gp.ids = ids.data<int32_t>();
  gp.ids_stride = ids_stride;
  gp.T = T, gp.D = D, gp.K = K, gp.E = E;
  gp.fmt = static_cast<int>(f);
  return gp;
}

using Launch = GroupedLaunch;  // check(..., Launch{.nb = 2, ...}): an explicit launch

// Elements of two f32 tensors whose bits differ (-1: different sizes).
int64_t differing_floats(const Tensor& a, const Tensor& b) {
  if (a.numel() != b.numel()) return -1;
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    n += std::memcmp(a.data<float>() + i, b.data<float>() + i, sizeof(float)) != 0;
  return n;
}

TEST_F(MoeGroupedTest, RandomRoutingOverTokenCounts) {
  for (Fmt f : kFmts)
    for (int64_t T : {1, 2, 3, 5, 8, 16, 33, 64, 127, 257, 1000})
      check(f, T, /*D=*/256, /*I=*/128, /*E=*/16, /*K=*/4);
}

TEST_F(MoeGroupedTest, LargeBatch) {
  for (Fmt f : kFmts) {
    check(f, 4096, 128, 128, 8, 2);
    check(f, 8192, 128, 128, 8, 2);
  }
}

TEST_F(MoeGroupedTest, ExpertsWithoutTokensAndAllOnOne) {
  for (Fmt f : kFmts) {
    check(f, 3, 256, 128, 64, 2);                  // most experts get nothing
    check(f, 1, 128, 256, 128, 8);                 // T = 1, wide top-k
    check(f, 300, 128, 128, 8, 1, Routing::kOne);  // all tokens on one expert
    check(f, 77, 128, 128, 8, 3, Routing::kOne);   // every token on the same 3
  }
}

TEST_F(MoeGroupedTest, EveryTileWidth) {
  for (Fmt f : kFmts)
    for (int nb : {1, 2, 4, 8})
      for (bool pipe : {false, true}) {
        if (nb == 8 && f != Fmt::kBf16) continue;
        check(f, 45, 384, 256, 8, 4, Routing::kRandom, Launch{.nb = nb, .pipelined = pipe});
        check(f, 200, 128, 128, 4, 2, Routing::kOne, Launch{.nb = nb, .pipelined = pipe});
        check(f, 9, 640, 384, 8, 2, Routing::kRandom,
              Launch{.nb = nb, .pipelined = pipe});  // remainder k-steps
      }
}

// GroupedLaunch::act_transpose moves where x's 16-bit copy and h keep each 8-activation chunk
// (act_index_t) and which chunk each load reads, not a sum: the same bits as natural order, for
// the NVFP4 ring (1, 2, 4 token columns; whole and split items; items of two sub-blocks), the
// register-streaming kernel, both weight layouts, and the hybrid (big tiles on x's E4M3 codes, or
// on its transposed 16-bit copy, split along k or not).
TEST_F(MoeGroupedTest, ChunkTransposedActivationsAreBitIdentical) {
  // Floats of the NVFP4 layer that differ between launch l in natural and in transposed order.
  auto differ = [&](Launch l, int64_t T, int64_t D, int64_t I, int64_t E, int64_t K, Routing r) {
    l.act_transpose = false;
    const Tensor ya = check(Fmt::kNvfp4, T, D, I, E, K, r, l);
    l.act_transpose = true;
    const Tensor yb = check(Fmt::kNvfp4, T, D, I, E, K, r, l);
    return differing_floats(ya, yb);
  };
  for (bool prep : {false, true}) {
    prepare_ = prep;
    for (int nb : {1, 2, 4})
      for (bool pipe : {true, false})
        for (int64_t T : {5, 300})
          EXPECT_EQ(
              differ(Launch{.nb = nb, .pipelined = pipe}, T, 384, 256, 16, 4, Routing::kRandom), 0)
              << "packed " << prep << " nb " << nb << " pipelined " << pipe << " T " << T;
    if (prep) {  // items of two sub-blocks (GroupedLaunch::pipe_r2) with 8-token tiles
      Launch l{.nb = 1, .pipelined = true};
      l.pipe_r2 = 1;
      EXPECT_EQ(differ(l, 300, 384, 256, 16, 4, Routing::kRandom), 0) << "r2";
    }
  }
  prepare_ = false;
  if (ops_->device().cc_major == 9 && ops_->device().cc_minor == 0) {
    prepare_ = true;
    for (int64_t T : {60, 200}) {
      Launch l{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};
      l.nvfp4_f8 = true;
      l.wgmma_ws = true;
      EXPECT_EQ(differ(l, T, 512, 640, 8, 2, Routing::kOne), 0) << "hybrid T " << T;
      // the hybrid on F16 activations: its gate_up reads the transposed 16-bit x
      EXPECT_EQ(differ(Launch{.nb = 2, .wgmma_min_tokens = 40}, T, 512, 640, 8, 2, Routing::kOne),
                0)
          << "F16 hybrid T " << T;
    }
    // ... with gate_up split along k (experts of I <= 512: grouped_hybrid_split_k)
    EXPECT_EQ(differ(Launch{.nb = 2, .wgmma_min_tokens = 40}, 100, 2048, 128, 2, 2, Routing::kOne),
              0)
        << "F16 hybrid, split-K";
    prepare_ = false;
  }
}

// The pipelined kernel's loader runs ahead across a warp's items (other experts, other rows):
// enough tokens that every warp takes several items of both GEMMs.
TEST_F(MoeGroupedTest, PipelinedAcrossItems) {
  for (Fmt f : kFmts)
    for (int nb : {1, 2, 4}) {
      check(f, 1500, 256, 256, 8, 2, Routing::kRandom, Launch{.nb = nb, .pipelined = true});
      check(f, 700, 384, 128, 16, 4, Routing::kRandom, Launch{.nb = nb, .pipelined = true});
    }
  // Items of two sub-blocks (NVFP4, 8-token tiles), and of one where the choice would be two.
  for (int r2 : {0, 1}) {
    const Launch l{.nb = 1, .pipelined = true, .pipe_r2 = r2};
    check(Fmt::kNvfp4, 1500, 256, 256, 8, 2, Routing::kRandom, l);
    check(Fmt::kNvfp4, 700, 384, 128, 16, 4, Routing::kRandom, l);
  }
  // Packed NVFP4 with items of one sub-block: stages of two k-steps and of one (D 384: 3 k-steps,
  // a one-step stage at every item's end).
  prepare_ = true;
  for (bool two : {true, false}) {
    const Launch l{.nb = 1, .pipelined = true, .pipe_r2 = 0, .pipe_two_step = two};
    check(Fmt::kNvfp4, 1500, 256, 256, 8, 2, Routing::kRandom, l);
    check(Fmt::kNvfp4, 700, 384, 128, 16, 4, Routing::kRandom, l);
  }
  prepare_ = false;
}

// Stream-K in the pipelined kernel: the last n_items % W items are cut into k-ranges over all W
// warps. Grids of 1 to 208 warps against item counts of 16 to a few hundred give every case:
// whole rounds only (W = 1), items split between 2 and 8 warps, ranges covering several items,
// split items at both ends of a range, and warps without work. Split items are summed in warp
// order by whichever contributor arrives last, so two runs agree bit for bit.
TEST_F(MoeGroupedTest, StreamKSplitsItemsBetweenWarps) {
  struct Grid {
    int sms, ctas, warps;
  };
  // NVFP4 with 8-token tiles three times: items of one and of two sub-blocks (pipe_r2), and
  // packed weights (prepare_experts) with items of one sub-block: stages of two k-steps
  // (pipe_two_step), the split items' ranges of odd and even length.
  struct Items {
    int nb, r2;
    bool packed = false;
  };
  for (Fmt f : kFmts)
    for (auto [nb, r2, packed] : {Items{1, 0}, Items{1, 1}, Items{2, 0}, Items{1, 0, true}})
      for (Grid gr : {Grid{1, 1, 1}, Grid{3, 1, 2}, Grid{7, 2, 4}, Grid{13, 2, 8}}) {
        if ((r2 == 1 || packed) && f != Fmt::kNvfp4) continue;
        prepare_ = packed;
        sm_override_ = gr.sms;
        const Launch l{.nb = nb,
                       .warps_per_cta = gr.warps,
                       .ctas_per_sm = gr.ctas,
                       .pipelined = true,
                       .pipe_r2 = r2};
        const Tensor a = check(f, 1, 1024, 256, 8, 2, Routing::kRandom, l);
        check(f, 45, 384, 256, 8, 4, Routing::kRandom, l);
        check(f, 300, 640, 384, 4, 2, Routing::kRandom, l);
        check(f, 3, 256, 128, 64, 2, Routing::kRandom, l);  // most experts empty
        const Tensor b = check(f, 1, 1024, 256, 8, 2, Routing::kRandom, l);
        ASSERT_EQ(a.numel(), b.numel());
        EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), a.nbytes()), 0)
            << name(f) << " nb " << nb << " r2 " << r2 << " packed " << packed << " sms " << gr.sms
            << ": two runs differ";
      }
  sm_override_ = 0;
  prepare_ = false;
}

// GroupedLaunch::ring_dynamic: the ring's warps claim whole items and then pieces of the last
// items from a counter (StreamKDyn). On a small grid (6 warps) every GEMM here has 12 rounds of
// items of 16 k-steps, so with packed weights (two-step stages, 8-token tiles) both take the
// dynamic split: the reference's numbers, the same bits in two runs (pieces are added in piece
// order whichever warp computed them). With items of two sub-blocks or 16-token tiles (no
// dynamic instance) the flag leaves the fixed shares. StreamKSmall has a case for the
// sanitizers.
TEST_F(MoeGroupedTest, DynamicSplitMatchesTheReference) {
  prepare_ = true;
  sm_override_ = 3;
  for (auto [nb, r2] : {std::pair{1, 0}, std::pair{1, 1}, std::pair{2, 0}}) {
    Launch l{.nb = nb, .warps_per_cta = 2, .ctas_per_sm = 1, .pipelined = true, .pipe_r2 = r2};
    l.ring_dynamic = true;
    const Tensor a = check(Fmt::kNvfp4, 20, 2048, 2048, 8, 2, Routing::kRandom, l);
    if (nb == 1 && r2 == 0) {  // both GEMMs claimed their chunks (else fixed shares: no claims)
      EXPECT_GT(claims_[0], 0) << "nb " << nb;
      EXPECT_GT(claims_[1], 0) << "nb " << nb;
    } else {
      EXPECT_EQ(claims_[0], 0);
      EXPECT_EQ(claims_[1], 0);
    }
    check(Fmt::kNvfp4, 37, 2048, 2048, 4, 3, Routing::kRandom, l);
    const Tensor b = check(Fmt::kNvfp4, 20, 2048, 2048, 8, 2, Routing::kRandom, l);
    ASSERT_EQ(a.numel(), b.numel());
    EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), a.nbytes()), 0)
        << "nb " << nb << " r2 " << r2 << ": two runs differ";
  }
  sm_override_ = 0;
  prepare_ = false;
}

// The ring's stream-K arrival (add_partials: the warp barrier, then lane 0's acq_rel atomic;
// session 58) is all that orders a contributor's partial sums before the last arrival reads them:
// a stale read would change the sums from one run to the next. Cases split across many warps
// (7 SMs), each run 8 times: every run matches the reference (check) and the first run's bits.
TEST_F(MoeGroupedTest, StreamKRepeatsAreBitIdentical) {
  sm_override_ = 7;
  const Launch l{.nb = 1, .warps_per_cta = 4, .ctas_per_sm = 2, .pipelined = true};
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (Fmt f : kFmts) {
      if (packed && f != Fmt::kNvfp4) continue;
      for (int64_t T : {1, 45}) {
        const Tensor a = check(f, T, 1024, 256, 8, 4, Routing::kRandom, l);
        for (int rep = 1; rep < 8; ++rep) {
          const Tensor b = check(f, T, 1024, 256, 8, 4, Routing::kRandom, l);
          EXPECT_EQ(differing_floats(a, b), 0)
              << name(f) << " T " << T << " packed " << packed << " run " << rep;
        }
      }
    }
  }
  prepare_ = false;
  sm_override_ = 0;
}

// Small stream-K cases for compute-sanitizer (scripts/gpu-test.sh runs memcheck and racecheck
// on this test): split items at both ends of warp ranges, partial sums and counters; packed
// NVFP4 (prepare_experts) runs the ring's two-step stages (8-token tiles; and one-step ones
// forced) and, with 16-token tiles, the bulk-copy ring on sm_90.
TEST_F(MoeGroupedTest, StreamKSmall) {
  sm_override_ = 7;
  const Launch l{.nb = 1, .warps_per_cta = 4, .ctas_per_sm = 2, .pipelined = true};
  for (Fmt f : kFmts) {
    check(f, 1, 1024, 256, 8, 2, Routing::kRandom, l);
    check(f, 45, 384, 256, 8, 4, Routing::kRandom, l);
  }
  prepare_ = true;  // packed: stages of two k-steps, then of one
  check(Fmt::kNvfp4, 1, 1024, 256, 8, 2, Routing::kRandom, l);
  check(Fmt::kNvfp4, 45, 384, 256, 8, 4, Routing::kRandom, l);
  Launch one = l;
  one.pipe_two_step = false;
  check(Fmt::kNvfp4, 45, 384, 256, 8, 4, Routing::kRandom, one);
  // Items of two sub-blocks, packed and row-major.
  Launch r2 = l;
  r2.pipe_r2 = 1;
  check(Fmt::kNvfp4, 45, 384, 256, 8, 4, Routing::kRandom, r2);
  prepare_ = false;
  check(Fmt::kNvfp4, 45, 384, 256, 8, 4, Routing::kRandom, r2);
  prepare_ = true;
  Launch l2 = l;
  l2.nb = 2;
  check(Fmt::kNvfp4, 45, 384, 256, 8, 4, Routing::kRandom, l2);
  // The dynamic split (GroupedLaunch::ring_dynamic) on one SM (8 warps): gate_up's items of 16
  // k-steps make 12+ rounds; down's (I 256: 2 steps) stay static.
  sm_override_ = 1;
  Launch dyn = l;
  dyn.ring_dynamic = true;
  check(Fmt::kNvfp4, 45, 2048, 256, 8, 4, Routing::kRandom, dyn);
  EXPECT_GT(claims_[0], 0) << "gate_up did not claim";
  prepare_ = false;
  sm_override_ = 0;
}

// Tokens with an expert id outside [0, E) (a routing bug upstream) come out as NaN rows, every
// other token as the reference, whichever GEMM kernel runs (stream-K splits included): the bad
// slots are left out of the grouping and the combine marks their tokens.
TEST_F(MoeGroupedTest, BadExpertIdsGiveNanRows) {
  const Launch stream{.nb = 1, .pipelined = false}, pipe{.nb = 2, .pipelined = true};
  for (int64_t every : {1, 3}) {
    bad_every_ = every;
    for (Fmt f : kFmts) {
      check(f, 5, 256, 128, 8, 4, Routing::kRandom, stream);
      check(f, 45, 384, 256, 8, 4, Routing::kRandom, pipe);
      check(f, 1, 1024, 256, 8, 2, Routing::kRandom, pipe);
      check(f, 77, 256, 128, 8, 3, Routing::kOne);  // CudaOps (heuristic)
    }
    check(Fmt::kBf16, 45, 256, 128, 8, 2, Routing::kRandom, Launch{.nb = 8, .tc = true});
  }
  bad_every_ = 0;
}

// The tensor-core tile GEMM (tc configs, BF16): 64- and 128-token tiles, odd token counts per
// expert (partial tiles), experts without tokens, every token on one expert (several tiles of
// one expert), many more items than CTAs, and several n-blocks and k-steps.
TEST_F(MoeGroupedTest, TensorCoreTileGemm) {
  for (int nb : {8, 16}) {
    for (int64_t T : {1, 7, 45, 129, 300, 1000})
      check(Fmt::kBf16, T, 256, 128, 8, 2, Routing::kRandom, Launch{.nb = nb, .tc = true});
    check(Fmt::kBf16, 300, 128, 128, 8, 1, Routing::kOne,
          Launch{.nb = nb, .tc = true});  // 128+128+44
    check(Fmt::kBf16, 77, 384, 256, 8, 3, Routing::kOne, Launch{.nb = nb, .tc = true});
    check(Fmt::kBf16, 3, 256, 128, 64, 2, Routing::kRandom,
          Launch{.nb = nb, .tc = true});  // most empty
    check(Fmt::kBf16, 3000, 384, 256, 64, 4, Routing::kRandom,
          Launch{.nb = nb, .tc = true});  // > 264 items
    check(Fmt::kBf16, 200, 640, 384, 4, 2, Routing::kRandom, Launch{.nb = nb, .tc = true});
    check(Fmt::kBf16, 400, 768, 512, 4, 2, Routing::kRandom, Launch{.nb = nb, .tc = true});
  }
}

// The Hopper warpgroup-MMA tile GEMM for every format (BF16; FP8 and NVFP4 dequantized to F16 on
// the way to shared memory): 128-token tiles, 256 weight rows per CTA (128 for a down GEMM whose
// D is not a multiple of 256: D 384 and 640), the same cases as the mma.sync tile GEMM.
TEST_F(MoeGroupedTest, WarpgroupMmaTileGemm) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  for (Fmt f : kFmts) {
    for (int64_t T : {1, 7, 45, 129, 300, 1000})
      check(f, T, 256, 128, 8, 2, Routing::kRandom, Launch{.nb = 16, .tc = true, .wgmma = true});
    check(f, 300, 128, 128, 8, 1, Routing::kOne, Launch{.nb = 16, .tc = true, .wgmma = true});
    check(f, 77, 384, 256, 8, 3, Routing::kOne, Launch{.nb = 16, .tc = true, .wgmma = true});
    check(f, 3, 256, 128, 64, 2, Routing::kRandom, Launch{.nb = 16, .tc = true, .wgmma = true});
    check(f, 3000, 384, 256, 64, 4, Routing::kRandom, Launch{.nb = 16, .tc = true, .wgmma = true});
    check(f, 200, 640, 384, 4, 2, Routing::kRandom, Launch{.nb = 16, .tc = true, .wgmma = true});
    check(f, 400, 768, 512, 4, 2, Routing::kRandom, Launch{.nb = 16, .tc = true, .wgmma = true});
    check(f, 2500, 640, 640, 4, 2, Routing::kRandom, Launch{.nb = 16, .tc = true, .wgmma = true});
  }
}

// Small cases of the warpgroup-MMA GEMM and the hybrid for compute-sanitizer (scripts/gpu-test.sh
// runs memcheck and racecheck on this test): both BN instances, partial tiles, several items per
// CTA, every format.
TEST_F(MoeGroupedTest, WarpgroupMmaSmall) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  for (Fmt f : kFmts) {
    check(f, 300, 256, 128, 8, 2, Routing::kRandom, Launch{.nb = 16, .tc = true, .wgmma = true});
    check(f, 45, 640, 384, 4, 2, Routing::kRandom, Launch{.nb = 16, .tc = true, .wgmma = true});
    check(f, 200, 256, 128, 8, 2, Routing::kOne, Launch{.nb = 2, .wgmma_min_tokens = 40});
  }
  // FP8 activations (E4M3 x E4M3 wgmma, quantization kernels): tc launch and hybrid.
  check(Fmt::kFp8, 300, 256, 128, 8, 2, Routing::kRandom,
        Launch{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true});
  check(Fmt::kFp8, 200, 256, 128, 8, 2, Routing::kOne,
        Launch{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true});
  // The same on packed weights (prepare_experts: the engine's layout).
  prepare_ = true;
  check(Fmt::kFp8, 300, 256, 128, 8, 2, Routing::kOne,
        Launch{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true});
  // The warp-specialized kernels (2-CTA pairs: I % 256 == 0, D % 512 == 0; the single-CTA one),
  // with and without the narrow instance (tiles of <= 64 tokens: ~29 tokens per expert at T 77,
  // ~75 at T 300), so that gpu-test.sh's sanitizer runs of this test cover them.
  for (int narrow : {0, 1})
    for (int64_t T : {77, 300}) {
      Launch l{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
      l.wgmma_narrow = narrow;
      check(Fmt::kFp8, T, 512, 256, 8, 3, Routing::kRandom, l);
      l.wgmma_pairs = false;
      l.wgmma_ws = true;
      check(Fmt::kFp8, T, 512, 256, 8, 3, Routing::kRandom, l);
    }
  // NVFP4 computed in FP8 (the warp-specialized kernel whose producer dequantizes), both instances,
  // the full launch and the hybrid's big tiles (I 640: no split-K).
  for (int narrow : {0, 1})
    for (int64_t T : {77, 300}) {
      Launch l{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
      l.nvfp4_f8 = true;
      l.wgmma_narrow = narrow;
      check(Fmt::kNvfp4, T, 512, 256, 8, 3, Routing::kRandom, l);
    }
  for (int64_t T : {60, 200}) {
    Launch l{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};
    l.nvfp4_f8 = true;
    l.wgmma_ws = true;
    check(Fmt::kNvfp4, T, 512, 640, 8, 2, Routing::kOne, l);
  }
  // The hybrid on the warp-specialized kernel (moe_launch's choice on sm_90), its narrow instance
  // by grouped_hybrid_narrow's default: T 60 (every big tile <= 64 tokens: narrow) and T 200.
  for (int64_t T : {60, 200}) {
    Launch l{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};
    l.wgmma_ws = true;
    check(Fmt::kFp8, T, 512, 256, 8, 2, Routing::kOne, l);
  }
  // ... with gate_up split along k (2 items of 16 k-steps: 4 ranges each).
  {
    Launch l{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};
    l.wgmma_ws = true;
    check(Fmt::kFp8, 100, 2048, 128, 2, 2, Routing::kOne, l);
  }
  prepare_ = false;
  // BF16 big tiles of <= 64 tokens on the 64-token mma.sync tile GEMM (grouped_hybrid_narrow: T
  // <= 64), and the same tiles on the warpgroup-MMA GEMM (narrow forced off); T 100: full tiles,
  // on the warpgroup-MMA GEMM even with narrow forced on.
  for (int narrow : {-1, 0, 1})
    for (int64_t T : {40, 64, 100}) {
      Launch l{.nb = 2, .wgmma_min_tokens = 32};
      l.wgmma_narrow = narrow;
      check(Fmt::kBf16, T, 256, 128, 8, 2, Routing::kOne, l);
    }
}

// BF16's full launch as moe_launch sets it: weight tiles by TMA on the warp-specialized kernel,
// its single CTAs (bf16_ws 1) or 2-CTA pairs (2; I % 256 == 0, D % 512 == 0), each stage released
// when its k-block's wgmma completed or a k-block later (bf16_defer); against the reference, on
// chunks of < 64 and ~100 tokens per expert. One instance per kernel and release (Kernels/
// MoeGroupedBf16Ws.Small/0..3: ws 1 / 2 x defer off / on), so that gpu-test.sh's sanitizer runs
// cover them and can tell them apart.
class MoeGroupedBf16Ws : public MoeGroupedTest,
                         public ::testing::WithParamInterface<std::tuple<int, bool>> {};

TEST_P(MoeGroupedBf16Ws, Small) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const auto [ws, defer] = GetParam();
  for (int64_t T : {77, 300}) {
    Launch l{.nb = 16, .tc = true, .wgmma = true, .wgmma_tma = true};
    l.bf16_tma = true;
    l.bf16_ws = ws;
    l.bf16_defer = defer;
    const int64_t n0 = grouped_bf16_tma_gemms();
    check(Fmt::kBf16, T, 512, 256, 8, 3, Routing::kRandom, l);
    EXPECT_GT(grouped_bf16_tma_gemms(), n0) << "no GEMM took the maps: T " << T << " ws " << ws;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, MoeGroupedBf16Ws,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Bool()));

// The FP8 warp-specialized kernel, its 2-CTA pairs and NVFP4 computed in FP8 where the ring wraps
// within an item (D 1024: gate_up's 8 k-blocks over the stages; WarpgroupMmaSmall's D 512 fills
// the ring at most once per item), so that gpu-test.sh's racecheck sees stages and their headers
// reused across the `empty` barriers (as MoeGroupedBf16Ws does for BF16: 64 k per k-block).
TEST_F(MoeGroupedTest, WarpSpecializedRingWraps) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  for (int64_t T : {77, 300}) {
    Launch l{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};  // pairs (I 256, D 1024)
    check(Fmt::kFp8, T, 1024, 256, 8, 3, Routing::kRandom, l);
    l.wgmma_pairs = false;
    l.wgmma_ws = true;
    check(Fmt::kFp8, T, 1024, 256, 8, 3, Routing::kRandom, l);
    Launch f4{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
    f4.nvfp4_f8 = true;
    check(Fmt::kNvfp4, T, 1024, 256, 8, 3, Routing::kRandom, f4);
  }
}

// FP8 experts on the warpgroup-MMA GEMM with E4M3 activations (GroupedLaunch::fp8_act): the tc
// launch over the warpgroup-MMA cases above and the hybrid; the F16-activation run of the same
// case must differ (the flag is not ignored) and both stay within their tolerances.
TEST_F(MoeGroupedTest, Fp8ActivationsOnTheWarpgroupMma) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const Launch tc{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
  for (int64_t T : {1, 7, 45, 129, 300, 1000})
    check(Fmt::kFp8, T, 256, 128, 8, 2, Routing::kRandom, tc);
  check(Fmt::kFp8, 300, 128, 128, 8, 1, Routing::kOne, tc);
  check(Fmt::kFp8, 77, 384, 256, 8, 3, Routing::kOne, tc);
  check(Fmt::kFp8, 3, 256, 128, 64, 2, Routing::kRandom, tc);
  check(Fmt::kFp8, 3000, 384, 256, 64, 4, Routing::kRandom, tc);
  check(Fmt::kFp8, 200, 640, 384, 4, 2, Routing::kRandom, tc);
  check(Fmt::kFp8, 2500, 640, 640, 4, 2, Routing::kRandom, tc);
  for (int nb : {1, 2}) {
    check(Fmt::kFp8, 300, 256, 128, 8, 2, Routing::kRandom,
          Launch{.nb = nb, .wgmma_min_tokens = 60, .fp8_act = true});
    check(Fmt::kFp8, 300, 384, 256, 8, 1, Routing::kOne,
          Launch{.nb = nb, .wgmma_min_tokens = 32, .fp8_act = true});
    check(Fmt::kFp8, 1000, 256, 128, 64, 3, Routing::kRandom,
          Launch{.nb = nb, .wgmma_min_tokens = 48, .fp8_act = true});
  }
  const Tensor y8 = check(Fmt::kFp8, 400, 768, 512, 4, 2, Routing::kRandom, tc);
  Launch f16 = tc;
  f16.fp8_act = false;
  const Tensor y16 = check(Fmt::kFp8, 400, 768, 512, 4, 2, Routing::kRandom, f16);
  EXPECT_GT(rel_error(y8, y16), 1e-3) << "fp8_act made no difference";
  std::printf(
      "largest error with FP8 activations: %.4f (tolerance %.2f); against their host "
      "emulation %.2e (tolerance %.0e)\n",
      max_f8_err_, kTolFp8Act, max_f8_emulated_err_, kTolFp8ActEmulated);
  EXPECT_GT(f8_emulated_checks_, 0) << "no case was checked against the emulation";
}

// NVFP4 experts computed in FP8 (GroupedLaunch::nvfp4_f8: the warp-specialized kernel whose
// producer dequantizes the weights to E4M3): against the reference and (full launch) against the
// host emulation of its roundings (check), row-major and packed weights, the narrow instance and
// the full one, several items per CTA, partial tiles, all tokens on few experts, the hybrid's big
// tiles; D % 256 != 0 (down not on 256-row CTAs) keeps the F16 kernel. The F16 run of a case must
// differ (the flag is not ignored).
TEST_F(MoeGroupedTest, Nvfp4ComputedInFp8) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  Launch l{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
  l.nvfp4_f8 = true;
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (int narrow : {0, 1}) {
      l.wgmma_narrow = narrow;
      for (int64_t T : {1, 45, 300, 1000})
        check(Fmt::kNvfp4, T, 512, 256, 8, 3, Routing::kRandom, l);
      check(Fmt::kNvfp4, 300, 256, 128, 8, 1, Routing::kOne, l);
      check(Fmt::kNvfp4, 3000, 768, 384, 16, 4, Routing::kRandom, l);
    }
    l.wgmma_narrow = -1;
    check(Fmt::kNvfp4, 77, 384, 256, 8, 3, Routing::kOne, l);  // down on the F16 kernel
  }
  // The hybrid's big tiles (T 60: narrow instance; T 200 full), packed and row-major; I 256 splits
  // the hybrid's gate_up, which keeps the F16 kernel then (grouped_fp8_act_bytes).
  for (bool packed : {false, true}) {
    prepare_ = packed;
    Launch h{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};
    h.nvfp4_f8 = true;
    h.wgmma_ws = true;
    for (int64_t T : {60, 200}) check(Fmt::kNvfp4, T, 512, 640, 8, 2, Routing::kOne, h);
    check(Fmt::kNvfp4, 1000, 768, 640, 64, 3, Routing::kRandom, h);
    EXPECT_EQ(grouped_fp8_act_bytes(h, GroupedFmt::kNvfp4, 100, 512, 256, 2), 0);
    check(Fmt::kNvfp4, 100, 512, 256, 2, 2, Routing::kOne, h);
  }
  // NVFP4 scale matrices only 2-byte aligned (the producer copies 4-byte words): the F16 kernel
  // runs instead, the same bits as the F16 launch.
  {
    scale_shift_ = 2;
    Launch f16 = l;
    f16.nvfp4_f8 = false;
    const Tensor a = check(Fmt::kNvfp4, 300, 512, 256, 8, 3, Routing::kRandom, l);
    const Tensor b = check(Fmt::kNvfp4, 300, 512, 256, 8, 3, Routing::kRandom, f16);
    EXPECT_EQ(differing_floats(a, b), 0) << "misaligned scales did not take the F16 kernel";
    scale_shift_ = 0;
  }
  prepare_ = true;
  const Tensor y8 = check(Fmt::kNvfp4, 400, 768, 512, 4, 2, Routing::kRandom, l);
  Launch f16 = l;
  f16.nvfp4_f8 = false;
  const Tensor y16 = check(Fmt::kNvfp4, 400, 768, 512, 4, 2, Routing::kRandom, f16);
  prepare_ = false;
  EXPECT_GT(rel_error(y8, y16), 1e-3) << "nvfp4_f8 made no difference";
  EXPECT_GT(f8_emulated_checks_, 0) << "no case was checked against the emulation";
  std::printf(
      "NVFP4 in FP8: largest error %.4f (tolerance %.2f); against the emulation %.2e / rms %.2e\n",
      max_f8_err_, kTolFp8Act, max_f8_emulated_err_, max_f8_emulated_rms_);
}

// BF16 warpgroup-MMA GEMM with weight tiles by TMA (GroupedLaunch::bf16_tma; tensor maps of
// grouped_weight_tmaps over 2-byte elements): one wgmma m64n128 per 128-row box and k16 slice
// instead of one m64n256 over gate and up interleaved by 8 rows, the same products per output in
// the same k order, so bit-identical to the cp.async kernel; row-major and packed, both BN
// instances (D 384 / 640: down on 128 rows), several items per CTA, partial tiles, all tokens on
// few experts, the hybrid's big tiles (T 200; the split-K gate_up of I <= 512 keeps cp.async).
// Each case must have taken the maps (grouped_bf16_tma_gemms). Then the same on the
// warp-specialized kernel and its pairs (GroupedLaunch::bf16_ws).
TEST_F(MoeGroupedTest, Bf16WeightTilesByTmaAreBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const Launch tc{.nb = 16, .tc = true, .wgmma = true};
  const Launch hy{.nb = 2, .wgmma_min_tokens = 40};
  struct Case {
    int64_t T, D, I, E, K;
    Routing r;
    Launch l;
  };
  const Case cases[] = {
      {300, 256, 128, 8, 2, Routing::kRandom, tc}, {1000, 256, 128, 64, 3, Routing::kRandom, tc},
      {77, 384, 256, 8, 3, Routing::kOne, tc},     {2500, 640, 640, 4, 2, Routing::kRandom, tc},
      {400, 768, 512, 4, 2, Routing::kRandom, tc}, {45, 512, 1024, 4, 2, Routing::kRandom, tc},
      {200, 256, 128, 8, 2, Routing::kOne, hy},    {300, 512, 1024, 8, 2, Routing::kOne, hy}};
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const Case& c : cases) {
      Launch without = c.l, with = c.l;
      without.bf16_tma = false;
      with.bf16_tma = with.wgmma_tma = true;
      const Tensor a = check(Fmt::kBf16, c.T, c.D, c.I, c.E, c.K, c.r, without);
      const int64_t n0 = grouped_bf16_tma_gemms();
      const Tensor b = check(Fmt::kBf16, c.T, c.D, c.I, c.E, c.K, c.r, with);
      EXPECT_GT(grouped_bf16_tma_gemms(), n0)
          << "no GEMM took the maps: T " << c.T << " D " << c.D << " I " << c.I;
      EXPECT_EQ(differing_floats(a, b), 0)
          << "T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
      // The warp-specialized kernel (GroupedLaunch::bf16_ws 1; down of D % 256 != 0 keeps the
      // 256-thread kernel).
      with.bf16_ws = 1;
      const Tensor w = check(Fmt::kBf16, c.T, c.D, c.I, c.E, c.K, c.r, with);
      EXPECT_EQ(differing_floats(a, w), 0)
          << "warp-specialized: T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
      with.bf16_defer = true;  // its stages released a k-block later (GroupedLaunch::bf16_defer)
      const Tensor d = check(Fmt::kBf16, c.T, c.D, c.I, c.E, c.K, c.r, with);
      EXPECT_EQ(differing_floats(a, d), 0)
          << "deferred release: T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
    }
  }
  // Its 2-CTA pairs (bf16_ws 2, no hybrid): kPairCases.
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const PairCase& c : kPairCases) {
      Launch base = tc, pairs = tc;
      base.bf16_tma = false;
      pairs.bf16_tma = pairs.wgmma_tma = true;
      pairs.bf16_ws = 2;
      const Tensor a = check(Fmt::kBf16, c.T, c.D, c.I, c.E, c.K, c.r, base);
      const Tensor b = check(Fmt::kBf16, c.T, c.D, c.I, c.E, c.K, c.r, pairs);
      EXPECT_EQ(differing_floats(a, b), 0)
          << "pairs: T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
      pairs.bf16_defer = true;
      const Tensor d = check(Fmt::kBf16, c.T, c.D, c.I, c.E, c.K, c.r, pairs);
      EXPECT_EQ(differing_floats(a, d), 0)
          << "pairs, deferred release: T " << c.T << " D " << c.D << " I " << c.I;
    }
  }
  prepare_ = false;
}

// FP8 warpgroup-MMA GEMM with weight tiles by TMA (GroupedLaunch::wgmma_tma; tensor maps of
// grouped_weight_tmaps), and its warp-specialized form at 256 rows (GroupedLaunch::wgmma_ws; with
// and without the narrow instance for tiles of <= 64 tokens, GroupedLaunch::wgmma_narrow): the
// same wgmma on the same values in the same order as the cp.async kernel, so bit-identical to it,
// row-major and packed, both BN instances (D 384 / 640: down takes 128 rows), several items per
// CTA (the ring crossing items), partial tiles, the hybrid.
TEST_F(MoeGroupedTest, WarpgroupMmaTmaIsBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const Launch tc{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
  const Launch hy{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};
  struct Case {
    int64_t T, D, I, E, K;
    Routing r;
    Launch l;
  };
  const Case cases[] = {
      {300, 256, 128, 8, 2, Routing::kRandom, tc}, {1000, 256, 128, 64, 3, Routing::kRandom, tc},
      {77, 384, 256, 8, 3, Routing::kOne, tc},     {2500, 640, 640, 4, 2, Routing::kRandom, tc},
      {400, 768, 512, 4, 2, Routing::kRandom, tc}, {200, 256, 128, 8, 2, Routing::kOne, hy}};
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const Case& c : cases) {
      Launch without = c.l, with = c.l, ws = c.l;
      without.wgmma_tma = false;
      with.wgmma_tma = true;
      with.wgmma_ws = with.wgmma_pairs = false;
      ws.wgmma_tma = ws.wgmma_ws = true;
      ws.wgmma_pairs = false;
      const Tensor a = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, without);
      const Tensor b = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, with);
      ws.wgmma_narrow = 0;
      const Tensor w = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, ws);
      ws.wgmma_narrow = 1;  // tiles of <= 64 tokens on both consumer warpgroups
      const Tensor wn = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, ws);
      EXPECT_EQ(differing_floats(a, b), 0)
          << "T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
      EXPECT_EQ(differing_floats(a, w), 0)
          << "warp-specialized: T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
      EXPECT_EQ(differing_floats(a, wn), 0) << "warp-specialized, narrow tiles: T " << c.T << " D "
                                            << c.D << " I " << c.I << " packed " << packed;
    }
  }
  // 2-CTA clusters over pair units (kPairCases), bit-identical to the kernel without warp
  // specialization.
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const PairCase& c : kPairCases) {
      Launch base = tc, pairs = tc;
      base.wgmma_ws = base.wgmma_pairs = false;
      pairs.wgmma_tma = pairs.wgmma_pairs = true;
      const Tensor a = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, base);
      pairs.wgmma_narrow = 0;
      const Tensor b = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, pairs);
      pairs.wgmma_narrow = 1;
      const Tensor bn = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, pairs);
      EXPECT_EQ(differing_floats(a, b), 0)
          << "pairs: T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
      EXPECT_EQ(differing_floats(a, bn), 0) << "pairs, narrow tiles: T " << c.T << " D " << c.D
                                            << " I " << c.I << " packed " << packed;
    }
  }
  // CudaOps: prepare_experts' maps (the harness checks they exist) under the heuristic's
  // warpgroup-MMA launch (75 tokens per expert).
  prepare_ = true;
  Launch without = tc;
  without.wgmma_tma = false;
  EXPECT_EQ(differing_floats(check(Fmt::kFp8, 300, 256, 128, 8, 2),
                             check(Fmt::kFp8, 300, 256, 128, 8, 2, Routing::kRandom, without)),
            0);
  prepare_ = false;
}

// h quantized to E4M3 in the warpgroup-MMA gate_up's epilogue (GroupedLaunch::wgmma_hquant,
// epilogue_hq) against the moe_quant_rows launch: the same bits in every FP8 gate_up kernel that
// runs it: the 256-thread kernel with cp.async and TMA weights, the warp-specialized one (whole
// tiles, and the NARROW instance whose two warpgroups each hold half of a token's 128 columns and
// combine their amax in shared memory), the 2-CTA pairs (both instances), and the hybrid (h's codes
// in q after x's; with its split-K gate_up). Scratch is poisoned, so codes the epilogue failed to
// write reach y as garbage.
TEST_F(MoeGroupedTest, FusedHQuantIsBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const Launch tc{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
  const Launch hy{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};
  const WgmmaCase cases[] = {
      {"256-thread", 300, 256, 128, 8, 2, Routing::kRandom, tc, false, false, false, 0},
      {"256-thread TMA", 1000, 256, 128, 64, 3, Routing::kRandom, tc, true, false, false, 0},
      {"ws", 400, 768, 512, 4, 2, Routing::kRandom, tc, true, true, false, 0},
      {"ws narrow", 300, 256, 128, 8, 2, Routing::kRandom, tc, true, true, false, 1},
      {"ws narrow, one expert", 77, 384, 256, 8, 3, Routing::kOne, tc, true, true, false, 1},
      {"pairs", 700, 512, 256, 4, 2, Routing::kOne, tc, true, false, true, 0},
      {"pairs narrow", 1000, 512, 256, 64, 3, Routing::kRandom, tc, true, false, true, 1},
      {"hybrid", 200, 256, 128, 8, 2, Routing::kOne, hy, true, false, false, 0},
      {"hybrid ws", 300, 384, 256, 8, 2, Routing::kRandom, hy, true, true, false, 0},
      {"hybrid ws narrow", 200, 256, 128, 8, 2, Routing::kOne, hy, true, true, false, 1},
      {"hybrid ws split-K", 100, 2048, 128, 2, 2, Routing::kOne, hy, true, true, false, 0},
      {"hybrid ws narrow split-K", 60, 4096, 256, 4, 4, Routing::kOne, hy, true, true, false, 1}};
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const WgmmaCase& c : cases) {
      Launch fused = c.launch();
      fused.wgmma_hquant = true;
      Launch apart = fused;
      apart.wgmma_hquant = false;
      const Tensor a = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, apart);
      const Tensor b = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, fused);
      EXPECT_EQ(differing_floats(a, b), 0)
          << c.what << ": T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
    }
  }
  prepare_ = false;
}

// GroupedLaunch::down_act_tma: down's activation tiles by TMA on the warp-specialized FP8
// kernels (whole and narrow tiles), the 2-CTA pairs and the hybrid's big tiles on the
// warp-specialized kernel give the bits of the producers' cp.async gather: rows past a tile's count
// read other positions (or zeros past T * K) and are never stored. T * K not a multiple of 128
// (the last tile's box runs past the map), one expert holding everything, empty experts, h's codes
// from gate_up's epilogue and from moe_quant_rows (in q: the "rows" launches).
TEST_F(MoeGroupedTest, DownActivationsByTmaAreBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const WgmmaCase& c : act_tma_cases()) {
      Launch gather = c.launch();
      gather.down_act_tma = false;
      Launch tma = gather;
      tma.down_act_tma = true;
      tma.x_pos = 0;  // (gate_up's by position: GateUpActivationsByPositionAreBitIdentical)
      const Tensor a = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, gather);
      const Tensor b = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, tma);
      EXPECT_EQ(differing_floats(a, b), 0)
          << c.what << ": T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
    }
  }
  prepare_ = false;
}

// GroupedLaunch::x_pos: x's codes copied by position, gate_up's activation tile by one TMA box
// too, against the producers' gather for both GEMMs; the copy ran once per call of the full
// launch, never for the hybrid (its cases keep the gather: grouped_x_pos_counts). The same with
// the copy by token (GroupedLaunch::x_pos_scatter), bad ids (slots left out: position -1, and
// positions no slot takes keep the scratch's poison) and the shared expert included.
TEST_F(MoeGroupedTest, GateUpActivationsByPositionAreBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const std::vector<WgmmaCase> cases = act_tma_cases();
  auto run = [&](const WgmmaCase& c) {
    auto [gather, tma] = gather_and_boxes(c.launch());
    tma.x_pos_scatter = false;  // the copy by position (the scatter below)
    const GroupedXPosCounts before = grouped_x_pos_counts();
    const Tensor a = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, gather);
    EXPECT_EQ(grouped_x_pos_counts().calls, before.calls)
        << c.what << ": x_pos 0 took x by position";
    const Tensor b = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, tma);
    const bool hybrid = c.l.wgmma_min_tokens > 0;
    EXPECT_EQ(grouped_x_pos_counts().calls - before.calls, hybrid ? 0 : 1) << c.what;
    EXPECT_EQ(grouped_x_pos_counts().copies - before.copies, hybrid ? 0 : 1) << c.what;
    EXPECT_EQ(grouped_x_pos_counts().scatters, before.scatters) << c.what << ": b scattered";
    EXPECT_EQ(differing_floats(a, b), 0) << c.what << ": T " << c.T << " D " << c.D << " I " << c.I
                                         << " packed " << prepare_ << " shared " << shared_;
    // GroupedLaunch::x_pos_scatter: the copy by token, from the placement's slot positions.
    GroupedLaunch scatter = tma;
    scatter.x_pos_scatter = true;
    const GroupedXPosCounts mid = grouped_x_pos_counts();
    const Tensor d = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, scatter);
    EXPECT_EQ(grouped_x_pos_counts().scatters - mid.scatters, hybrid ? 0 : 1) << c.what;
    EXPECT_EQ(differing_floats(a, d), 0) << c.what << " (scatter): T " << c.T << " D " << c.D
                                         << " packed " << prepare_ << " shared " << shared_;
  };
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const WgmmaCase& c : cases) run(c);
  }
  prepare_ = false;
  // Bad expert ids (NaN rows): their slots are not placed, so sorted_slot's tail is the scratch's
  // poison, which the copy must not follow (memcheck would see the read, the result the rows).
  bad_every_ = 3;
  run(cases[0]);  // ws
  run(cases[7]);  // pairs, odd chunks
  bad_every_ = 0;
  // The shared expert riding along (expert E on slot K of every token: its rows by position too).
  shared_ = 1;
  run(cases[0]);  // ws
  run(cases[5]);  // pairs
  // The shared expert run alone (with tensor maps): x's codes in place.
  shared_ = 0;
  const GroupedLaunch alone =
      moe_shared_alone_launch(300, 512, 1024, GroupedFmt::kFp8Block, moe_limits(ops_->device()));
  ASSERT_TRUE(alone.wgmma && alone.wgmma_tma && alone.fp8_act &&
              grouped_x_pos(alone, 300, 1, 1, 1024))
      << "the shared-alone launch no longer takes x by position at T 300: pick another case";
  const GroupedXPosCounts moved = shared_alone_counts(Fmt::kFp8);
  EXPECT_EQ(moved.calls, 1) << "shared expert alone";
  EXPECT_EQ(moved.copies, 0) << "shared expert alone: copied x";
}

// GroupedLaunch::narrow_act_box: the NARROW instance's activation boxes of 64 rows (one for a
// narrow tile, two for a whole one; rows past the end read as zeros) give the bits of its boxes of
// 128 rows, for gate_up's x by position and down's h: the warp-specialized kernel, the pairs
// (lone units and a pair's second CTA of <= 64 tokens), the hybrid's big tiles (down only: its
// gate_up keeps the gather), and the instances that are not narrow (which leave the 128-row map).
TEST_F(MoeGroupedTest, NarrowActivationBoxesAreBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  std::vector<WgmmaCase> cases = act_tma_cases();
  const GroupedLaunch tc{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
  // 312 tokens per expert: 256-token pair chunks (a second CTA of 129..192-token chunks has <= 64)
  // and lone chunks of <= 64, all narrow; 47 per expert on the single-CTA kernel, whole tiles
  // among them.
  cases.push_back({"pairs narrow, odd chunks", 2500, 1024, 256, 16, 2, Routing::kRandom, tc, true,
                   false, true, 1});
  cases.push_back({"ws narrow, many experts", 1000, 256, 128, 64, 3, Routing::kRandom, tc, true,
                   true, false, 1});
  int narrow_cases = 0;
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const WgmmaCase& c : cases) {
      const GroupedLaunch boxes = gather_and_boxes(c.launch()).second;
      GroupedLaunch box64 = boxes;
      box64.narrow_act_box = true;
      const Tensor a = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, boxes);
      const int64_t before = grouped_x_pos_counts().box64;
      const Tensor b = check(Fmt::kFp8, c.T, c.D, c.I, c.E, c.K, c.r, box64);
      const int64_t took = grouped_x_pos_counts().box64 - before;
      const bool hybrid = c.l.wgmma_min_tokens > 0;
      // gate_up (not the hybrid's: the gather) and down, where the NARROW instance runs
      EXPECT_EQ(took, c.narrow == 1 ? (hybrid ? 1 : 2) : 0) << c.what;
      narrow_cases += c.narrow == 1;
      EXPECT_EQ(differing_floats(a, b), 0)
          << c.what << ": T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
    }
  }
  prepare_ = false;
  EXPECT_GE(narrow_cases, 8) << "the cases no longer run the NARROW instance";
}

// NVFP4 computed in FP8 (GroupedLaunch::nvfp4_f8) for the F4 bit-identity tests: the full
// warpgroup-MMA launch and the hybrid (big tiles from 40 tokens on the warp-specialized kernel),
// each also with h quantized by moe_quant_rows instead of gate_up's epilogue (`_rows`), and
// `narrow` as GroupedLaunch::wgmma_narrow.
struct F4Launches {
  Launch tc, tc_rows, hy, hy_rows;
};
F4Launches f4_launches(int narrow) {
  F4Launches f;
  f.tc = Launch{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true};
  f.hy = Launch{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};
  f.hy.wgmma_ws = true;
  for (Launch* l : {&f.tc, &f.hy}) l->nvfp4_f8 = true, l->wgmma_narrow = narrow;
  f.tc_rows = f.tc;
  f.hy_rows = f.hy;
  f.tc_rows.wgmma_hquant = f.hy_rows.wgmma_hquant = false;
  return f;
}

// NVFP4 computed in FP8 (the F4 kernel, GroupedLaunch::nvfp4_f8) with its activation tiles by
// TMA: down's h (down_act_tma) and gate_up's x by position (x_pos) give the bits of its producers'
// gather: whole and narrow tiles, h from gate_up's epilogue and from moe_quant_rows, one expert
// holding everything, many experts, T * K not a multiple of 128, packed and row-major weights, and
// the hybrid's big tiles (down only: the hybrid keeps gate_up's gather). The counts say which
// launches took the boxes.
TEST_F(MoeGroupedTest, F4ActivationsByTmaAreBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const F4Launches f4 = f4_launches(-1);
  const Launch &tc = f4.tc, &tc_rows = f4.tc_rows, &hy = f4.hy;
  struct Case {
    const char* what;
    int64_t T, D, I, E, K;
    Routing r;
    Launch l;
    int narrow;
  };
  const Case cases[] = {
      {"f4", 400, 768, 512, 4, 2, Routing::kRandom, tc, 0},
      {"f4, h by moe_quant_rows", 400, 768, 512, 4, 2, Routing::kRandom, tc_rows, 0},
      {"f4 narrow", 300, 256, 128, 8, 2, Routing::kRandom, tc, 1},
      {"f4, one expert", 77, 512, 256, 8, 3, Routing::kOne, tc, 0},
      {"f4, many experts", 1000, 256, 128, 64, 3, Routing::kRandom, tc, 0},
      {"f4 hybrid", 200, 512, 640, 8, 2, Routing::kOne, hy, -1},
      {"f4 hybrid narrow", 60, 512, 640, 8, 2, Routing::kOne, hy, -1}};
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const Case& c : cases) {
      Launch l = c.l;
      l.wgmma_narrow = c.narrow;
      const auto [gather, tma] = gather_and_boxes(l);
      const GroupedXPosCounts before = grouped_x_pos_counts();
      const Tensor a = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, gather);
      const GroupedXPosCounts mid = grouped_x_pos_counts();
      EXPECT_EQ(mid.calls, before.calls) << c.what << ": the gather took x by position";
      EXPECT_EQ(mid.f4_down, before.f4_down) << c.what << ": the gather took h by TMA";
      const Tensor b = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, tma);
      const GroupedXPosCounts after = grouped_x_pos_counts();
      const bool hybrid = c.l.wgmma_min_tokens > 0;
      EXPECT_EQ(after.calls - mid.calls, hybrid ? 0 : 1) << c.what << ": x by position";
      EXPECT_EQ(after.f4_down - mid.f4_down, 1) << c.what << ": h by TMA";
      EXPECT_EQ(differing_floats(a, b), 0)
          << c.what << ": T " << c.T << " D " << c.D << " I " << c.I << " packed " << packed;
    }
  }
  // The shared expert run alone: F4's gate_up maps x's codes in place.
  prepare_ = false;
  const GroupedLaunch alone =
      moe_shared_alone_launch(300, 512, 1024, GroupedFmt::kNvfp4, moe_limits(ops_->device()));
  ASSERT_TRUE(alone.wgmma && alone.nvfp4_f8 && alone.fp8_act && alone.down_act_tma &&
              grouped_x_pos(alone, 300, 1, 1, 1024))
      << "the NVFP4 shared-alone launch no longer runs F4 with x by position at T 300: pick "
         "another case";
  const GroupedXPosCounts moved = shared_alone_counts(Fmt::kNvfp4);
  EXPECT_EQ(moved.calls, 1) << "shared expert alone: x not by position";
  EXPECT_EQ(moved.copies, 0) << "shared expert alone: copied x";
  EXPECT_GE(moved.f4_down, 1) << "shared expert alone: h not by TMA";
}

// F4 with two producer warpgroups and one consumer warpgroup on 64-token tiles (GroupedLaunch::
// f4p2_max_mean, f4p2_big) gives the bits of F4's full instance on 128-token tiles (each output the
// same k-loop and promotions; only the tiling of an expert's tokens differs): the full launch,
// gathered or by TMA, with h quantized in gate_up's epilogue or by moe_quant_rows over the 64-token
// list, and the hybrid's big tiles (MoeGroupParams::big_tile 64; I 640: no split-K). At or above
// f4p2_max_mean slots per expert the call stays on the one-producer kernel.
TEST_F(MoeGroupedTest, F4TwoProducersIsBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  // (h by moe_quant_rows: over the 64-token list, the big tiles' on the hybrid)
  const F4Launches f4 = f4_launches(0);
  const Launch &tc = f4.tc, &tc_rows = f4.tc_rows, &hy = f4.hy, &hy_rows = f4.hy_rows;
  struct Case {
    const char* what;
    int64_t T, D, I, E, K;
    Routing r;
    Launch l;
  };
  const Case cases[] = {
      {"200 per expert", 400, 768, 512, 4, 2, Routing::kRandom, tc},
      {"75 per expert", 300, 256, 128, 8, 2, Routing::kRandom, tc},
      {"one expert", 77, 512, 256, 8, 3, Routing::kOne, tc},
      {"many experts", 1000, 256, 128, 64, 3, Routing::kRandom, tc},
      {"few tokens", 9, 512, 256, 8, 2, Routing::kRandom, tc},
      {"h by moe_quant_rows", 300, 256, 128, 8, 2, Routing::kRandom, tc_rows},
      {"hybrid, one expert", 200, 512, 640, 8, 2, Routing::kOne, hy},
      {"hybrid, 60 tokens", 60, 512, 640, 8, 2, Routing::kOne, hy},
      {"hybrid, 75 per expert", 300, 256, 640, 8, 2, Routing::kRandom, hy},
      {"hybrid, h by moe_quant_rows", 200, 512, 640, 8, 2, Routing::kOne, hy_rows},
      {"hybrid, some experts big", 400, 256, 640, 32, 3, Routing::kRandom, hy}};
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const Case& c : cases)
      for (int xp : {0, 1}) {
        const bool hybrid = c.l.wgmma_min_tokens > 0;
        if (hybrid && xp == 1) continue;  // (no x by position with the hybrid)
        Launch a = c.l;
        a.x_pos = xp;
        a.f4p2_max_mean = 0;
        a.f4p2_big = 0;
        Launch b = a;
        // P2 (hybrid: its big tiles) with the bound just above the call's slots per expert
        // (T * K < max * E), which the check at the bound below takes away
        if (hybrid)
          b.f4p2_big = c.T <= kGroupedF4p2Tile ? 1 : 2;  // (1: at T <= 64 only)
        else
          b.f4p2_max_mean = static_cast<int>(c.T * c.K / c.E + 1);
        const int64_t before = grouped_f4p2_calls();
        const Tensor ya = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, a);
        EXPECT_EQ(grouped_f4p2_calls(), before) << c.what;
        const Tensor yb = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, b);
        EXPECT_EQ(grouped_f4p2_calls() - before, 1) << c.what << ": P2 did not run";
        EXPECT_EQ(differing_floats(ya, yb), 0)
            << c.what << ": T " << c.T << " x_pos " << xp << " packed " << packed;
        if (!hybrid && xp == 0 && !packed) {  // at the bound: the one-producer kernel, same bits
          Launch at = a;
          at.f4p2_max_mean = static_cast<int>(c.T * c.K / c.E);
          const Tensor yc = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, at);
          EXPECT_EQ(grouped_f4p2_calls() - before, 1) << c.what << ": P2 ran at its bound";
          EXPECT_EQ(differing_floats(ya, yc), 0) << c.what;
        }
      }
  }
  prepare_ = false;
}

// P2's full launch split by expert (GroupedLaunch::f4p2_split): experts of at least N slots on the
// one-producer kernel's 128-token tiles (a second list and launch), the others on P2's 64-token
// tiles, gives the bits of the one-producer full launch: experts on either side of N, every
// expert big (P2's launch over an empty list), none big (the second launch's list empty), x by
// position, packed and row-major weights, gated by the big experts' share (f4p2_split_share) on
// either side of it; and the hybrid's big tiles on P2 split the same way (a third list), against
// its big tiles on the one-producer kernel. Without wgmma_hquant the call is
// not split.
TEST_F(MoeGroupedTest, F4TwoProducersSplitByExpertIsBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const F4Launches f4 = f4_launches(0);
  struct Case {
    const char* what;
    int64_t T, D, I, E, K;
    Routing r;
    int split;
  };
  const Case cases[] = {{"~37 per expert, split at 40", 300, 256, 128, 16, 2, Routing::kRandom, 40},
                        {"~75 per expert, split at 72", 300, 512, 256, 8, 2, Routing::kRandom, 72},
                        {"every expert big", 77, 512, 256, 8, 3, Routing::kOne, 40},
                        {"none big", 9, 512, 256, 8, 2, Routing::kRandom, 40},
                        {"many experts", 1000, 256, 128, 64, 3, Routing::kRandom, 48}};
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const Case& c : cases)
      for (int xp : {0, 1}) {
        Launch a = f4.tc;
        a.x_pos = xp;
        a.f4p2_max_mean = 0;
        Launch b = a;
        b.f4p2_max_mean = static_cast<int>(c.T * c.K / c.E + 1);
        b.f4p2_split = c.split;
        const int64_t calls = grouped_f4p2_calls(), splits = grouped_f4p2_split_calls();
        const Tensor ya = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, a);
        const Tensor yb = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, b);
        EXPECT_EQ(grouped_f4p2_calls() - calls, 1) << c.what << ": P2 did not run";
        EXPECT_EQ(grouped_f4p2_split_calls() - splits, 1) << c.what << ": not split";
        EXPECT_EQ(differing_floats(ya, yb), 0)
            << c.what << ": T " << c.T << " x_pos " << xp << " packed " << packed;
        if (packed || xp == 1) continue;
        for (double share : {0.3, 0.99}) {  // gated by the big experts' share: the same bits
          Launch bs = b;
          bs.f4p2_split_share = share;
          const Tensor yc = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, bs);
          EXPECT_EQ(differing_floats(ya, yc), 0) << c.what << ": share " << share;
        }
      }
  }
  // The hybrid's big tiles on P2 (f4p2_big 2) split: big experts of at least N slots on a third
  // list of 128-token tiles, against the hybrid on the one-producer kernel alone (f4p2_big 0).
  // Below N tokens in the call no expert can qualify: no split launch.
  const Case hybrid_cases[] = {
      {"hybrid, experts on both sides", 300, 256, 640, 8, 2, Routing::kRandom, 76},
      {"hybrid, one expert", 200, 512, 640, 8, 2, Routing::kOne, 96},
      {"hybrid, some experts big, some of them split", 400, 256, 640, 32, 3, Routing::kRandom, 44},
      {"hybrid, below the split's T", 60, 512, 640, 8, 2, Routing::kOne, 96}};
  for (bool packed : {false, true}) {
    prepare_ = packed;
    for (const Case& c : hybrid_cases) {
      Launch a = f4.hy;
      a.f4p2_big = 0;
      Launch b = a;
      b.f4p2_big = 2;
      b.f4p2_split = c.split;
      const int64_t calls = grouped_f4p2_calls(), splits = grouped_f4p2_split_calls();
      const Tensor ya = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, a);
      const Tensor yb = check(Fmt::kNvfp4, c.T, c.D, c.I, c.E, c.K, c.r, b);
      EXPECT_EQ(grouped_f4p2_calls() - calls, 1) << c.what << ": P2 did not run";
      EXPECT_EQ(grouped_f4p2_split_calls() - splits, c.T >= c.split ? 1 : 0) << c.what;
      EXPECT_EQ(differing_floats(ya, yb), 0) << c.what << ": T " << c.T << " packed " << packed;
    }
  }
  {  // the shared expert (T slots) alone on the third list; the routed ones stream
    shared_ = 1;
    Launch a = f4.hy;
    a.f4p2_big = 0;
    Launch b = a;
    b.f4p2_big = 2;
    b.f4p2_split = 96;
    const int64_t splits = grouped_f4p2_split_calls();
    const Tensor ya = check(Fmt::kNvfp4, 200, 256, 640, 16, 3, Routing::kRandom, a);
    const Tensor yb = check(Fmt::kNvfp4, 200, 256, 640, 16, 3, Routing::kRandom, b);
    EXPECT_EQ(grouped_f4p2_split_calls() - splits, 1) << "hybrid split, shared expert";
    EXPECT_EQ(differing_floats(ya, yb), 0) << "hybrid split, shared expert";
    shared_ = 0;
  }
  // h by moe_quant_rows: not split (it quantizes one list's rows), the same bits.
  const int64_t splits = grouped_f4p2_split_calls();
  Launch hb = f4.hy_rows;
  hb.f4p2_big = 2;
  hb.f4p2_split = 44;
  check(Fmt::kNvfp4, 400, 256, 640, 32, 3, Routing::kRandom, hb);
  EXPECT_EQ(grouped_f4p2_split_calls(), splits) << "hybrid split with h by moe_quant_rows";
  Launch a = f4.tc_rows;
  a.f4p2_max_mean = 0;
  Launch b = a;
  b.f4p2_max_mean = 300 * 2 / 16 + 1;
  b.f4p2_split = 40;
  const Tensor ya = check(Fmt::kNvfp4, 300, 256, 128, 16, 2, Routing::kRandom, a);
  const Tensor yb = check(Fmt::kNvfp4, 300, 256, 128, 16, 2, Routing::kRandom, b);
  EXPECT_EQ(grouped_f4p2_split_calls(), splits) << "split with h by moe_quant_rows";
  EXPECT_EQ(differing_floats(ya, yb), 0) << "h by moe_quant_rows";
  prepare_ = false;
}

// GroupedLaunch::sibling_defer: a GEMM's launches after its first (the hybrid's big tiles after
// the streaming launch; on P2 with the split, its third list after them) wait for their
// predecessor at their end, where they go out with PDL (hybrid_pdl): the same bits as waiting at
// their start, in every format's hybrid, and the launches did defer.
TEST_F(MoeGroupedTest, SiblingLaunchesWaitingAtTheirEndAreBitIdentical) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const F4Launches f4 = f4_launches(0);
  Launch f4split = f4.hy;  // the streaming list, P2's big tiles, the third list (>= 44 slots)
  f4split.f4p2_big = 2;
  f4split.f4p2_split = 44;
  Launch f8{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true};  // streaming + warp-specialized
  f8.wgmma_ws = true;
  f8.pdl = true;
  Launch bf16{.nb = 2, .wgmma_min_tokens = 40};  // the warpgroup-MMA big tiles
  Launch bf16n = bf16;  // T 60, ~30 tokens per expert: big tiles on the 64-token tile GEMM
  bf16n.wgmma_min_tokens = 20;
  struct Case {
    const char* what;
    Fmt f;
    int64_t T, D, I, E, K;
    Launch l;
    int64_t deferred;  // launches per call
  };
  const Case cases[] = {
      {"nvfp4 hybrid, P2 split", Fmt::kNvfp4, 400, 256, 640, 32, 3, f4split, 4},
      {"nvfp4 hybrid", Fmt::kNvfp4, 200, 512, 640, 8, 2, f4.hy, 2},
      {"fp8 hybrid", Fmt::kFp8, 200, 512, 256, 8, 2, f8, 2},
      {"bf16 hybrid", Fmt::kBf16, 200, 256, 256, 8, 2, bf16, 2},
      {"bf16 hybrid, 64-token tile GEMM", Fmt::kBf16, 60, 256, 256, 8, 4, bf16n, 2}};
  for (const Case& c : cases) {
    Launch off = c.l;
    off.hybrid_pdl = true;
    off.sibling_defer = false;
    Launch on = off;
    on.sibling_defer = true;
    const int64_t d0 = grouped_deferred_launches();
    const Tensor a = check(c.f, c.T, c.D, c.I, c.E, c.K, Routing::kRandom, off);
    const int64_t d1 = grouped_deferred_launches();
    const Tensor b = check(c.f, c.T, c.D, c.I, c.E, c.K, Routing::kRandom, on);
    const int64_t d2 = grouped_deferred_launches();
    EXPECT_EQ(d1 - d0, 0) << c.what;
    EXPECT_GE(d2 - d1, c.deferred) << c.what << ": no launch deferred its wait";
    EXPECT_EQ(differing_floats(a, b), 0) << c.what;
    // Without PDL on those launches nothing defers.
    Launch plain = on;
    plain.hybrid_pdl = false;
    plain.pdl = false;
    const Tensor p = check(c.f, c.T, c.D, c.I, c.E, c.K, Routing::kRandom, plain);
    EXPECT_EQ(grouped_deferred_launches(), d2) << c.what << ": deferred without PDL";
    EXPECT_EQ(differing_floats(a, p), 0) << c.what << ": without PDL";
  }
}

// The hybrid's gate_up split along k where its items fill less than half the GPU
// (GroupedLaunch::hybrid_split_k; ws_split_count): FP8 on the warp-specialized kernel (E4M3,
// tensor maps), FP8 on the 256-thread kernel with E4M3 (no ws) and with F16 activations, BF16 and
// NVFP4 on the 256-thread kernel; full tiles (T 100) and, for FP8 on the warp-specialized kernel,
// narrow ones (T 60, NARROW instance). Within tolerance (check: the reference, and the host
// emulation of the E4M3 path), the same bits on a second run (the partial sums are added in range
// order whichever CTA arrives last), close to the unsplit k-loop, and for each launch at least one
// case whose bits differ from it (the reordered f32 sums reach y through h's 16-bit / E4M3
// roundings only now and then: not every case shows it).
TEST_F(MoeGroupedTest, HybridSplitKIsDeterministic) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  prepare_ = true;
  struct Case {
    int64_t T, D, I, E, K;
  };
  struct Variant {
    const char* what;
    Fmt f;
    bool fp8_act, ws;
  };
  for (const Variant& v :
       {Variant{"FP8 ws", Fmt::kFp8, true, true},
        Variant{"FP8 E4M3 256-thread", Fmt::kFp8, true, false},
        Variant{"FP8 F16", Fmt::kFp8, false, false}, Variant{"BF16", Fmt::kBf16, false, false},
        Variant{"NVFP4", Fmt::kNvfp4, false, false}}) {
    int differ = 0;
    for (const Case& c :
         {Case{100, 2048, 128, 2, 2}, Case{100, 4096, 256, 4, 4}, Case{60, 4096, 256, 4, 4}}) {
      if (c.T <= 64 && !v.ws) continue;  // (BF16: the 64-token tile GEMM, not split)
      Launch split{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = v.fp8_act};
      split.wgmma_ws = v.ws;
      Launch whole = split;
      whole.hybrid_split_k = false;
      const Tensor a = check(v.f, c.T, c.D, c.I, c.E, c.K, Routing::kOne, split);
      const Tensor b = check(v.f, c.T, c.D, c.I, c.E, c.K, Routing::kOne, split);
      const Tensor w = check(v.f, c.T, c.D, c.I, c.E, c.K, Routing::kOne, whole);
      EXPECT_EQ(differing_floats(a, b), 0) << v.what << " T " << c.T << ": not deterministic";
      EXPECT_LT(rel_error(a, w), 1e-3) << v.what << " T " << c.T;
      differ += differing_floats(a, w) > 0 ? 1 : 0;
    }
    EXPECT_GT(differ, 0) << v.what << ": split-K did not run (no case differs)";
  }
  prepare_ = false;
}

// GroupedLaunch::group_one_warp (on by default): the grouping of <= 32 slots by one warp gives the
// block path's list and positions (check() compares the positions with the host's stable order;
// here the results bit for bit): streaming and ring kernels, several tiles of one expert
// (Routing::kOne, 8-token tiles), the shared expert, bad ids, one slot per token, 32 slots, and a
// hybrid whose threshold the slots can reach (not taken there).
TEST_F(MoeGroupedTest, GroupOneWarpIsBitIdentical) {
  struct Case {
    Fmt f;
    int64_t T, K;
    Routing r;
    Launch l;
    int64_t shared = 0, bad = 0;
  };
  std::vector<Case> cases = {
      {Fmt::kBf16, 1, 4, Routing::kRandom, Launch{.nb = 1}},
      {Fmt::kFp8, 3, 4, Routing::kRandom, Launch{.nb = 1, .pipelined = true}},
      {Fmt::kNvfp4, 8, 4, Routing::kRandom, Launch{.nb = 2, .pipelined = true}},
      {Fmt::kBf16, 20, 1, Routing::kOne, Launch{.nb = 1}},  // 3 tiles of one expert
      {Fmt::kFp8, 6, 4, Routing::kRandom, Launch{.nb = 1}, 1},
      {Fmt::kNvfp4, 7, 4, Routing::kRandom, Launch{.nb = 1, .pipelined = true}, 0, 2},
      {Fmt::kBf16, 32, 1, Routing::kRandom, Launch{.nb = 2}},
  };
  if (ops_->device().cc_major == 9 && ops_->device().cc_minor == 0)  // the hybrid (wgmma)
    cases.push_back({Fmt::kFp8, 16, 2, Routing::kOne, Launch{.nb = 2, .wgmma_min_tokens = 12}});
  for (const Case& c : cases) {
    Launch off = c.l;
    off.group_one_warp = false;
    Launch on = c.l;
    on.group_one_warp = true;
    shared_ = c.shared;
    bad_every_ = c.bad;
    const Tensor a = check(c.f, c.T, 256, 128, 8, c.K, c.r, off);
    const Tensor b = check(c.f, c.T, 256, 128, 8, c.K, c.r, on);
    EXPECT_EQ(differing_floats(a, b), 0)
        << name(c.f) << " T " << c.T << " K " << c.K << " shared " << c.shared << " bad " << c.bad;
  }
  shared_ = 0;
  bad_every_ = 0;
}

// GroupedLaunch::early_gate_up: gate_up's ring works out the tile list of <= 32 slots from the ids
// and issues its first weight stages before griddepcontrol.wait; with early_down_max_slots down's
// ring the same (with PDL after gate_up). The same bits as with the grouping kernel's list, for
// every ring instance (BF16 / FP8 / NVFP4 8- and 16-token tiles, the NVFP4 two-step stages, items
// of two sub-blocks and bulk copies), at 4 to 32 slots, on a small grid (several segments per
// warp, so the early stages cross items), with the shared expert folded in (its slot last) and
// with bad ids (left out of both lists); above 32 slots (gate_up) or the bound (down) the launch
// does not take it.
TEST_F(MoeGroupedTest, EarlyGateUpAndDownAreBitIdentical) {
  if (ops_->device().cc_major < 9) GTEST_SKIP() << "programmatic dependent launch needs sm_90";
  struct Case {
    Fmt f;
    int64_t T;
    Launch l;
    int sms = 0;
    int64_t shared = 0, bad = 0;
  };
  std::vector<Case> cases;
  for (Fmt f : kFmts)
    for (int nb : {1, 2})
      for (int64_t T : {1, 3, 8}) cases.push_back({f, T, Launch{.nb = nb, .pipelined = true}});
  cases.push_back({Fmt::kBf16, 5, Launch{.nb = 1, .pipelined = true}, 2});
  cases.push_back({Fmt::kFp8, 6, Launch{.nb = 1, .pipelined = true}, 3, 1});
  cases.push_back({Fmt::kBf16, 6, Launch{.nb = 2, .pipelined = true}, 0, 1, 2});
  cases.push_back({Fmt::kNvfp4, 8, Launch{.nb = 1, .pipelined = true}, 0, 0, 3});
  cases.push_back({Fmt::kBf16, 9, Launch{.nb = 1, .pipelined = true}});  // 36 slots: not taken
  {
    Launch two{.nb = 1, .pipelined = true};
    two.pipe_two_step = true;
    cases.push_back({Fmt::kNvfp4, 2, two});
    cases.push_back({Fmt::kNvfp4, 7, two, 2, 0, 0});
    Launch r2{.nb = 1, .pipelined = true};
    r2.pipe_r2 = 1;
    cases.push_back({Fmt::kNvfp4, 4, r2, 3});
  }
  prepare_ = true;  // packed weights (the engine's layout; the NVFP4 ring's bulk copies need it)
  for (const Case& c : cases) {
    Launch off = c.l;
    off.pdl_light = true;
    off.cc = ops_->device().cc_major * 10 + ops_->device().cc_minor;
    Launch on = off;
    on.early_gate_up = true;
    sm_override_ = c.sms;
    shared_ = c.shared;
    bad_every_ = c.bad;
    const Tensor a = check(c.f, c.T, 512, 256, 8, 4, Routing::kRandom, off);
    const int64_t before = grouped_early_gate_up_calls();
    const Tensor b = check(c.f, c.T, 512, 256, 8, 4, Routing::kRandom, on);
    const int64_t slots = c.T * (4 + (c.shared > 0 ? 1 : 0));
    EXPECT_EQ(grouped_early_gate_up_calls() - before, slots <= 32 ? 1 : 0)
        << name(c.f) << " T " << c.T << " nb " << c.l.nb;
    EXPECT_EQ(differing_floats(a, b), 0) << name(c.f) << " T " << c.T << " nb " << c.l.nb << " sms "
                                         << c.sms << " shared " << c.shared << " bad " << c.bad;
    // down too, every call of <= 32 slots, then only those of <= 8
    for (int bound : {32, 8}) {
      Launch both = on;
      both.early_down_max_slots = bound;
      const int64_t before_down = grouped_early_down_calls();
      const Tensor d = check(c.f, c.T, 512, 256, 8, 4, Routing::kRandom, both);
      EXPECT_EQ(grouped_early_down_calls() - before_down, slots <= bound ? 1 : 0)
          << name(c.f) << " T " << c.T << " nb " << c.l.nb << " bound " << bound;
      EXPECT_EQ(differing_floats(a, d), 0)
          << "early down, bound " << bound << ": " << name(c.f) << " T " << c.T << " nb " << c.l.nb
          << " sms " << c.sms << " shared " << c.shared << " bad " << c.bad;
    }
  }
  sm_override_ = 0;
  shared_ = 0;
  bad_every_ = 0;
  prepare_ = false;
}

// GroupedLaunch::group_yields (gate_up launched when the grouping's blocks exit, the grouping's
// carveout sized for the ring's CTAs) changes where CTAs run, not what they compute: the same bits
// as without, for every ring format, with and without the early lists.
TEST_F(MoeGroupedTest, GroupingPlacementIsBitIdentical) {
  if (ops_->device().cc_major < 9) GTEST_SKIP() << "programmatic dependent launch needs sm_90";
  prepare_ = true;
  for (Fmt f : kFmts)
    for (int64_t T : {1, 3, 8, 40}) {
      Launch off{.nb = 1, .pipelined = true};
      off.pdl_light = true;
      off.early_gate_up = true;
      off.early_down_max_slots = 16;
      off.cc = ops_->device().cc_major * 10 + ops_->device().cc_minor;
      const Tensor a = check(f, T, 512, 256, 8, 4, Routing::kRandom, off);
      Launch on = off;
      on.group_yields = true;
      const Tensor b = check(f, T, 512, 256, 8, 4, Routing::kRandom, on);
      EXPECT_EQ(differing_floats(a, b), 0) << name(f) << " T " << T;
    }
  prepare_ = false;
}

// Programmatic dependent launch (GroupedLaunch::pdl; the heuristic sets it for FP8 on sm_90):
// every kernel of a call waits for its predecessor before it touches memory, so the results are
// the same bits as without it, for every kernel family: register streaming, the ring with
// stream-K, the tile and warpgroup-MMA GEMMs (FP8 activations: the quantization launch between
// the GEMMs), the hybrid, and the multi-block grouping (more than 8192 slots).
TEST_F(MoeGroupedTest, ProgrammaticDependentLaunchIsBitIdentical) {
  if (ops_->device().cc_major < 9) GTEST_SKIP() << "programmatic dependent launch needs sm_90";
  struct Case {
    Fmt f;
    int64_t T;
    Launch l;
  };
  const bool sm90 = ops_->device().cc_major == 9 && ops_->device().cc_minor == 0;
  std::vector<Case> cases = {
      {Fmt::kFp8, 5, Launch{.nb = 1}},
      {Fmt::kBf16, 40, Launch{.nb = 2}},
      {Fmt::kNvfp4, 9, Launch{.nb = 1, .pipelined = true}},
      {Fmt::kFp8, 700, Launch{.nb = 2, .pipelined = true}},
      {Fmt::kBf16, 300, Launch{.nb = 16, .tc = true}},
      {Fmt::kNvfp4, 3000, Launch{.nb = 4}},  // 12000 slots: the multi-block grouping
  };
  if (sm90) {
    cases.push_back({Fmt::kFp8, 300, Launch{.nb = 16, .tc = true, .wgmma = true, .fp8_act = true}});
    cases.push_back({Fmt::kFp8, 200, Launch{.nb = 2, .wgmma_min_tokens = 40, .fp8_act = true}});
  }
  for (const Case& c : cases) {
    Launch off = c.l, on = c.l;
    off.pdl = false;
    on.pdl = true;
    const Tensor a = check(c.f, c.T, 256, 128, 8, 4, Routing::kRandom, off);
    const Tensor b = check(c.f, c.T, 256, 128, 8, 4, Routing::kRandom, on);
    EXPECT_EQ(differing_floats(a, b), 0) << name(c.f) << " T " << c.T << " nb " << c.l.nb;
    // GroupedLaunch::pdl_light: PDL only for gate_up after the grouping and the combine after
    // down.
    Launch light = off;
    light.pdl_light = true;
    const Tensor d = check(c.f, c.T, 256, 128, 8, 4, Routing::kRandom, light);
    EXPECT_EQ(differing_floats(a, d), 0)
        << name(c.f) << " T " << c.T << " nb " << c.l.nb << ": pdl_light";
  }
  // GroupedLaunch::hybrid_pdl: only the hybrid's warpgroup-MMA (and FP8 quantization) launches
  // with PDL, the streaming ones without; the threshold splits the experts (~100 tokens each)
  // between the two kernels.
  if (sm90)
    for (Fmt f : kFmts) {
      Launch off{.nb = 2, .pipelined = f == Fmt::kNvfp4};
      off.wgmma_min_tokens = 100;
      Launch on = off;
      on.hybrid_pdl = true;
      auto run = [&](const Launch& l) {
        return check(f, 200, 256, 128, 8, 4, Routing::kRandom, l);
      };
      const Tensor a = run(off);
      EXPECT_EQ(differing_floats(a, run(on)), 0) << name(f) << ": hybrid_pdl";
      // GroupedLaunch::hybrid_min_bytes: beyond the qualifying experts' streamed bytes no expert
      // takes the warpgroup-MMA GEMM (the bits of the launch without the hybrid); at 1 byte the
      // hybrid's bits.
      Launch gate = off, plain = off;
      gate.hybrid_min_bytes = 1e15;
      plain.wgmma_min_tokens = 0;
      const Tensor g0 = run(plain);
      EXPECT_EQ(differing_floats(run(gate), g0), 0) << name(f) << ": hybrid_min_bytes above";
      EXPECT_GT(differing_floats(a, g0), 0) << name(f) << ": the hybrid changes bits";
      gate.hybrid_min_bytes = 1;
      EXPECT_EQ(differing_floats(run(gate), a), 0) << name(f) << ": hybrid_min_bytes below";
      // GroupedLaunch::hybrid_min_share: beyond the bytes bound, the hybrid engages when the
      // qualifying experts (some of the 8 at ~100 tokens each) hold the share of the 8-token
      // tiles: at 0.1% their bits, at 100% (not every expert qualifies) the streaming bits.
      gate.hybrid_min_bytes = 1e15;
      gate.hybrid_min_share = 0.001;
      EXPECT_EQ(differing_floats(run(gate), a), 0) << name(f) << ": hybrid_min_share below";
      gate.hybrid_min_share = 1;
      EXPECT_EQ(differing_floats(run(gate), g0), 0) << name(f) << ": hybrid_min_share above";
      // ... counting only experts of at least hybrid_share_min_tokens: none has 400, all of those
      // above 100 have at least 101.
      gate.hybrid_min_share = 0.001;
      gate.hybrid_share_min_tokens = 400;
      EXPECT_EQ(differing_floats(run(gate), g0), 0)
          << name(f) << ": hybrid_share_min_tokens above every expert";
      gate.hybrid_share_min_tokens = 101;
      EXPECT_EQ(differing_floats(run(gate), a), 0)
          << name(f) << ": hybrid_share_min_tokens below the busiest expert";
      // T 60 (~30 tokens per expert): every big tile narrow (BF16: the 64-token tile GEMM).
      off.wgmma_min_tokens = on.wgmma_min_tokens = 20;
      EXPECT_EQ(differing_floats(check(f, 60, 256, 128, 8, 4, Routing::kRandom, off),
                                 check(f, 60, 256, 128, 8, 4, Routing::kRandom, on)),
                0)
          << name(f) << ": hybrid_pdl, narrow big tiles";
    }
}

// CudaOps::set_moe_fp8_activations(false) (generate --moe-f16-activations): FP8 experts on the
// heuristic's warpgroup-MMA launch (75 tokens per expert) with F16 activations, within the 16-bit
// tolerance, and not the E4M3 result.
TEST_F(MoeGroupedTest, CudaOpsCanKeepF16Activations) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  const Tensor y8 = check(Fmt::kFp8, 300, 256, 128, 8, 2);
  f16_act_ = true;
  const Tensor y16 = check(Fmt::kFp8, 300, 256, 128, 8, 2);
  f16_act_ = false;
  EXPECT_GT(rel_error(y8, y16), 1e-3) << "set_moe_fp8_activations(false) made no difference";
}

// The E4M3 activation quantization, bit for bit against quant::fp8_act_block_quantize per row:
// the group kernel's x codes and scales, and moe_quant_rows over the rows of a tile list (other
// rows untouched), with block magnitudes from 1e-2 to 1e2 and an all-zero block.
TEST_F(MoeGroupedTest, Fp8ActivationQuantizationIsFp8ActBlockQuantize) {
  auto expect_rows = [&](const float* vals, int64_t rows, int64_t K, const uint8_t* q,
                         const float* qs, const char* what) {
    std::vector<uint8_t> wq(K);
    std::vector<float> ws(K / 128);
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; ++r) {
      quant::fp8_act_block_quantize(vals + r * K, 1, K, 128, wq.data(), ws.data());
      bad += std::memcmp(wq.data(), q + r * K, K) != 0 ||
             std::memcmp(ws.data(), qs + r * (K / 128), 4 * (K / 128)) != 0;
    }
    EXPECT_EQ(bad, 0) << what << ": rows whose codes or scales differ";
  };
  auto scaled = [](int64_t rows, int64_t K, uint32_t seed) {
    Tensor v = randn({rows, K}, seed);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> ex(-2.f, 2.f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < K / 128; ++b) {
        const float m = r == 3 && b == 1 ? 0.f : std::pow(10.f, ex(rng));
        for (int64_t k = 0; k < 128; ++k) v.data<float>()[r * K + b * 128 + k] *= m;
      }
    return v;
  };
  {  // the group kernel: x [T, D] f32 -> codes + scales (and the rest of its work)
    const int64_t T = 6, D = 384, K = 2, E = 4;
    const Tensor x = scaled(T, D, 21);
    std::vector<int32_t> ids(T * K);
    for (int64_t i = 0; i < T * K; ++i) ids[i] = static_cast<int32_t>(i % E);
    TensorView xd = dev_->to_device(x), idd = dev_->to_device(i32(ids, {T, K})),
               wd = dev_->to_device(randn({T, K}, 5));
    MoeGroupParams gp = group_inputs(xd, idd, K, T, D, K, E, GroupedFmt::kFp8Block);
    gp.xa = dev_->poisoned({T, D}, DType::kF32).raw();
    gp.sorted_slot = dev_->poisoned({T * K}, DType::kI32).data<int32_t>();
    gp.max_tiles = grouped_max_tiles(T, K, E, 8);
    gp.tiles = dev_->poisoned({gp.max_tiles, 4}, DType::kI32).data<int32_t>();
    gp.num_tiles = dev_->poisoned({2}, DType::kI32).data<int32_t>();
    gp.route_w = wd.data<float>();
    gp.route_w_stride = K;
    gp.slot_w = dev_->poisoned({T * K}, DType::kF32).data<float>();
    TensorView q = dev_->poisoned({T, D}, DType::kU8),
               qs = dev_->poisoned({T, D / 128}, DType::kF32);
    gp.xq = q.data<uint8_t>();
    gp.xq_scale = qs.data<float>();
    launch_moe_group(gp, ops_->stream());
    const Tensor qh = dev_->to_host(q), sh = dev_->to_host(qs);
    expect_rows(x.data<float>(), T, D, qh.data<uint8_t>(), sh.data<float>(), "moe_group x");
  }
  {  // moe_quant_rows: the rows of 3 tiles of a 40-row h [40, 384] (F16)
    const int64_t rows = 40, I = 384;
    const Tensor v = scaled(rows, I, 33), h16 = cast(v, DType::kF16);
    Tensor vf = Tensor::empty({rows, I}, DType::kF32);  // the F16 values the kernel sees
    for (int64_t i = 0; i < rows * I; ++i) vf.data<float>()[i] = f16_value(h16.data<uint16_t>()[i]);
    const std::vector<int32_t> tl = {0, 0, 5, 0, 1, 9, 20, 0, 2, 30, 3, 0, 7, 35, 4, 0};
    const std::vector<int32_t> nt = {3};
    TensorView hd = dev_->to_device(h16), td = dev_->to_device(i32(tl, {4, 4})),
               ntd = dev_->to_device(i32(nt, {1}));
    TensorView q = dev_->poisoned({rows, I}, DType::kU8),
               qs = dev_->poisoned({rows, I / 128}, DType::kF32);
    const Tensor q0 = dev_->to_host(q);
    launch_moe_quant_rows(hd.raw(), I, td.data<int32_t>(), ntd.data<int32_t>(), 4,
                          q.data<uint8_t>(), qs.data<float>(), 2, ops_->stream());
    const Tensor qh = dev_->to_host(q), sh = dev_->to_host(qs);
    for (const auto& [r0, n] : {std::pair<int64_t, int64_t>{0, 5}, {9, 20}, {30, 3}})
      expect_rows(vf.data<float>() + r0 * I, n, I, qh.data<uint8_t>() + r0 * I,
                  sh.data<float>() + r0 * (I / 128), "moe_quant_rows");
    int64_t touched = 0;  // rows outside the 3 tiles (the 4th is past num_tiles)
    for (int64_t r = 0; r < rows; ++r)
      if (!((r < 5) || (r >= 9 && r < 29) || (r >= 30 && r < 33)))
        touched += std::memcmp(qh.data<uint8_t>() + r * I, q0.data<uint8_t>() + r * I, I) != 0;
    EXPECT_EQ(touched, 0) << "moe_quant_rows wrote rows outside its tiles";
  }
}

// The hybrid's three lists (MoeGroupParams::big_min with big tiles of 64 tokens, big2_min,
// big2_min_share): experts below big_min on the streaming list, big ones on the 64-token list,
// those of big2_min tokens or more on the 128-token list only where they hold the share of the
// big experts' tokens; against a host grouping, for shares on either side of the routing's.
TEST_F(MoeGroupedTest, GroupingThreeListsMatchHost) {
  const int64_t T = 300, K = 4, E = 16, D = 64;
  std::mt19937 rng(11);
  std::vector<int32_t> ids(T * K);
  for (int64_t t = 0; t < T; ++t) {  // K distinct experts, skewed toward low ids
    std::vector<double> w(E);
    for (int64_t e = 0; e < E; ++e) w[e] = 1.0 / static_cast<double>(e + 1);
    for (int64_t k = 0; k < K; ++k) {
      std::discrete_distribution<int> d(w.begin(), w.end());
      const int e = d(rng);
      ids[t * K + k] = e;
      w[e] = 0;
    }
  }
  std::vector<int64_t> count(E, 0);
  for (int32_t e : ids) ++count[e];
  const int big_min = 40, big2_min = 96;
  int64_t big_tok = 0, big2_tok = 0;
  for (int64_t c : count) {
    big_tok += c >= big_min ? c : 0;
    big2_tok += c >= big2_min ? c : 0;
  }
  const double share = static_cast<double>(big2_tok) / static_cast<double>(big_tok);
  ASSERT_GT(big2_tok, 0) << "routing without an expert of " << big2_min << " tokens";
  ASSERT_LT(big2_tok, big_tok) << "routing without big experts below " << big2_min;
  const Tensor x = randn({T, D}, 5);
  Tensor rw = Tensor::empty({T * K}, DType::kF32);
  for (int64_t i = 0; i < T * K; ++i) rw.data<float>()[i] = 0.25f;
  TensorView xd = dev_->to_device(x), idd = dev_->to_device(i32(ids, {T * K})),
             wd = dev_->to_device(rw);
  for (double sh : {0.0, share - 0.05, share + 0.05}) {
    SCOPED_TRACE("share " + std::to_string(sh) + " (routing's " + std::to_string(share) + ")");
    const int share_k = sh > 0 ? static_cast<int>(std::ceil(sh * 1000)) : 0;
    const bool split = share_k == 0 || 1000 * big2_tok >= share_k * big_tok;
    std::vector<int32_t> want[3];  // streaming (8-token), 64-token, 128-token tiles
    for (int64_t e = 0, run = 0; e < E; ++e) {
      const int64_t c = count[e];
      const int list = c < big_min ? 0 : split && c >= big2_min ? 2 : 1;
      const int64_t tt = list == 0 ? 8 : list == 1 ? 64 : 128;
      for (int64_t j = 0; j * tt < c; ++j)
        for (int64_t v : {e, run + j * tt, std::min<int64_t>(tt, c - j * tt), int64_t{0}})
          want[list].push_back(static_cast<int32_t>(v));
      run += c;
    }
    MoeGroupParams gp = group_inputs(xd, idd, K, T, D, K, E, GroupedFmt::kBf16);
    gp.tile_tokens = 8;
    gp.max_tiles = grouped_max_tiles(T, K, E, 8);
    TensorView sorted = dev_->poisoned({T * K}, DType::kI32),
               tiles = dev_->poisoned({gp.max_tiles, 4}, DType::kI32),
               num = dev_->poisoned({3}, DType::kI32),
               slot_w = dev_->poisoned({T * K}, DType::kF32);
    gp.sorted_slot = sorted.data<int32_t>();
    gp.tiles = tiles.data<int32_t>();
    gp.num_tiles = num.data<int32_t>();
    gp.route_w = wd.data<float>();
    gp.route_w_stride = K;
    gp.slot_w = slot_w.data<float>();
    gp.xa = dev_->poisoned({T, D}, DType::kF32).raw();
    gp.big_min = big_min;
    gp.big_tile = kGroupedF4p2Tile;
    gp.big_tiles = gp.tiles + 4 * (T * K / 8 + E);  // (after the streaming list's room)
    gp.num_big = gp.num_tiles + 1;
    gp.big2_min = big2_min;
    gp.big2_min_share = share_k;
    gp.big2_tiles = gp.big_tiles + 4 * (T * K / 64 + E);
    gp.num_big2 = gp.num_tiles + 2;
    ASSERT_LE((T * K / 8 + E) + (T * K / 64 + E) + (T * K / 128 + E), gp.max_tiles);
    launch_moe_group(gp, ops_->stream());
    const Tensor th = dev_->to_host(tiles), nh = dev_->to_host(num),
                 sh_sorted = dev_->to_host(sorted);
    const int32_t* t32 = th.data<int32_t>();
    const int64_t base[3] = {0, 4 * (T * K / 8 + E), 4 * (T * K / 8 + E) + 4 * (T * K / 64 + E)};
    for (int l = 0; l < 3; ++l) {
      ASSERT_EQ(nh.data<int32_t>()[l], static_cast<int32_t>(want[l].size() / 4)) << "list " << l;
      EXPECT_TRUE(std::equal(want[l].begin(), want[l].end(), t32 + base[l])) << "list " << l;
    }
    EXPECT_EQ(want[2].empty(), !split);
    const std::vector<int32_t> want_sorted = host_sorted_slots(ids, T, K, E, false);
    EXPECT_TRUE(std::equal(want_sorted.begin(), want_sorted.end(), sh_sorted.data<int32_t>()))
        << "sorted slots differ";
  }
}

// moe_group's outputs against a host grouping: slots sorted by expert (slot order within one),
// the tile list in expert order, the tile count, the routing weight per slot. Decode batches (up
// to 32 slots: placed by warp 0 alone) and larger ones (the block-wide placement) over the same
// cases: experts without slots, all slots on one expert, bad ids (no slot), a shared expert on the
// last slot of every token, several tile widths.
TEST_F(MoeGroupedTest, GroupingMatchesHostGrouping) {
  struct Case {
    int64_t T, K, E;
    bool shared;
    int tile_tokens;
    int skew;  // 0: random ids, 1: every id 0, 2: every 5th id out of range
  };
  const Case cases[] = {
      {1, 8, 256, false, 8, 0},  {4, 8, 256, false, 8, 0}, {3, 9, 257, true, 8, 0},
      {2, 4, 16, false, 16, 1},  {8, 4, 16, false, 8, 2},  {1, 1, 1, false, 8, 0},
      {32, 1, 4, false, 8, 1},   {5, 6, 7, true, 8, 2},    {9, 4, 16, false, 8, 0},
      {40, 8, 64, false, 16, 2}, {33, 9, 33, true, 8, 1},  {300, 8, 256, false, 8, 0}};
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    SCOPED_TRACE("T " + std::to_string(c.T) + " K " + std::to_string(c.K) + " E " +
                 std::to_string(c.E) + (c.shared ? " shared" : "") + " skew " +
                 std::to_string(c.skew));
    const int64_t KR = c.shared ? c.K - 1 : c.K, ER = c.shared ? c.E - 1 : c.E, TK = c.T * c.K;
    std::vector<int32_t> ids(std::max<int64_t>(c.T * KR, 1));
    for (int64_t i = 0; i < c.T * KR; ++i)
      ids[i] = c.skew == 1 ? 0
               : c.skew == 2 && i % 5 == 4
                   ? static_cast<int32_t>(i % 2 ? ER : -1)
                   : static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, ER - 1)(rng));
    std::vector<float> rw(std::max<int64_t>(c.T * KR, 1));
    for (float& w : rw) w = std::uniform_real_distribution<float>(0.1f, 1.f)(rng);
    // Host grouping.
    auto slot_expert = [&](int64_t s) -> int64_t {
      const int64_t t = s / c.K, k = s % c.K;
      if (c.shared && k == c.K - 1) return c.E - 1;
      const int32_t e = ids[t * KR + k];
      return e >= 0 && e < ER ? e : -1;
    };
    std::vector<int64_t> count(c.E, 0);
    for (int64_t s = 0; s < TK; ++s)
      if (slot_expert(s) >= 0) ++count[slot_expert(s)];
    std::vector<int32_t> want_tiles;
    for (int64_t e = 0, run = 0; e < c.E; ++e) {
      for (int64_t j = 0; j * c.tile_tokens < count[e]; ++j)
        for (int64_t v :
             {e, run + j * c.tile_tokens,
              std::min<int64_t>(c.tile_tokens, count[e] - j * c.tile_tokens), int64_t{0}})
          want_tiles.push_back(static_cast<int32_t>(v));
      run += count[e];
    }
    const std::vector<int32_t> want_sorted = host_sorted_slots(ids, c.T, KR, ER, c.shared);
    // Device grouping (poisoned outputs).
    const int64_t D = 64;
    const Tensor x = randn({c.T, D}, 3);
    Tensor rwt = Tensor::empty({static_cast<int64_t>(rw.size())}, DType::kF32);
    std::copy(rw.begin(), rw.end(), rwt.data<float>());
    TensorView xd = dev_->to_device(x),
               idd = dev_->to_device(i32(ids, {static_cast<int64_t>(ids.size())})),
               wd = dev_->to_device(rwt);
    MoeGroupParams gp = group_inputs(xd, idd, KR, c.T, D, c.K, c.E, GroupedFmt::kBf16);
    gp.shared = c.shared;
    gp.tile_tokens = c.tile_tokens;
    gp.max_tiles = grouped_max_tiles(c.T, c.K, c.E, c.tile_tokens);
    TensorView sorted = dev_->poisoned({TK}, DType::kI32),
               tiles = dev_->poisoned({gp.max_tiles, 4}, DType::kI32),
               num = dev_->poisoned({2}, DType::kI32), slot_w = dev_->poisoned({TK}, DType::kF32);
    gp.sorted_slot = sorted.data<int32_t>();
    gp.tiles = tiles.data<int32_t>();
    gp.num_tiles = num.data<int32_t>();
    gp.route_w = wd.data<float>();
    gp.route_w_stride = KR;
    gp.slot_w = slot_w.data<float>();
    launch_moe_group(gp, ops_->stream());
    const Tensor sh = dev_->to_host(sorted), th = dev_->to_host(tiles), nh = dev_->to_host(num),
                 wh = dev_->to_host(slot_w);
    const int64_t nt = static_cast<int64_t>(want_tiles.size()) / 4;
    ASSERT_EQ(nh.data<int32_t>()[0], nt);
    EXPECT_TRUE(std::equal(want_tiles.begin(), want_tiles.end(), th.data<int32_t>()))
        << "tile list differs";
    EXPECT_TRUE(std::equal(want_sorted.begin(), want_sorted.end(), sh.data<int32_t>()))
        << "sorted slots differ";
    for (int64_t s = 0; s < TK; ++s) {
      const int64_t t = s / c.K, k = s % c.K;
      const float w = c.shared && k == c.K - 1 ? 1.f : rw[t * KR + k];
      ASSERT_EQ(wh.data<float>()[s], w) << "slot " << s;
    }
  }
}

// The hybrid launch: experts with at least wgmma_min_tokens tokens go to the warpgroup-MMA GEMM
// (big tiles list), the others to the streaming GEMM, in one grouping: thresholds below, between
// and above the per-expert counts, every token on one expert, and T below the threshold (no
// launch).
TEST_F(MoeGroupedTest, HybridSplitsExpertsByTokenCount) {
  if (ops_->device().cc_major != 9 || ops_->device().cc_minor != 0)
    GTEST_SKIP() << "wgmma needs sm_90";
  for (Fmt f : kFmts)
    for (int nb : {1, 2}) {
      for (int hmin : {1, 60, 80, 400}) {  // 300 tokens x 2 over 8 experts: ~75 each
        check(f, 300, 256, 128, 8, 2, Routing::kRandom, Launch{.nb = nb, .wgmma_min_tokens = hmin});
      }
      check(f, 300, 384, 256, 8, 1, Routing::kOne, Launch{.nb = nb, .wgmma_min_tokens = 32});
      check(f, 1000, 256, 128, 64, 3, Routing::kRandom, Launch{.nb = nb, .wgmma_min_tokens = 48});
      check(f, 20, 256, 128, 8, 2, Routing::kRandom, Launch{.nb = nb, .wgmma_min_tokens = 32});
      // T <= 64: big tiles of <= 64 tokens (grouped_hybrid_narrow), every expert big.
      check(f, 60, 256, 128, 8, 2, Routing::kRandom, Launch{.nb = nb, .wgmma_min_tokens = 1});
    }
}

// The shared expert rides along as expert E on slot K of every token (weight 1): through
// CudaOps (heuristic; up to moe_shared_fold_max_tokens), every GEMM kernel (streaming, rings with
// stream-K splits, tc, wgmma, the hybrid, where the shared expert's T tokens make it the big
// one), packed weights, and bad routed ids. Above moe_shared_fold_max_tokens tokens, or with
// another width (2 I), CudaOps runs it alone in the grouped kernels after the routed ones
// (accumulating into y); with routed experts on the token-major path, through linear.
TEST_F(MoeGroupedTest, SharedExpertRidesAlong) {
  const bool sm90 = ops_->device().cc_major == 9 && ops_->device().cc_minor == 0;
  shared_ = 1;
  for (Fmt f : kFmts) {
    for (int64_t T : {1, 5, 64, 257}) check(f, T, 256, 128, 16, 4);
    check(f, 300, 128, 128, 8, 1, Routing::kOne);
    for (int nb : {1, 2, 4})
      for (bool pipe : {false, true})
        check(f, 45, 384, 256, 8, 4, Routing::kRandom, Launch{.nb = nb, .pipelined = pipe});
    sm_override_ = 7;
    check(f, 37, 384, 256, 8, 4, Routing::kRandom,
          Launch{.nb = 1, .warps_per_cta = 4, .ctas_per_sm = 2, .pipelined = true});
    sm_override_ = 0;
    if (sm90) {
      check(f, 300, 256, 128, 8, 2, Routing::kRandom, Launch{.nb = 16, .tc = true, .wgmma = true});
      // 120 tokens over 16 experts: only the shared expert reaches 40 (the wgmma GEMM).
      check(f, 120, 256, 128, 16, 2, Routing::kRandom, Launch{.nb = 2, .wgmma_min_tokens = 40});
    }
    prepare_ = true;
    check(f, 45, 384, 256, 8, 4);
    check(f, 64, 384, 256, 8, 4, Routing::kRandom, Launch{.nb = 2, .pipelined = true});
    prepare_ = false;
    bad_every_ = 3;
    check(f, 45, 384, 256, 8, 4, Routing::kRandom, Launch{.nb = 2, .pipelined = true});
    check(f, 5, 256, 128, 8, 4);
    check(f, 77, 256, 128, 8, 3);  // apart: the shared expert's sum keeps the NaN rows
    bad_every_ = 0;
  }
  check(Fmt::kBf16, 700, 256, 128, 4, 2, Routing::kRandom, Launch{.nb = 8, .tc = true});
  prepare_ = true;  // apart (T > moe_shared_fold_max_tokens), packed
  for (Fmt f : kFmts) check(f, 300, 384, 256, 8, 4);
  prepare_ = false;
  shared_ = 2;  // 2 I: not the routed shape, runs alone in the grouped kernels
  for (Fmt f : kFmts) {
    check(f, 5, 256, 128, 16, 4);
    check(f, 300, 256, 128, 16, 4);
    prepare_ = true;
    check(f, 64, 384, 256, 8, 4);
    prepare_ = false;
  }
  shared_ = 1;  // D 192: not a multiple of NVFP4's 128-k step, the token-major kernels
  check(Fmt::kNvfp4, 9, 192, 64, 8, 2);
  shared_ = 0;
}

// Small shared-expert cases for compute-sanitizer (scripts/gpu-test.sh runs memcheck and
// racecheck on this test): the folded slot through CudaOps and a stream-K ring, the shared
// expert alone (2 I; T 60: its stream-K ring launch), the token-major path's linear.
TEST_F(MoeGroupedTest, SharedExpertSmall) {
  shared_ = 1;
  for (Fmt f : kFmts) {
    check(f, 5, 256, 128, 16, 4);
    sm_override_ = 7;
    check(f, 9, 384, 256, 8, 2, Routing::kRandom,
          Launch{.nb = 2, .warps_per_cta = 4, .ctas_per_sm = 2, .pipelined = true});
    sm_override_ = 0;
  }
  shared_ = 2;
  check(Fmt::kNvfp4, 3, 256, 128, 8, 2);
  check(Fmt::kBf16, 60, 256, 128, 8, 2);
  shared_ = 1;
  check(Fmt::kNvfp4, 5, 192, 64, 8, 2);
  shared_ = 0;
}

// At many tokens per expert the heuristic takes the tc GEMM (BF16) and CudaOps runs it.
TEST_F(MoeGroupedTest, HeuristicTakesTileGemm) {
  const MoeShape s{2048, 256, 128, 8, 2, GroupedFmt::kBf16};
  EXPECT_TRUE(moe_heuristic_config(s, moe_limits(ops_->device())).tc);
  check(Fmt::kBf16, 2048, 256, 128, 8, 2);
  check(Fmt::kBf16, 1023, 384, 256, 4, 1);
}

// MoeKernelConfig::regs_per_thread (what moe_config_fits counts) against the compiled kernels:
// never fewer registers than a kernel uses (a configuration that "fits" would get fewer CTAs),
// and for the streaming and ring kernels the table stays tight (its use rounded up to 8).
TEST_F(MoeGroupedTest, RegisterTableMatchesTheKernels) {
  const MoeDeviceLimits lim = moe_limits(ops_->device());
  for (GroupedFmt f : {GroupedFmt::kBf16, GroupedFmt::kFp8Block, GroupedFmt::kNvfp4}) {
    std::vector<MoeKernelConfig> configs;
    for (int nb : {1, 2, 4, 8})
      for (bool pipe : {false, true})
        if (nb != 8 || f == GroupedFmt::kBf16) configs.push_back(MoeKernelConfig{nb, 4, 1, pipe});
    if (f == GroupedFmt::kBf16)
      for (int nb : {8, 16}) configs.push_back(MoeKernelConfig{nb, 8, 1, false, true});
    if (lim.cc == 90) configs.push_back(MoeKernelConfig{16, 8, 1, false, true, true});
    for (const MoeKernelConfig& c : configs) {
      const int used = grouped_gemm_regs(f, moe_launch(c, lim, f, 0)), table = c.regs_per_thread(f);
      EXPECT_GE(table, used) << "format " << static_cast<int>(f) << " nb " << c.nb << " pipelined "
                             << c.pipelined << " tc " << c.tc << " wgmma " << c.wgmma;
      if (!c.tc) {
        EXPECT_LT(table, used + 8)
            << "format " << static_cast<int>(f) << " nb " << c.nb << " pipelined " << c.pipelined
            << ": the table is looser than the kernel (" << used << ")";
      }
    }
  }
}

// The streaming and ring kernels declare no static shared memory (grouped_gemm_static_smem's
// NOTE: the rings fill the 196 KB carveout exactly; anything more halves the L1 the activations
// are read through).
TEST_F(MoeGroupedTest, RingKernelsHaveNoStaticSharedMemory) {
  const MoeDeviceLimits lim = moe_limits(ops_->device());
  for (GroupedFmt f : {GroupedFmt::kBf16, GroupedFmt::kFp8Block, GroupedFmt::kNvfp4})
    for (int nb : {1, 2, 4})
      for (bool pipe : {false, true})
        EXPECT_EQ(
            grouped_gemm_static_smem(f, moe_launch(MoeKernelConfig{nb, 4, 4, pipe}, lim, f, 0)), 0)
            << "format " << static_cast<int>(f) << " nb " << nb << " pipelined " << pipe;
}

// Weights in the packed layout (CudaOps::prepare_experts, dequant_bits.h) give bit for bit the
// row-major results with every GEMM kernel and format: register streaming (8 to 64-token tiles),
// the cp.async ring and the bulk-copy ring (with stream-K splits on a small grid), the tc tile
// GEMM (BF16), the warpgroup-MMA GEMM and the hybrid.
TEST_F(MoeGroupedTest, PackedWeightsMatchRowMajor) {
  const bool sm90 = ops_->device().cc_major == 9 && ops_->device().cc_minor == 0;
  struct Case {
    int64_t T, D, I, E, K;
    std::optional<Launch> l;
    int sms;
    bool bf16_only = false;
  };
  std::vector<Case> cases = {
      {5, 256, 128, 16, 4, std::nullopt, 0},  // CudaOps::moe_experts, heuristic
      {64, 384, 256, 8, 4, std::nullopt, 0},
      {45, 384, 256, 8, 4, Launch{.nb = 1}, 0},
      {45, 640, 384, 8, 2, Launch{.nb = 2}, 0},
      {200, 256, 128, 4, 2, Launch{.nb = 4}, 0},
      {45, 384, 256, 8, 4, Launch{.nb = 1, .pipelined = true}, 0},
      {300, 640, 384, 8, 2, Launch{.nb = 2, .pipelined = true}, 0},
      {37, 384, 256, 8, 4, Launch{.nb = 1, .warps_per_cta = 4, .pipelined = true}, 3},  // split
  };
  cases.push_back({300, 384, 256, 4, 2, Launch{.nb = 8}, 0, true});
  cases.push_back({700, 256, 128, 4, 2, Launch{.nb = 8, .tc = true}, 0, true});
  cases.push_back({900, 256, 256, 4, 2, Launch{.nb = 16, .tc = true}, 0, true});
  if (sm90) {
    cases.push_back({300, 256, 128, 8, 2, Launch{.nb = 16, .tc = true, .wgmma = true}, 0});
    cases.push_back({200, 640, 384, 8, 2, Launch{.nb = 2, .wgmma_min_tokens = 40}, 0});
  }
  for (Fmt f : kFmts)
    for (const Case& c : cases) {
      if (c.bf16_only && f != Fmt::kBf16) continue;
      sm_override_ = c.sms;
      prepare_ = false;
      const Tensor a = check(f, c.T, c.D, c.I, c.E, c.K, Routing::kRandom, c.l);
      prepare_ = true;
      const Tensor b = check(f, c.T, c.D, c.I, c.E, c.K, Routing::kRandom, c.l);
      ASSERT_TRUE(a.defined() && b.defined());
      EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), a.nbytes()), 0)
          << name(f) << " T " << c.T << " D " << c.D << " I " << c.I << " launch "
          << (c.l ? c.l->nb : 0) << " pipelined " << (c.l && c.l->pipelined);
    }
  sm_override_ = 0;
  prepare_ = false;
}

// prepare_experts on a layer whose experts share matrices (one matrix object, several experts)
// packs each matrix once, and a second call changes nothing.
TEST_F(MoeGroupedTest, PrepareExpertsPacksSharedMatricesOnce) {
  const int64_t T = 9, D = 384, I = 256, E = 6, K = 3;
  const Mat g = make(Fmt::kNvfp4, I, D, 11), u = make(Fmt::kNvfp4, I, D, 12),
            d = make(Fmt::kNvfp4, D, I, 13), d2 = make(Fmt::kNvfp4, D, I, 14);
  std::vector<ops::ExpertWeights> ew_h, ew_d;
  for (int64_t e = 0; e < E; ++e) {  // experts 0..5 share gate/up; down alternates d, d2
    ew_h.push_back({g.host, u.host, e % 2 ? d2.host : d.host});
    ew_d.push_back({g.dev, u.dev, e % 2 ? d2.dev : d.dev});
  }
  Tensor x = randn({T, D}, 5);
  std::vector<int32_t> ids(T * K);
  for (int64_t t = 0; t < T; ++t)  // distinct experts per token
    for (int64_t k = 0; k < K; ++k) ids[t * K + k] = static_cast<int32_t>((t + 2 * k) % E);
  Tensor ids_h = i32(ids, {T, K}), wts = randn({T, K}, 6, 0.5f);
  Tensor want = Tensor::empty({T, D}, DType::kF32);
  ref_.moe_experts(want.view(), x.view(), ids_h.view(), wts.view(), ew_h, nullptr);
  TensorView xd = dev_->to_device(x), idd = dev_->to_device(ids_h), wd = dev_->to_device(wts);
  for (int round = 0; round < 2; ++round) {
    ops_->prepare_experts(ew_d, nullptr, D);
    for (const ops::ExpertWeights& ew : ew_d) EXPECT_EQ(ew.down.layout, ops::WeightLayout::kPacked);
    GroupedExperts ge;
    std::string why;
    ASSERT_TRUE(resolve_grouped_experts(ew_d, D, &ge, &why)) << why;
    EXPECT_TRUE(ge.gate_up.packed && ge.down.packed);
    // Packed and aligned (uploads): the pipelined GEMM takes bulk copies from sm_90 on with
    // 16-token tiles and more, not with 8-token ones, nor with weights 16-byte misaligned.
    EXPECT_EQ(ge.gate_up.weight_align, 16);
    EXPECT_EQ(ge.down.weight_align, 16);
    GroupedLaunch l = moe_launch(MoeKernelConfig{2, 8, 2, true}, moe_limits(ops_->device()),
                                 GroupedFmt::kNvfp4, 0);
    EXPECT_EQ(grouped_pipe_bulk(ge.gate_up, l), ops_->device().cc_major >= 9);
    l.nb = 4;
    EXPECT_EQ(grouped_pipe_bulk(ge.down, l), ops_->device().cc_major >= 9);
    MoeGemmParams shifted = ge.gate_up;  // pointers only, never launched
    shifted.s[1][0] = static_cast<const uint8_t*>(ge.gate_up.s[1][0]) + 4;
    shifted.weight_align = grouped_weight_align(shifted);
    EXPECT_EQ(shifted.weight_align, 4);
    l.nb = 2;
    EXPECT_FALSE(grouped_pipe_bulk(shifted, l));
    l.nb = 1;
    EXPECT_FALSE(grouped_pipe_bulk(ge.gate_up, l));
    TensorView y = dev_->poisoned({T, D}, DType::kF32);
    ops_->moe_experts(y, xd, idd, wd, ew_d, nullptr);
    EXPECT_LE(rel_error(dev_->to_host(y), want), kTolGrouped) << "round " << round;
  }
}

// The load-time rearrangement against the layout's definition (dequant_bits.h), byte for byte,
// data and scales.
TEST_F(MoeGroupedTest, PackKernelMatchesTheLayout) {
  auto run = [&](int64_t N, int64_t per_row, bool scales, auto offset) {
    const int64_t n = N * per_row;
    Tensor src = Tensor::empty({n}, DType::kU8);
    std::mt19937 rng(static_cast<uint32_t>(N + per_row + scales));
    for (int64_t i = 0; i < n; ++i) src.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
    TensorView s = dev_->to_device(src), dst = dev_->poisoned({n}, DType::kU8);
    if (scales)
      launch_nvfp4_pack_scales(dst.data<uint8_t>(), s.data<uint8_t>(), N, per_row * 16,
                               ops_->stream());
    else
      launch_pack_data(dst.data<uint8_t>(), s.data<uint8_t>(), N, per_row, ops_->stream());
    const Tensor got = dev_->to_host(dst);
    int64_t bad = 0;
    for (int64_t r = 0; r < N; ++r)
      for (int64_t j = 0; j < per_row; ++j)
        bad += got.data<uint8_t>()[offset(r, j)] != src.data<uint8_t>()[r * per_row + j];
    EXPECT_EQ(bad, 0) << "N " << N << " per row " << per_row << " scales " << scales;
  };
  // Data: NVFP4 / FP8 / BF16 rows (64 bytes = one step of any format) up to GLM-5's widths.
  for (auto [N, rb] : {std::pair<int64_t, int64_t>{16, 64}, {48, 192}, {2048, 3072}, {32, 12288}})
    run(N, rb, false,
        [rb = rb](int64_t r, int64_t b) { return grouped::packed_data_offset(true, rb, r, b); });
  for (auto [N, Kd] : {std::pair<int64_t, int64_t>{16, 128}, {48, 384}, {2048, 6144}})
    run(N, Kd / 16, true,
        [Kd = Kd](int64_t r, int64_t j) { return grouped::nvfp4_scale_offset(true, Kd, r, j); });
}

TEST_F(MoeGroupedTest, GlmShapeSmallBatch) {  // real widths (D 6144, I 2048), few experts
  for (Fmt f : kFmts) check(f, 5, 6144, 2048, 4, 2);
  // Through CudaOps at T 60 with every token on the same 2 of 8 experts (15 expected per expert:
  // below the full warpgroup-MMA launch's 20 / 24; moe_config_test's
  // GlmSmallBatchTakesTheHybridOnSm90 pins this launch on CPU): on sm_90 moe_launch's hybrid
  // engages (16 8-token tiles of 38 / 75 MB, above its gate) with narrow big tiles (T <= 64): FP8
  // on the warp-specialized kernel with E4M3 activations (prepare_experts' tensor maps), BF16 on
  // the 64-token tile GEMM.
  prepare_ = true;
  const MoeDeviceLimits lim = moe_limits(ops_->device());
  for (Fmt f : {Fmt::kBf16, Fmt::kFp8}) {
    const GroupedFmt gf = f == Fmt::kBf16 ? GroupedFmt::kBf16 : GroupedFmt::kFp8Block;
    const GroupedLaunch l =
        moe_launch(moe_heuristic_config({60, 6144, 2048, 8, 2, gf}, lim), lim, gf, 60);
    if (lim.cc == 90) {  // the path the comment names
      EXPECT_TRUE(grouped_hybrid(l, 60)) << name(f);
      EXPECT_LE(grouped_hybrid_min_tiles(l, gf, 6144, 2048), 16) << name(f);
      EXPECT_TRUE(grouped_hybrid_narrow(l, 60)) << name(f);
      EXPECT_EQ(l.fp8_act && l.wgmma_ws, f == Fmt::kFp8) << name(f);
    }
    check(f, 60, 6144, 2048, 8, 2, Routing::kOne);
  }
  prepare_ = false;
}

}  // namespace
}  // namespace moe::cuda::testing
