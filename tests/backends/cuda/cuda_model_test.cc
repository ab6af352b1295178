// Whole-model tests of the CUDA backend: the golden fixtures (HF transformers, tests/fixtures,
// BF16 and the quantized FP8 block-128 / NVFP4 ones) run with CudaOps, a decode step captured
// in a CUDA graph replays bit for bit like the eager step, and generate() with its decode steps
// replayed as graphs gives the eager ids without growing an arena. Tolerances: docs/numerics.md.
#include <cstring>

#include "backends/cuda/cuda_graph.h"
#include "backends/cuda/decode_graph_runner.h"
#include "cuda_test_util.h"
#include "model/loader.h"
#include "model_test_util.h"
#include "runtime/generate.h"

namespace moe::cuda::testing {
namespace {

// max |err| / max |logit| against transformers, as the reference's golden tests (BF16 and
// quantized fixtures alike: CudaOps dequantizes FP8 / NVFP4 weights exactly, f32 accumulation).
constexpr double kLogitTolerance = 1e-4;

using moe::testing::Golden;
using moe::testing::seeded_sampling;
// MOE_SOURCE_DIR_OVERRIDE: the repo root when the binary runs from another checkout.
std::filesystem::path fixture_dir(const std::string& name) {
  return moe::testing::golden_fixture_dir(name);
}

// A model on the GPU: CudaOps, the forward's device workspace, and an arena for outputs.
struct CudaHarness {
  std::unique_ptr<CudaOps> ops;
  std::unique_ptr<DeviceArena> ws, outs;
  model::LoadedModel loaded;

  model::Model& model() { return *loaded.model; }
  const model::ModelConfig& cfg() { return loaded.model->config(); }

  // Runs one step; returns logits [S][V] copied to the host.
  std::vector<std::vector<float>> step(model::KvCache& cache,
                                       std::vector<model::KvCache::Sequence*> seqs,
                                       const std::vector<std::vector<int32_t>>& tokens,
                                       model::MlaFormPolicy policy = model::MlaFormPolicy::kAuto) {
    const int64_t S = static_cast<int64_t>(seqs.size()), V = cfg().vocab_size;
    TensorView logits = poisoned_logits(S);
    std::vector<model::SequenceInput> in;
    for (int64_t s = 0; s < S; ++s) in.push_back({tokens[s], seqs[s]});
    Status st = model().forward(*ops, *ws, cache, in, logits, policy);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return download(logits, S, V);
  }
  TensorView poisoned_logits(int64_t S) {
    outs->reset();
    const int64_t V = cfg().vocab_size;
    TensorView logits = outs->alloc({S, V}, DType::kF32);
    std::vector<float> nan(S * V, std::nanf(""));
    ops->copy_from_host(logits, nan.data());
    ops->synchronize();
    return logits;
  }
  std::vector<std::vector<float>> download(ConstTensorView logits, int64_t S, int64_t V) {
    std::vector<float> flat(S * V);
    ops->copy_to_host(flat.data(), logits);
    std::vector<std::vector<float>> out(S);
    for (int64_t s = 0; s < S; ++s) out[s].assign(flat.begin() + s * V, flat.begin() + (s + 1) * V);
    return out;
  }
};

class CudaModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    MOE_GPU_OR_SKIP(h_.ops);
    h_.ws = std::make_unique<DeviceArena>(h_.ops->device().ordinal, h_.ops->stream());
    h_.outs = std::make_unique<DeviceArena>(h_.ops->device().ordinal, h_.ops->stream());
    auto r = model::load_model(fixture_dir(GetParam()), *h_.ops);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    h_.loaded = std::move(r).value();
    golden_ = moe::testing::read_golden(fixture_dir(GetParam()));
    if (GetParam().starts_with("quant/")) {
      ASSERT_NE(h_.cfg().quant.format, io::QuantFormat::kNone) << GetParam();
    }
  }
  CudaHarness h_;
  Golden golden_;
};

TEST_P(CudaModelTest, PromptLogitsMatchTransformers) {
  for (auto policy : {model::MlaFormPolicy::kNaive, model::MlaFormPolicy::kAbsorbed}) {
    model::KvCache cache(h_.cfg(), 4, 16, *h_.ops);
    model::KvCache::Sequence seq;
    std::vector<float> logits = h_.step(cache, {&seq}, {golden_.prompt}, policy)[0];
    EXPECT_LT(moe::testing::max_rel_error(logits, golden_.last_logits), kLogitTolerance)
        << GetParam() << " policy " << static_cast<int>(policy);
  }
}

TEST_P(CudaModelTest, GreedyTokensMatchTransformers) {
  model::KvCache cache(h_.cfg(), 4, 16, *h_.ops);
  runtime::GenerateOptions opt;
  opt.max_new_tokens = static_cast<int64_t>(golden_.greedy.size());
  opt.ignore_eos = true;
  auto r = runtime::generate(h_.model(), *h_.ops, *h_.ws, cache, golden_.prompt, opt);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->generated, golden_.greedy);
}

