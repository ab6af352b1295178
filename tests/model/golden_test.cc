// The reference model against HuggingFace transformers: fixtures in tests/fixtures/<case>/
// (made by tools/golden/make_golden.py on the GPU machine with transformers 5.17, float32,
// eager attention, BF16-exact weights). Tolerances: docs/numerics.md.
#include <gtest/gtest.h>

#include <cstring>

#include "core/half.h"
#include "io/checkpoint.h"
#include "model_test_util.h"
#include "runtime/generate.h"

namespace moe::testing {
namespace {

constexpr double kLogitTolerance = 1e-4;  // max |err| / max |logit|

std::filesystem::path fixture_dir(const std::string& name) { return golden_fixture_dir(name); }

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, PromptLogitsAndLayerOutputsMatchTransformers) {
  const auto dir = fixture_dir(GetParam());
  Golden g = read_golden(dir);
  auto h = Harness::load(dir);
  ASSERT_TRUE(h);
  ASSERT_EQ(g.last_logits.size(), static_cast<size_t>(h->cfg().vocab_size));
  expect_prefill_matches(*h, g.prompt, g.last_logits, g.layer_outputs_last, kLogitTolerance,
                         GetParam());
}

// 16 greedy tokens by incremental decode (KV cache, absorbed MLA) equal transformers' greedy
// tokens obtained by full recomputation.
TEST_P(GoldenTest, GreedyTokensMatchTransformers) {
  const auto dir = fixture_dir(GetParam());
  Golden g = read_golden(dir);
  auto h = Harness::load(dir);
  ASSERT_TRUE(h);
  auto r = h->greedy(g.prompt, static_cast<int64_t>(g.greedy.size()));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->generated, g.greedy);
}

// Decode steps through a caller's executor (what `generate --device cuda` does with a CUDA
// graph runner): the prefill stays direct, every decode step goes through the executor once,
// the sequence's pages are all reserved before the prefill (so the page-table width is fixed),
// warm_up() changes no later result, and greedy and seeded-sampling ids equal direct runs.
TEST_P(GoldenTest, DecodeExecutorRunsEachDecodeStepWithFixedPages) {
  const auto dir = fixture_dir(GetParam());
  Golden g = read_golden(dir);
  auto h = Harness::load(dir);
  ASSERT_TRUE(h);
  const int64_t pages = 8, page_size = 16;
  model::KvCache cache = h->make_cache(pages, page_size);
  const int64_t P = static_cast<int64_t>(g.prompt.size());
  const ops::SamplingParams seeded = seeded_sampling();
  for (const ops::SamplingParams& sp : {ops::SamplingParams{}, seeded}) {
    runtime::GenerateOptions opt;
    opt.max_new_tokens = static_cast<int64_t>(g.greedy.size());
    opt.ignore_eos = true;
    opt.sampling = sp;
    auto direct = runtime::generate(h->model(), h->ops, h->ws, cache, g.prompt, opt);
    ASSERT_TRUE(direct.ok()) << direct.status().to_string();
    EXPECT_EQ(cache.free_pages(), pages);

    // Pages for prompt + max_new_tokens - 1 tokens (the last id never enters the cache).
    const int64_t held = (P + opt.max_new_tokens - 1 + page_size - 1) / page_size;
    int calls = 0;
    opt.decode_executor = [&](const runtime::DecodeStep& step) {
      ++calls;
      EXPECT_EQ(cache.free_pages(), pages - held) << "call " << calls;
      return step(h->ops);
    };
    runtime::Generator gen(h->model(), h->ops, h->ws, cache);
    ASSERT_TRUE(gen.warm_up(P, opt).ok());
    EXPECT_EQ(calls, 2) << "warm-up: prefill + two decode steps";
    EXPECT_EQ(cache.free_pages(), pages);
    for (int run = 0; run < 2; ++run) {
      calls = 0;
      auto r = gen.generate(g.prompt, opt);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ(calls, opt.max_new_tokens - 1);
      EXPECT_EQ(r->decode_steps, opt.max_new_tokens - 1);
      EXPECT_EQ(r->generated, direct->generated) << "temperature " << sp.temperature;
      EXPECT_EQ(cache.free_pages(), pages);
    }
    if (sp.temperature == 0) {
      EXPECT_EQ(direct->generated, g.greedy);
    }
  }
}

