// The reference model against HuggingFace transformers: fixtures in tests/fixtures/<case>/
// (made by tools/golden/make_golden.py on the GPU machine with transformers 5.17, float32,
// eager attention, BF16-exact weights). Tolerances: docs/numerics.md.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "io/checkpoint.h"
#include "model_test_util.h"
#include "runtime/generate.h"

namespace moe::testing {
namespace {

constexpr double kLogitTolerance = 1e-4;  // max |err| / max |logit|

struct Golden {
  std::vector<int32_t> prompt;
  std::vector<float> last_logits;
  std::vector<int32_t> greedy;
  std::vector<std::vector<float>> layer_outputs_last;
};

std::filesystem::path fixture_dir(const std::string& name) {
  return std::filesystem::path(MOE_SOURCE_DIR) / "tests" / "fixtures" / name;
}

Golden read_golden(const std::filesystem::path& dir) {
  std::ifstream f(dir / "golden.json");
  nlohmann::json j = nlohmann::json::parse(f);
  Golden g;
  g.prompt = j["prompt_ids"].get<std::vector<int32_t>>();
  g.last_logits = j["last_logits"].get<std::vector<float>>();
  g.greedy = j["greedy_ids"].get<std::vector<int32_t>>();
  g.layer_outputs_last = j["layer_outputs_last"].get<std::vector<std::vector<float>>>();
  return g;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, PromptLogitsAndLayerOutputsMatchTransformers) {
  const auto dir = fixture_dir(GetParam());
  Golden g = read_golden(dir);
  auto h = Harness::load(dir);
  ASSERT_TRUE(h);
  ASSERT_EQ(g.last_logits.size(), static_cast<size_t>(h->cfg().vocab_size));
  // Capture the residual stream at the last prompt position after each layer.
  std::vector<std::vector<float>> layer_out(h->cfg().num_hidden_layers);
  h->ops.set_trace_sink([&](ConstTensorView t, std::string_view name, int layer) {
    if (name != "layer_out") return;
    ConstTensorView row = t.row(t.dim(0) - 1);
    layer_out[layer].assign(row.data<float>(), row.data<float>() + row.numel());
  });
  for (auto policy : {model::MlaFormPolicy::kNaive, model::MlaFormPolicy::kAbsorbed}) {
    std::vector<float> logits = h->prefill_logits(g.prompt, policy);
    double err = max_rel_error(logits, g.last_logits);
    EXPECT_LT(err, kLogitTolerance) << GetParam() << " policy " << static_cast<int>(policy);
    for (size_t l = 0; l < layer_out.size(); ++l)
      EXPECT_LT(max_rel_error(layer_out[l], g.layer_outputs_last[l]), kLogitTolerance)
          << "layer " << l;
  }
}

// 16 greedy tokens by incremental decode (KV cache, absorbed MLA) equal transformers' greedy
// tokens obtained by full recomputation.
TEST_P(GoldenTest, GreedyTokensMatchTransformers) {
  const auto dir = fixture_dir(GetParam());
  Golden g = read_golden(dir);
  auto h = Harness::load(dir);
  ASSERT_TRUE(h);
  model::KvCache cache = h->make_cache(4, 16);
  runtime::GenerateOptions opt;
  opt.max_new_tokens = static_cast<int64_t>(g.greedy.size());
  opt.ignore_eos = true;
  auto r = runtime::generate(h->model(), h->ops, h->ws, cache, g.prompt, opt);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->generated, g.greedy);
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

}  // namespace
}  // namespace moe::testing