// After a warm-up step of the same shape, a decode step allocates nothing from CUDA: the
// workspace does not grow, and the step can be captured (capture fails on any allocation or
// synchronisation). The replay equals the eager step bit for bit.
TEST_P(CudaModelTest, DecodeStepGraphReplayEqualsEager) {
  const int64_t V = h_.cfg().vocab_size;
  model::KvCache cache(h_.cfg(), 8, 16, *h_.ops);
  std::vector<model::KvCache::Sequence> seqs(2);
  std::vector<int32_t> p0(golden_.prompt.begin(), golden_.prompt.end());
  std::vector<int32_t> p1(golden_.prompt.begin(), golden_.prompt.begin() + 9);
  auto first = h_.step(cache, {&seqs[0], &seqs[1]}, {p0, p1});
  std::vector<std::vector<int32_t>> next = {{moe::testing::argmax(first[0])},
                                            {moe::testing::argmax(first[1])}};
  auto warm = h_.step(cache, {&seqs[0], &seqs[1]}, next);  // sizes the arenas for decode
  next = {{moe::testing::argmax(warm[0])}, {moe::testing::argmax(warm[1])}};
  const int growths = h_.ws->growths();

  // Eager reference step, then rewind the sequences (the cache slot is rewritten identically).
  const std::vector<int64_t> lengths = {seqs[0].length, seqs[1].length};
  auto eager = h_.step(cache, {&seqs[0], &seqs[1]}, next);
  EXPECT_EQ(h_.ws->growths(), growths) << "the eager decode step grew the workspace";
  seqs[0].length = lengths[0];
  seqs[1].length = lengths[1];

  TensorView logits = h_.poisoned_logits(2);
  std::vector<model::SequenceInput> in = {{next[0], &seqs[0]}, {next[1], &seqs[1]}};
  CudaGraph graph;
  graph.begin_capture(*h_.ops);
  Status st = h_.model().forward(*h_.ops, *h_.ws, cache, in, logits);
  graph.end_capture(*h_.ops);
  ASSERT_TRUE(st.ok()) << st.to_string();
  seqs[0].length = lengths[0];  // capture ran the host side of the step but no kernel
  seqs[1].length = lengths[1];
  for (int rep = 0; rep < 2; ++rep) {
    graph.replay(*h_.ops);
    auto replayed = h_.download(logits, 2, V);
    for (int s = 0; s < 2; ++s)
      EXPECT_EQ(0, std::memcmp(replayed[s].data(), eager[s].data(), V * sizeof(float)))
          << GetParam() << " sequence " << s << " replay " << rep;
  }
  EXPECT_EQ(h_.ws->growths(), growths);
}

// DecodeGraphRunner: step 1 eager, step 2 captured and replayed, steps 3-5 replays whose
// inputs (ids, positions, seq_lens, page table) were refreshed in place. Every step's logits
// equal an eager run of the same steps on a second cache, bit for bit.
TEST_P(CudaModelTest, DecodeGraphRunnerReplaysNewStepsBitForBit) {
  const int64_t V = h_.cfg().vocab_size;
  model::KvCache eager_cache(h_.cfg(), 8, 16, *h_.ops), graph_cache(h_.cfg(), 8, 16, *h_.ops);
  std::vector<model::KvCache::Sequence> eager_seqs(2), graph_seqs(2);
  const std::vector<int32_t> p0(golden_.prompt.begin(), golden_.prompt.end());
  const std::vector<int32_t> p1(golden_.prompt.begin(), golden_.prompt.begin() + 9);
  auto first = h_.step(eager_cache, {&eager_seqs[0], &eager_seqs[1]}, {p0, p1});
  auto first_g = h_.step(graph_cache, {&graph_seqs[0], &graph_seqs[1]}, {p0, p1});
  for (int s = 0; s < 2; ++s)
    ASSERT_EQ(0, std::memcmp(first[s].data(), first_g[s].data(), V * sizeof(float)));
  // Fixed page-table width for the graph's key: both sequences get their pages up front.
  for (auto* c : {&eager_cache, &graph_cache}) {
    auto& seqs = c == &eager_cache ? eager_seqs : graph_seqs;
    for (auto& sq : seqs) ASSERT_TRUE(c->reserve(sq, 32).ok());
  }
  DeviceArena graph_ws(h_.ops->device().ordinal, h_.ops->stream());
  DeviceArena graph_out(h_.ops->device().ordinal, h_.ops->stream());
  TensorView graph_logits = graph_out.alloc({2, V}, DType::kF32);  // [S, V], fixed address
  DecodeGraphRunner runner(*h_.ops, graph_ws);
  std::vector<std::vector<int32_t>> next = {{moe::testing::argmax(first[0])},
                                            {moe::testing::argmax(first[1])}};
  const DecodeGraphRunner::Mode want[] = {
      DecodeGraphRunner::Mode::kEager, DecodeGraphRunner::Mode::kCaptured,
      DecodeGraphRunner::Mode::kReplayed, DecodeGraphRunner::Mode::kReplayed,
      DecodeGraphRunner::Mode::kReplayed};
  for (int step = 0; step < 5; ++step) {
    auto eager = h_.step(eager_cache, {&eager_seqs[0], &eager_seqs[1]}, next);
    std::vector<model::SequenceInput> in = {{next[0], &graph_seqs[0]}, {next[1], &graph_seqs[1]}};
    Status st = runner.run(2, [&](ops::Ops& o) {
      return h_.model().forward(o, graph_ws, graph_cache, in, graph_logits);
    });
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(runner.last_mode(), want[step]) << "step " << step;
    auto got = h_.download(graph_logits, 2, V);
    for (int s = 0; s < 2; ++s) {
      EXPECT_EQ(graph_seqs[s].length, eager_seqs[s].length);
      EXPECT_EQ(0, std::memcmp(got[s].data(), eager[s].data(), V * sizeof(float)))
          << GetParam() << " step " << step << " sequence " << s;
    }
    next = {{moe::testing::argmax(eager[0])}, {moe::testing::argmax(eager[1])}};
  }
}