// An executor's error ends the generation with that error and returns the sequence's pages;
// a prompt whose reservation does not fit the cache is refused before the prefill.
TEST_P(GoldenTest, DecodeExecutorErrorsAndFullCacheReleaseThePages) {
  const auto dir = fixture_dir(GetParam());
  Golden g = read_golden(dir);
  auto h = Harness::load(dir);
  ASSERT_TRUE(h);
  model::KvCache cache = h->make_cache(4, 16);
  runtime::GenerateOptions opt;
  opt.max_new_tokens = 8;
  opt.ignore_eos = true;
  int calls = 0;
  opt.decode_executor = [&](const runtime::DecodeStep& step) -> Status {
    if (++calls == 3) return internal_error("executor failed on purpose");
    return step(h->ops);
  };
  auto r = runtime::generate(h->model(), h->ops, h->ws, cache, g.prompt, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("on purpose"), std::string::npos);
  EXPECT_EQ(cache.free_pages(), 4);
  opt.max_new_tokens = 64 - static_cast<int64_t>(g.prompt.size()) + 2;  // one token too many
  calls = 0;
  r = runtime::generate(h->model(), h->ops, h->ws, cache, g.prompt, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().to_string();
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(cache.free_pages(), 4);
}

// The comparison can fail: adding 1e-2 to one expert's down_proj (an expert the last prompt
// token is routed to) moves the logits past the tolerance.
TEST_P(GoldenTest, PerturbingOneExpertBreaksTheMatch) {
  const auto src = fixture_dir(GetParam());
  Golden g = read_golden(src);
  int layer = -1, expert = -1;
  {
    auto h = Harness::load(src);
    ASSERT_TRUE(h);
    h->ops.set_trace_sink([&](ConstTensorView t, std::string_view name, int l) {
      if (name == "expert_ids" && expert < 0) {
        layer = l;
        expert = t.data<int32_t>()[(t.dim(0) - 1) * t.dim(1)];
      }
    });
    std::vector<float> logits = h->prefill_logits(g.prompt);
    ASSERT_LT(max_rel_error(logits, g.last_logits), kLogitTolerance);
  }
  ASSERT_GE(expert, 0);
  const std::string target = "model.layers." + std::to_string(layer) + ".mlp.experts." +
                             std::to_string(expert) + ".down_proj.weight";
  auto dst = temp_dir("perturbed_" + GetParam());
  std::filesystem::copy_file(src / "config.json", dst / "config.json");
  auto ckpt = io::Checkpoint::open(src);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  std::vector<std::vector<std::byte>> bytes;
  std::vector<io::TensorToWrite> out;
  for (const auto& [name, e] : ckpt->entries()) {
    auto span = e.file->bytes(*e.info);
    bytes.emplace_back(span.begin(), span.end());
    if (name == target) {
      ASSERT_EQ(e.info->dtype, DType::kBF16);
      for (size_t i = 0; i + 1 < bytes.back().size(); i += 2) {
        uint16_t v;
        std::memcpy(&v, bytes.back().data() + i, 2);
        v = f32_to_bf16(bf16_to_f32(v) + 1e-2f);
        std::memcpy(bytes.back().data() + i, &v, 2);
      }
    }
  }
  size_t i = 0;
  for (const auto& [name, e] : ckpt->entries())
    out.push_back({name, e.info->dtype, e.info->shape, bytes[i++]});
  ASSERT_TRUE(io::write_safetensors(dst / "model.safetensors", out).ok());
  auto h = Harness::load(dst);
  ASSERT_TRUE(h);
  std::vector<float> logits = h->prefill_logits(g.prompt);
  EXPECT_GT(max_rel_error(logits, g.last_logits), kLogitTolerance) << target;
  std::filesystem::remove_all(dst);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest,
                         ::testing::Values("glm_moe_dsa", "deepseek_v3", "deepseek_v32"));

// bind_weights hands every MoE layer's routed and shared experts to ops.prepare_experts once, with
// the hidden size, and what the backend changes there is what the model then reads (the cuda
// backend tiles NVFP4 scales there; its kernels are tested in moe_grouped_test.cc).
TEST(BindWeights, PrepareExpertsSeesEveryMoeLayerOnce) {
  struct RecordingOps : reference::ReferenceOps {
    using ReferenceOps::ReferenceOps;
    void prepare_experts(std::span<ops::ExpertWeights> experts, ops::ExpertWeights* shared,
                         int64_t D) override {
      sizes.push_back(static_cast<int64_t>(experts.size()));
      dims.push_back(D);
      with_shared.push_back(shared != nullptr);
      if (shared) shared->down.input_scale = 7.f + sizes.size();
      for (ops::ExpertWeights& ew : experts) ew.down.input_scale = 7.f + sizes.size();  // a mark
    }
    std::vector<int64_t> sizes, dims;
    std::vector<bool> with_shared;
  };
  for (const char* name : {"quant/glm_moe_dsa_nvfp4", "deepseek_v3"}) {
    ThreadPool pool{1};
    RecordingOps ops{pool};
    auto r = model::load_model(fixture_dir(name), ops);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const model::ModelConfig& cfg = r->model->config();
    const model::ModelWeights& w = r->model->weights();
    int64_t moe_layers = 0;
    for (const model::LayerWeights& lw : w.layers) {
      if (!lw.is_moe) continue;
      ++moe_layers;
      ASSERT_LE(moe_layers, static_cast<int64_t>(ops.sizes.size())) << name;
      for (const ops::ExpertWeights& ew : lw.experts)
        EXPECT_EQ(ew.down.input_scale, 7.f + moe_layers) << name << ": the model reads a copy";
      EXPECT_EQ(lw.has_shared, ops.with_shared[moe_layers - 1]) << name;
      if (lw.has_shared)
        EXPECT_EQ(lw.shared.down.input_scale, 7.f + moe_layers) << name << ": shared expert";
    }
    EXPECT_GT(moe_layers, 0) << name;
    EXPECT_EQ(static_cast<int64_t>(ops.sizes.size()), moe_layers) << name;
    for (size_t i = 0; i < ops.sizes.size(); ++i) {
      EXPECT_EQ(ops.sizes[i], cfg.n_routed_experts) << name;
      EXPECT_EQ(ops.dims[i], cfg.hidden_size) << name;
    }
  }
}

}  // namespace
}  // namespace moe::testing
