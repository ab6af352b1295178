// Quantization settings: ModelOpt hf_quant_config.json (legacy exclude_modules) and config.json
// quantization_config (modelopt with `ignore`, DeepSeek fp8), fnmatch exclusions, and the
// errors for everything unsupported.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/quant_config.h"
#include "model/model_config.h"
#include "model/tiny_model.h"
#include "model/weight_manifest.h"

namespace moe::testing {
namespace {

using nlohmann::json;

TEST(QuantConfig, ReadsModelOptHfQuantConfig) {
  auto q = io::parse_hf_quant_config(R"({"producer": {"name": "modelopt", "version": "0.42.0"},
      "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                       "exclude_modules": ["lm_head", "model.layers.78*",
                                           "model.layers.0.self_attn.indexer*",
                                           "model.layers.0.self_attn.q_a_proj"]}})",
                                     "hf_quant_config.json");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->format, io::QuantFormat::kNvfp4);
  EXPECT_EQ(q->group_size, 16);
  EXPECT_EQ(q->kv_cache_quant_algo, "FP8");
  EXPECT_NE(q->excluded_by("lm_head"), nullptr);
  EXPECT_NE(q->excluded_by("model.layers.78.mlp.experts.3.up_proj"), nullptr);
  EXPECT_NE(q->excluded_by("model.layers.0.self_attn.indexer.wq_b"), nullptr);
  EXPECT_NE(q->excluded_by("model.layers.0.self_attn.q_a_proj"), nullptr);
  EXPECT_EQ(q->excluded_by("model.layers.0.self_attn.q_b_proj"), nullptr);
  EXPECT_EQ(q->excluded_by("model.layers.7.mlp.experts.3.up_proj"), nullptr);
  EXPECT_EQ(q->excluded_by("model.layers.1.self_attn.q_a_proj"), nullptr);
}

TEST(QuantConfig, ReadsConfigJsonModelOptWithIgnoreAndFp8Block) {
  json m = json::parse(R"({"quant_method": "modelopt", "quant_algo": "NVFP4",
      "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float", "group_size": 16},
                                    "input_activations": {"num_bits": 4, "group_size": 16}}},
      "ignore": ["lm_head", "model.layers.[0-2].*", "*.shared_experts*"]})");
  auto q = io::parse_quantization_config(m, "config.json");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->format, io::QuantFormat::kNvfp4);
  EXPECT_NE(q->excluded_by("model.layers.2.mlp.gate_proj"), nullptr);
  EXPECT_EQ(q->excluded_by("model.layers.3.mlp.experts.0.gate_proj"), nullptr);
  EXPECT_NE(q->excluded_by("model.layers.3.mlp.shared_experts.gate_proj"), nullptr);
  json f = json::parse(R"({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                           "weight_block_size": [128, 128]})");
  auto q8 = io::parse_quantization_config(f, "config.json");
  ASSERT_TRUE(q8.ok()) << q8.status().to_string();
  EXPECT_EQ(q8->format, io::QuantFormat::kFp8Block);
  EXPECT_EQ(q8->block, 128);
}

TEST(QuantConfig, RejectsUnsupportedSettingsNamingThem) {
  struct Case {
    const char* json;
    const char* needle;
  } cases[] = {
      {R"({"quantization": {"quant_algo": "NVFP4", "group_size": 32}})", "group_size is number 32"},
      {R"({"quantization": {"quant_algo": "FP8"}})", "quant_algo 'FP8'"},
      {R"({"quantization": {"quant_algo": "W4A8_AWQ", "group_size": 128}})", "W4A8_AWQ"},
      {R"({"producer": {}})", "quantization"},
  };
  for (const Case& c : cases) {
    auto q = io::parse_hf_quant_config(c.json, "hf_quant_config.json");
    ASSERT_FALSE(q.ok()) << c.json;
    EXPECT_NE(q.status().message().find(c.needle), std::string::npos) << q.status().message();
    EXPECT_EQ(q.status().message().find('\n'), std::string::npos) << q.status().message();
  }
  const char* qcs[][2] = {
      {R"({"quant_method": "gptq", "bits": 4})", "quant_method 'gptq'"},
      {R"({"quant_method": "fp8", "activation_scheme": "dynamic"})", "per-tensor"},
      {R"({"quant_method": "fp8", "weight_block_size": [128, 64]})", "[128,64]"},
      {R"({"quant_method": "fp8", "fmt": "e5m2", "weight_block_size": [128, 128]})", "e5m2"},
      {R"({"quant_method": "compressed-tensors"})", "compressed-tensors"},
  };
  for (auto& c : qcs) {
    auto q = io::parse_quantization_config(json::parse(c[0]), "config.json");
    ASSERT_FALSE(q.ok()) << c[0];
    EXPECT_NE(q.status().message().find(c[1]), std::string::npos) << q.status().message();
    EXPECT_NE(q.status().message().find("supported: ModelOpt NVFP4"), std::string::npos)
        << q.status().message();
  }
}

