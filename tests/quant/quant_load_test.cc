// Loading variants real exports have: one-element [1] global scales, ModelOpt KV-cache scales
// (ignored when kv_cache_quant_algo is set), and the bound ops::Weight fields.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../model/model_test_util.h"
#include "quant_test_util.h"

namespace moe::testing {
namespace {

TEST(QuantLoad, BindsFormatsScalesAndScalars) {
  auto h = Harness::load(quant_fixture("glm_moe_dsa_nvfp4"));
  ASSERT_TRUE(h);
  const model::LayerWeights& l1 = h->loaded.model->weights().layers[1];
  const ops::Weight& up = l1.experts[0].up;
  EXPECT_EQ(up.format, ops::WeightFormat::kNvfp4);
  EXPECT_EQ(up.rows(), 32);
  EXPECT_EQ(up.cols(), 64);
  EXPECT_EQ(up.scale.dtype(), DType::kF8E4M3);
  EXPECT_GT(up.global_scale, 0.f);
  EXPECT_EQ(up.input_scale, 1.f);
  EXPECT_EQ(l1.attn.q_a_proj.format, ops::WeightFormat::kDense);
  EXPECT_EQ(l1.router.format, ops::WeightFormat::kDense);
  auto f8 = Harness::load(quant_fixture("deepseek_v3_fp8"));
  ASSERT_TRUE(f8);
  const model::LayerWeights& d1 = f8->loaded.model->weights().layers[1];
  EXPECT_EQ(d1.attn.q_b_proj.format, ops::WeightFormat::kFp8Block);
  EXPECT_EQ(d1.attn.q_b_proj.block, 128);
  EXPECT_EQ(d1.attn.kv_b_proj.dtype(), DType::kF32);  // dequantized once for the absorbed MLA
}

TEST(QuantLoad, AcceptsOneElementScalarsAndIgnoresKvScalesOnlyWhenDeclared) {
  const auto src = quant_fixture("glm_moe_dsa_nvfp4");
  auto dst = temp_dir("quant_kv");
  ASSERT_TRUE(rewrite_checkpoint(src, dst, [](EditableTensor& t) {
                if (t.name.ends_with(".weight_scale_2")) t.shape = Shape{1};
                return true;
              }).ok());
  // A k_scale the way a ModelOpt export with an FP8 KV cache may store one.
  auto kv = temp_dir("quant_kv_scale");
  ASSERT_TRUE(rewrite_checkpoint(src, kv, [](EditableTensor&) { return true; }).ok());
  {
    auto ckpt = io::Checkpoint::open(src);
    ASSERT_TRUE(ckpt.ok());
    std::vector<std::vector<std::byte>> keep;
    keep.reserve(ckpt->entries().size() + 1);
    std::vector<io::TensorToWrite> out;
    for (const auto& [name, e] : ckpt->entries()) {
      auto b = e.file->bytes(*e.info);
      keep.emplace_back(b.begin(), b.end());
      out.push_back({name, e.info->dtype, e.info->shape, keep.back()});
    }
    const float one = 1.f;
    keep.emplace_back(4);
    std::memcpy(keep.back().data(), &one, 4);
    out.push_back({"model.layers.0.self_attn.k_scale", DType::kF32, Shape{}, keep.back()});
    ASSERT_TRUE(io::write_safetensors(kv / "model.safetensors", out).ok());
  }
  auto h = Harness::load(dst);  // [1]-shaped weight_scale_2 loads
  ASSERT_TRUE(h);
  ThreadPool pool(1);
  reference::ReferenceOps ops(pool);
  auto bad = model::load_model(kv, ops);  // k_scale without kv_cache_quant_algo: unexpected
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model.layers.0.self_attn.k_scale"), std::string::npos);
  auto hq = nlohmann::json::parse(std::ifstream(kv / "hf_quant_config.json"));
  hq["quantization"]["kv_cache_quant_algo"] = "FP8";
  std::ofstream(kv / "hf_quant_config.json", std::ios::trunc) << hq.dump();
  auto good = model::load_model(kv, ops);
  EXPECT_TRUE(good.ok()) << good.status().to_string();
  std::filesystem::remove_all(dst);
  std::filesystem::remove_all(kv);
}

}  // namespace
}  // namespace moe::testing
