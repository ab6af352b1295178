// Quantized checkpoints against HuggingFace transformers: tests/fixtures/quant/<case> holds what
// `moengine quantize` wrote from a BF16 golden fixture, and golden.json what HF (float32, eager)
// computes on weights that tools/golden/make_quant_golden.py dequantized independently (torch ops
// from the ModelOpt / DeepSeek formulas). Tolerances: docs/numerics.md.
#include <gtest/gtest.h>

#include <cstdio>

#include "../model/model_test_util.h"
#include "model/loader.h"
#include "model/quantize_checkpoint.h"
#include "model/weight_manifest.h"
#include "quant_test_util.h"
#include "runtime/generate.h"

namespace moe::testing {
namespace {

constexpr double kLogitTolerance = 1e-4;  // max |err| / max |logit|

using QuantGolden = Golden;  // golden.json of tests/fixtures/quant/<case>; `base` is set

QuantGolden read_quant_golden(const std::filesystem::path& dir) {
  QuantGolden g = read_golden(dir);
  EXPECT_FALSE(g.base.empty()) << dir << ": a quantized fixture names its base fixture";
  return g;
}

class QuantGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantGoldenTest, LogitsAndLayerOutputsMatchTransformersOnDequantizedWeights) {
  const auto dir = quant_fixture(GetParam());
  QuantGolden g = read_quant_golden(dir);
  auto h = Harness::load(dir);
  ASSERT_TRUE(h);
  EXPECT_NE(h->cfg().quant.format, io::QuantFormat::kNone);
  expect_prefill_matches(*h, g.prompt, g.last_logits, g.layer_outputs_last, kLogitTolerance,
                         GetParam());
}

// The check can fail: the quantized model's logits differ from the BF16 model's (the golden
// values of the base fixture) by far more than the tolerance.
TEST_P(QuantGoldenTest, QuantizationChangesTheLogitsBeyondTheTolerance) {
  QuantGolden g = read_quant_golden(quant_fixture(GetParam()));
  const std::vector<float> bf16 = read_golden(golden_fixture_dir(g.base)).last_logits;
  EXPECT_GT(max_rel_error(g.last_logits, bf16), 100 * kLogitTolerance);
}

TEST_P(QuantGoldenTest, GreedyTokensMatchTransformers) {
  const auto dir = quant_fixture(GetParam());
  QuantGolden g = read_quant_golden(dir);
  auto h = Harness::load(dir);
  ASSERT_TRUE(h);
  auto r = h->greedy(g.prompt, static_cast<int64_t>(g.greedy.size()));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->generated, g.greedy);
}

// The committed fixture is exactly what quantize_checkpoint writes today from the BF16 fixture
// (so the golden values keep testing the current quantizer), sharded or not.
TEST_P(QuantGoldenTest, QuantizerReproducesTheFixtureBytes) {
  const auto dir = quant_fixture(GetParam());
  QuantGolden g = read_quant_golden(dir);
  const auto base = golden_fixture_dir(g.base);
  auto ref = model::load_model_config(dir);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  for (uint64_t shard : {uint64_t{4} << 30, uint64_t{60000}}) {
    auto out = temp_dir("requant_" + GetParam() + std::to_string(shard));
    model::QuantizeOptions opt;
    opt.format = ref->quant.format;
    opt.max_shard_bytes = shard;
    auto rep = model::quantize_checkpoint(base, out, opt);
    ASSERT_TRUE(rep.ok()) << rep.status().to_string();
    EXPECT_EQ(rep->shards > 1, shard < (1u << 20)) << rep->shards;
    auto a = io::Checkpoint::open(dir);
    auto b = io::Checkpoint::open(out);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->entries().size(), b->entries().size());
    for (const auto& [name, e] : a->entries()) {
      const io::Checkpoint::Entry* f = b->find(name);
      ASSERT_NE(f, nullptr) << name;
      auto x = e.file->bytes(*e.info), y = f->file->bytes(*f->info);
      EXPECT_EQ(e.info->dtype, f->info->dtype) << name;
      EXPECT_EQ(e.info->shape, f->info->shape) << name;
      EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << name;
    }
    auto h = Harness::load(out);
    ASSERT_TRUE(h);
    EXPECT_LT(max_rel_error(h->prefill_logits(g.prompt), g.last_logits), kLogitTolerance);
    std::filesystem::remove_all(out);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, QuantGoldenTest,
                         ::testing::Values("glm_moe_dsa_nvfp4", "glm_moe_dsa_fp8",
                                           "deepseek_v3_fp8"));

}  // namespace
}  // namespace moe::testing