TEST(QuantConfig, FnmatchFollowsPythonSemantics) {
  EXPECT_TRUE(io::fnmatch_pattern("model.layers.1.self_attn*", "model.layers.1.self_attn.o_proj"));
  EXPECT_FALSE(
      io::fnmatch_pattern("model.layers.1.self_attn*", "model.layers.10.self_attn.o_proj"));
  EXPECT_TRUE(io::fnmatch_pattern("*gate", "model.layers.3.mlp.gate"));
  EXPECT_FALSE(io::fnmatch_pattern("*gate", "model.layers.3.mlp.gate_proj"));
  EXPECT_TRUE(io::fnmatch_pattern("a?c", "abc"));
  EXPECT_TRUE(io::fnmatch_pattern("l[!x]y", "lay"));
  EXPECT_FALSE(io::fnmatch_pattern("l[!a]y", "lay"));
  EXPECT_TRUE(io::fnmatch_pattern("*", ""));
  EXPECT_TRUE(io::fnmatch_pattern("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(io::fnmatch_pattern("a*b*c", "aXXbYY"));
  EXPECT_TRUE(io::fnmatch_pattern("[", "["));  // malformed class: literal
}

// The manifest of a quantized config: per module, the tensors ModelOpt / DeepSeek ship.
TEST(QuantManifest, ListsScaleTensorsPerQuantizedModule) {
  auto text = model::tiny_config_json("glm_moe_dsa");
  ASSERT_TRUE(text.ok());
  json j = json::parse(*text);
  j["quantization_config"] = json::parse(
      R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
          "ignore": ["lm_head", "model.layers.*.self_attn*"]})");
  auto cfg = model::parse_model_config(j.dump(), "config.json");
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  std::map<std::string, model::WeightSpec> by_name;
  for (auto& w : model::weight_manifest(*cfg)) by_name[w.name] = w;
  const std::string e = "model.layers.1.mlp.experts.3.down_proj.";
  ASSERT_TRUE(by_name.count(e + "weight"));
  EXPECT_EQ(by_name[e + "weight"].shape, (Shape{64, 16}));  // [D, I/2] bytes
  EXPECT_EQ(by_name[e + "weight"].dtypes[0], DType::kU8);
  EXPECT_EQ(by_name[e + "weight"].params(), 64 * 32);
  EXPECT_EQ(by_name[e + "weight_scale"].shape, (Shape{64, 2}));
  EXPECT_EQ(by_name[e + "weight_scale"].dtypes[0], DType::kF8E4M3);
  EXPECT_EQ(by_name[e + "weight_scale_2"].shape.rank(), 0);
  EXPECT_EQ(by_name[e + "input_scale"].dtypes[0], DType::kF32);
  EXPECT_EQ(by_name["model.layers.1.self_attn.q_a_proj.weight"].format, ops::WeightFormat::kDense);
  EXPECT_EQ(by_name.count("model.layers.1.self_attn.q_a_proj.weight_scale"), 0u);
  EXPECT_EQ(by_name["model.layers.1.mlp.gate.weight"].format, ops::WeightFormat::kDense);
  EXPECT_EQ(by_name["lm_head.weight"].format, ops::WeightFormat::kDense);
  EXPECT_EQ(by_name["model.layers.0.mlp.gate_proj.weight"].format, ops::WeightFormat::kNvfp4);

  j["quantization_config"] =
      json::parse(R"({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})");
  cfg = model::parse_model_config(j.dump(), "config.json");
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  by_name.clear();
  for (auto& w : model::weight_manifest(*cfg)) by_name[w.name] = w;
  const std::string kvb = "model.layers.1.self_attn.kv_b_proj.";
  EXPECT_EQ(by_name[kvb + "weight"].dtypes[0], DType::kF8E4M3);
  EXPECT_EQ(by_name[kvb + "weight_scale_inv"].shape, (Shape{1, 1}));  // ceil(96/128), ceil(32/128)
  EXPECT_EQ(by_name["model.layers.1.self_attn.indexer.weights_proj.weight"].format,
            ops::WeightFormat::kDense);
  EXPECT_EQ(by_name["model.layers.1.mlp.gate.weight"].format, ops::WeightFormat::kDense);
  EXPECT_EQ(by_name["lm_head.weight"].format, ops::WeightFormat::kDense);
}

}  // namespace
}  // namespace moe::testing