// generate() with its decode steps run by a DecodeGraphRunner (what `moengine generate --device
// cuda` does): after Generator::warm_up (a throwaway prefill of the prompt's length, an eager
// decode step and a captured one), every decode step of the generation is a refreshed replay,
// neither the workspace nor the op scratch grows, and the ids equal eager generate()'s, for
// greedy decoding (= transformers') and seeded sampling (that sample launch runs after each
// replay with the step's own counter). The eager path, warmed the same way, grows nothing
// either. Two generations per Generator: its graphs stay valid between them.
TEST_P(CudaModelTest, GenerateWithGraphRunnerEqualsEagerWithoutArenaGrowth) {
  const int64_t P = static_cast<int64_t>(golden_.prompt.size());
  const ops::SamplingParams seeded = seeded_sampling();
  for (const ops::SamplingParams& sp : {ops::SamplingParams{}, seeded}) {
    runtime::GenerateOptions opt;
    opt.max_new_tokens = static_cast<int64_t>(golden_.greedy.size());
    opt.ignore_eos = true;
    opt.sampling = sp;
    model::KvCache eager_cache(h_.cfg(), 4, 16, *h_.ops);
    runtime::Generator eager_gen(h_.model(), *h_.ops, *h_.ws, eager_cache);
    ASSERT_TRUE(eager_gen.warm_up(P, opt).ok());
    h_.ws->reset();
    h_.ops->settle_scratch();
    int ws_growths = h_.ws->growths(), scratch_growths = h_.ops->scratch_growths();
    auto eager = eager_gen.generate(golden_.prompt, opt);
    ASSERT_TRUE(eager.ok()) << eager.status().to_string();
    EXPECT_EQ(h_.ws->growths(), ws_growths) << "eager generation grew the workspace";
    EXPECT_EQ(h_.ops->scratch_growths(), scratch_growths) << "eager generation grew the scratch";
    if (sp.temperature == 0) {
      EXPECT_EQ(eager->generated, golden_.greedy) << GetParam();
    }

    model::KvCache cache(h_.cfg(), 4, 16, *h_.ops);
    DeviceArena ws(h_.ops->device().ordinal, h_.ops->stream());
    DecodeGraphRunner runner(*h_.ops, ws);
    int64_t replays = 0;
    opt.decode_executor = [&](const runtime::DecodeStep& step) {
      Status st = runner.run(1, step);
      replays += runner.last_mode() == DecodeGraphRunner::Mode::kReplayed;
      return st;
    };
    runtime::Generator gen(h_.model(), *h_.ops, ws, cache);
    ASSERT_TRUE(gen.warm_up(P, opt).ok());
    EXPECT_TRUE(runner.captured(1)) << "the warm-up's second decode step is captured";
    ws.reset();
    h_.ops->settle_scratch();
    ws_growths = ws.growths();
    scratch_growths = h_.ops->scratch_growths();
    for (int run = 0; run < 2; ++run) {
      replays = 0;
      auto r = gen.generate(golden_.prompt, opt);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ(r->generated, eager->generated)
          << GetParam() << " temperature " << sp.temperature << " run " << run;
      EXPECT_EQ(r->decode_steps, opt.max_new_tokens - 1);
      EXPECT_EQ(replays, r->decode_steps) << "every decode step is a graph replay";
      EXPECT_EQ(ws.growths(), ws_growths) << "run " << run;
      EXPECT_EQ(h_.ops->scratch_growths(), scratch_growths) << "run " << run;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaModelTest,
                         ::testing::Values("glm_moe_dsa", "deepseek_v3", "deepseek_v32"));
// The quantized golden fixtures (moengine quantize of the BF16 ones; golden values from
// transformers on independently dequantized weights): same tests, same tolerance.
INSTANTIATE_TEST_SUITE_P(QuantFixtures, CudaModelTest,
                         ::testing::Values("quant/glm_moe_dsa_nvfp4", "quant/glm_moe_dsa_fp8",
                                           "quant/deepseek_v3_fp8"));

}  // namespace
}  // namespace moe::cuda::testing
