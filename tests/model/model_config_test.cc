// ModelConfig parsing: each family as shipped, both RoPE spellings, and every validation rule.
#include "model/model_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "model/tiny_model.h"

namespace moe::model {
namespace {

using nlohmann::json;

// zai-org/GLM-5 config.json as shipped (glm5-model.md §1.1).
json glm5() {
  return json::parse(R"({
    "architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa",
    "hidden_size": 6144, "num_hidden_layers": 78, "first_k_dense_replace": 3,
    "moe_layer_freq": 1, "intermediate_size": 12288, "moe_intermediate_size": 2048,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "n_group": 1, "topk_group": 1, "topk_method": "noaux_tc", "scoring_func": "sigmoid",
    "norm_topk_prob": true, "routed_scaling_factor": 2.5,
    "num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 2048,
    "kv_lora_rank": 512, "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "qk_head_dim": 256,
    "v_head_dim": 256, "head_dim": 64, "index_n_heads": 32, "index_head_dim": 128,
    "index_topk": 2048, "indexer_rope_interleave": true, "rope_interleave": true,
    "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"},
    "max_position_embeddings": 202752, "rms_norm_eps": 1e-05, "hidden_act": "silu",
    "attention_bias": false, "attention_dropout": 0.0, "vocab_size": 154880,
    "eos_token_id": [154820, 154827, 154829], "pad_token_id": 154820,
    "num_nextn_predict_layers": 1, "tie_word_embeddings": false, "dtype": "bfloat16",
    "ep_size": 1, "pretraining_tp": 1, "initializer_range": 0.02, "use_cache": true,
    "transformers_version": "5.0.2.dev0"})");
}

// deepseek-ai/DeepSeek-V3 config.json (shipped form: rope_theta + rope_scaling with "type").
json deepseek_v3() {
  return json::parse(R"({
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "attention_bias": false, "attention_dropout": 0.0, "aux_loss_alpha": 0.001,
    "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1, "first_k_dense_replace": 3,
    "hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02,
    "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840,
    "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256,
    "n_shared_experts": 1, "norm_topk_prob": true, "num_attention_heads": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
    "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                     "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
    "seq_aux": true, "tie_word_embeddings": false, "topk_group": 4, "topk_method": "noaux_tc",
    "torch_dtype": "bfloat16", "transformers_version": "4.33.1", "use_cache": true,
    "v_head_dim": 128, "vocab_size": 129280})");
}

// moonshotai/Kimi-K2-Instruct config.json (DeepSeek-V3 architecture, model_type kimi_k2).
json kimi_k2() {
  json j = deepseek_v3();
  j["model_type"] = "kimi_k2";
  j["first_k_dense_replace"] = 1;
  j["n_routed_experts"] = 384;
  j["n_group"] = 1;
  j["topk_group"] = 1;
  j["num_attention_heads"] = 64;
  j["num_key_value_heads"] = 64;
  j["num_nextn_predict_layers"] = 0;
  j["routed_scaling_factor"] = 2.827;
  j["rope_theta"] = 50000.0;
  j["rope_scaling"] = {{"beta_fast", 1.0},      {"beta_slow", 1.0},
                       {"factor", 32.0},        {"mscale", 1.0},
                       {"mscale_all_dim", 1.0}, {"original_max_position_embeddings", 4096},
                       {"type", "yarn"}};
  j["max_position_embeddings"] = 131072;
  j["vocab_size"] = 163840;
  j["bos_token_id"] = 163584;
  j["eos_token_id"] = 163585;
  return j;
}

// DeepSeek-V3.2-Exp: V3 plus the indexer.
json deepseek_v32() {
  json j = deepseek_v3();
  j["model_type"] = "deepseek_v32";
  j["index_n_heads"] = 64;
  j["index_head_dim"] = 128;
  j["index_topk"] = 2048;
  return j;
}

Result<ModelConfig> parse(const json& j) { return parse_model_config(j.dump(), "config.json"); }

ModelConfig parse_ok(const json& j) {
  auto r = parse(j);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : ModelConfig{};
}

// The error message, asserting it is an InvalidArgument that starts with the file name.
std::string error_of(const json& j) {
  auto r = parse(j);
  EXPECT_FALSE(r.ok()) << j.dump();
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("config.json: ", 0), 0u) << r.status().message();
  return r.status().message();
}

#define EXPECT_HAS(haystack, needle)                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) \
      << "missing '" << (needle) << "' in: " << (haystack)

double yarn_m(double factor) { return 0.1 * std::log(factor) + 1.0; }

TEST(ModelConfig, Glm5AsShipped) {
  ModelConfig c = parse_ok(glm5());
  EXPECT_EQ(c.arch, Arch::kGlmMoeDsa);
  EXPECT_EQ(c.model_type, "glm_moe_dsa");
  EXPECT_EQ(arch_name(c.arch), "glm_moe_dsa");
  EXPECT_EQ(c.hidden_size, 6144);
  EXPECT_EQ(c.vocab_size, 154880);
  EXPECT_EQ(c.num_hidden_layers, 78);
  EXPECT_EQ(c.num_nextn_predict_layers, 1);
  EXPECT_EQ(c.n_routed_experts, 256);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 2.5);
  EXPECT_EQ(c.q_lora_rank, 2048);
  EXPECT_EQ(c.qk_head_dim(), 256);
  EXPECT_TRUE(c.has_indexer);
  EXPECT_EQ(c.index_n_heads, 32);
  EXPECT_EQ(c.index_head_dim, 128);
  EXPECT_EQ(c.index_topk, 2048);
  EXPECT_TRUE(c.indexer_rope_interleave);
  EXPECT_TRUE(c.rope_interleave);
  EXPECT_EQ(c.rope.type, RopeType::kDefault);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.attn_lora_norm_eps, 1e-6);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{154820, 154827, 154829}));
  EXPECT_EQ(c.pad_token_id, 154820);
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_DOUBLE_EQ(c.softmax_scale(), 1.0 / 16.0);
  EXPECT_FALSE(c.is_moe_layer(2));
  EXPECT_TRUE(c.is_moe_layer(3));
  EXPECT_TRUE(c.is_moe_layer(78));  // MTP layer
}

TEST(ModelConfig, DeepseekV3AsShipped) {
  ModelConfig c = parse_ok(deepseek_v3());
  EXPECT_EQ(c.arch, Arch::kDeepseekV3);
  EXPECT_FALSE(c.has_indexer);
  EXPECT_EQ(c.n_group, 8);
  EXPECT_EQ(c.topk_group, 4);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{1});
  EXPECT_EQ(c.bos_token_id, 0);
  EXPECT_EQ(c.rope.type, RopeType::kYarn);
  EXPECT_DOUBLE_EQ(c.rope.theta, 10000);
  EXPECT_DOUBLE_EQ(c.rope.factor, 40);
  EXPECT_DOUBLE_EQ(c.rope.beta_fast, 32);
  EXPECT_DOUBLE_EQ(c.rope.beta_slow, 1);
  EXPECT_DOUBLE_EQ(c.rope.mscale_all_dim, 1.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 4096);
  EXPECT_FALSE(c.rope.attention_factor.has_value());
  const double m = yarn_m(40);
  EXPECT_NEAR(m, 1.3689, 1e-4);
  EXPECT_NEAR(c.softmax_scale(), m * m / std::sqrt(192.0), 1e-12);
}

TEST(ModelConfig, KimiK2AsShipped) {
  ModelConfig c = parse_ok(kimi_k2());
  EXPECT_EQ(c.arch, Arch::kKimiK2);
  EXPECT_FALSE(c.has_indexer);
  EXPECT_EQ(c.n_routed_experts, 384);
  EXPECT_EQ(c.first_k_dense_replace, 1);
  EXPECT_EQ(c.num_nextn_predict_layers, 0);
  EXPECT_DOUBLE_EQ(c.rope.theta, 50000);
  EXPECT_DOUBLE_EQ(c.rope.factor, 32);
  EXPECT_DOUBLE_EQ(c.rope.beta_fast, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{163585});
  EXPECT_NEAR(c.softmax_scale(), yarn_m(32) * yarn_m(32) / std::sqrt(192.0), 1e-12);
}

TEST(ModelConfig, DeepseekV32IndexerIsNeoxByDefault) {
  ModelConfig c = parse_ok(deepseek_v32());
  EXPECT_EQ(c.arch, Arch::kDeepseekV32);
  EXPECT_TRUE(c.has_indexer);
  EXPECT_EQ(c.index_n_heads, 64);
  EXPECT_FALSE(c.indexer_rope_interleave);
  EXPECT_TRUE(c.rope_interleave);
  json j = deepseek_v32();
  j["indexer_rope_interleave"] = true;
  EXPECT_TRUE(parse_ok(j).indexer_rope_interleave);
  // GLM-5 defaults to interleaved when the field is absent.
  json g = glm5();
  g.erase("indexer_rope_interleave");
  g.erase("rope_interleave");
  ModelConfig gc = parse_ok(g);
  EXPECT_TRUE(gc.indexer_rope_interleave);
  EXPECT_TRUE(gc.rope_interleave);
}

TEST(ModelConfig, RopeParametersForm) {
  // transformers 5.x spelling of the DeepSeek-V3 rope gives the same RopeConfig.
  json j = deepseek_v3();
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_theta", 10000},   {"rope_type", "yarn"},
                          {"factor", 40},          {"beta_fast", 32},
                          {"beta_slow", 1},        {"mscale", 1.0},
                          {"mscale_all_dim", 1.0}, {"original_max_position_embeddings", 4096}};
  ModelConfig a = parse_ok(j);
  ModelConfig b = parse_ok(deepseek_v3());
  EXPECT_EQ(a.rope.type, RopeType::kYarn);
  EXPECT_DOUBLE_EQ(a.rope.theta, b.rope.theta);
  EXPECT_DOUBLE_EQ(a.rope.factor, b.rope.factor);
  EXPECT_DOUBLE_EQ(a.rope.mscale_all_dim, b.rope.mscale_all_dim);
  EXPECT_EQ(a.rope.original_max_position_embeddings, b.rope.original_max_position_embeddings);
  EXPECT_DOUBLE_EQ(a.softmax_scale(), b.softmax_scale());
  EXPECT_FALSE(a.rope.attention_factor.has_value());

  j["rope_parameters"]["attention_factor"] = 1.25;
  j["rope_parameters"].erase("original_max_position_embeddings");
  ModelConfig c = parse_ok(j);
  ASSERT_TRUE(c.rope.attention_factor.has_value());
  EXPECT_DOUBLE_EQ(*c.rope.attention_factor, 1.25);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 163840);  // falls back to max positions

  // Legacy rope_scaling may spell the type as "rope_type".
  json k = deepseek_v3();
  k["rope_scaling"].erase("type");
  k["rope_scaling"]["rope_type"] = "yarn";
  EXPECT_EQ(parse_ok(k).rope.type, RopeType::kYarn);
  // Null rope_scaling = default rope.
  k["rope_scaling"] = nullptr;
  ModelConfig d = parse_ok(k);
  EXPECT_EQ(d.rope.type, RopeType::kDefault);
  EXPECT_DOUBLE_EQ(d.softmax_scale(), 1.0 / std::sqrt(192.0));
}

TEST(ModelConfig, RopeErrors) {
  json j = deepseek_v3();
  j["rope_scaling"]["type"] = "linear";
  std::string e = error_of(j);
  EXPECT_HAS(e, "'linear' is not supported");
  EXPECT_HAS(e, "default, yarn");

  json g = glm5();
  g["rope_parameters"]["rope_type"] = "llama3";
  EXPECT_HAS(error_of(g), "'llama3' is not supported");

  json y = deepseek_v3();
  y["rope_scaling"].erase("factor");
  EXPECT_HAS(error_of(y), "missing required field rope_scaling.factor");

  json both = glm5();
  both["rope_theta"] = 10000;
  EXPECT_HAS(error_of(both), "disagrees with rope_parameters.rope_theta");

  json nt = glm5();
  nt["rope_parameters"].erase("rope_theta");
  EXPECT_HAS(error_of(nt), "rope_parameters.rope_theta");
}

TEST(ModelConfig, UnknownModelTypeListsSupported) {
  json j = glm5();
  j["model_type"] = "llama";
  std::string e = error_of(j);
  EXPECT_HAS(e, "'llama' is not supported");
  EXPECT_HAS(e, "glm_moe_dsa, deepseek_v3, kimi_k2, deepseek_v32");
  j.erase("model_type");
  EXPECT_HAS(error_of(j), "missing required field model_type; supported: glm_moe_dsa");
}

TEST(ModelConfig, EachValidationRule) {
  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"missing", [](json& j) { j.erase("hidden_size"); }, "missing required field hidden_size"},
      {"zero", [](json& j) { j["num_attention_heads"] = 0; },
       "num_attention_heads = 0 is out of range"},
      {"negative", [](json& j) { j["vocab_size"] = -5; }, "vocab_size = -5 is out of range"},
      {"huge", [](json& j) { j["hidden_size"] = int64_t{1} << 40; },
       "hidden_size = 1099511627776 is out of range"},
      {"huge count", [](json& j) { j["num_hidden_layers"] = 1000000; },
       "num_hidden_layers = 1000000"},
      {"k > E", [](json& j) { j["num_experts_per_tok"] = 300; },
       "num_experts_per_tok = 300 exceeds n_routed_experts = 256"},
      {"E % groups", [](json& j) { j["n_group"] = 3; }, "not divisible by n_group = 3"},
      {"topk_group", [](json& j) { j["topk_group"] = 2; }, "topk_group = 2 exceeds n_group = 1"},
      {"odd rope", [](json& j) { j["qk_rope_head_dim"] = 63; },
       "qk_rope_head_dim = 63 must be even"},
      {"idx dim", [](json& j) { j["index_head_dim"] = 32; },
       "index_head_dim = 32 is smaller than qk_rope_head_dim = 64"},
      {"idx missing", [](json& j) { j.erase("index_topk"); }, "missing required field index_topk"},
      {"scoring", [](json& j) { j["scoring_func"] = "softmax"; },
       "scoring_func 'softmax' is not supported"},
      {"topk_method", [](json& j) { j["topk_method"] = "greedy"; },
       "topk_method 'greedy' is not supported"},
      {"tied", [](json& j) { j["tie_word_embeddings"] = true; },
       "tie_word_embeddings = true is not supported"},
      {"string", [](json& j) { j["hidden_size"] = "6144"; },
       "hidden_size must be an integer, got string \"6144\""},
      {"float", [](json& j) { j["n_routed_experts"] = 2.5; },
       "n_routed_experts must be an integer, got number 2.5"},
      {"bool", [](json& j) { j["norm_topk_prob"] = 1; }, "norm_topk_prob must be true or false"},
      {"eps", [](json& j) { j["rms_norm_eps"] = "1e-5"; }, "rms_norm_eps must be a number"},
      {"eps<=0", [](json& j) { j["rms_norm_eps"] = 0; }, "rms_norm_eps = 0 must be positive"},
      {"eos range", [](json& j) { j["eos_token_id"] = 154880; },
       "eos_token_id 154880 is not below vocab_size"},
      {"eos type",
       [](json& j) {
         j["eos_token_id"] = json::array({1, "x"});
       },
       "eos_token_id must be a non-negative integer or a list"},
      {"first_k", [](json& j) { j["first_k_dense_replace"] = 80; },
       "first_k_dense_replace = 80 exceeds num_hidden_layers = 78"},
      {"act", [](json& j) { j["hidden_act"] = "gelu"; }, "hidden_act 'gelu' is not supported"},
      {"q_lora null", [](json& j) { j["q_lora_rank"] = nullptr; }, "q_lora_rank is null"},
      {"groups too few",
       [](json& j) {
         j["n_group"] = 64;
         j["topk_group"] = 1;
       },
       "cannot supply num_experts_per_tok = 8"},
      {"params",
       [](json& j) {
         j["vocab_size"] = 2000000000;
         j["hidden_size"] = 2000000000;
       },
       "parameters"},
      {"expert sets",
       [](json& j) {
         j["num_hidden_layers"] = 5000;
         j["n_routed_experts"] = 512;
       },
       "expert weight sets"},
      {"rope obj", [](json& j) { j["rope_parameters"] = 5; }, "rope_parameters must be an object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    json j = glm5();
    c.mutate(j);
    EXPECT_HAS(error_of(j), c.expect);
  }
}

TEST(ModelConfig, AllProblemsReportedTogether) {
  json j = glm5();
  j.erase("hidden_size");
  j["num_experts_per_tok"] = 300;
  j["qk_rope_head_dim"] = 7;
  j["scoring_func"] = "softmax";
  j["tie_word_embeddings"] = true;
  j["vocab_size"] = "big";
  std::string e = error_of(j);
  EXPECT_HAS(e, "6 problems");
  EXPECT_HAS(e, "missing required field hidden_size");
  EXPECT_HAS(e, "num_experts_per_tok = 300 exceeds");
  EXPECT_HAS(e, "qk_rope_head_dim = 7 must be even");
  EXPECT_HAS(e, "scoring_func 'softmax'");
  EXPECT_HAS(e, "tie_word_embeddings");
  EXPECT_HAS(e, "vocab_size must be an integer");
}

TEST(ModelConfig, MalformedJson) {
  auto r = parse_model_config("{\"model_type\": ", "cfg/config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("cfg/config.json: invalid JSON", 0), 0u)
      << r.status().message();
  auto a = parse_model_config("[1,2]", "config.json");
  ASSERT_FALSE(a.ok());
  EXPECT_HAS(a.status().message(), "must be a JSON object");
  auto d = parse_model_config(R"({"hidden_size": 1, "hidden_size": 2})", "config.json");
  ASSERT_FALSE(d.ok());
  EXPECT_HAS(d.status().message(), "'hidden_size' appears twice");
}

TEST(ModelConfig, MlpLayerTypes) {
  std::vector<std::string> types(78, "sparse");
  types[0] = types[1] = types[2] = "dense";
  json j = glm5();
  j["mlp_layer_types"] = types;
  ModelConfig a = parse_ok(j);  // agrees with first_k_dense_replace
  EXPECT_EQ(a.first_k_dense_replace, 3);
  EXPECT_TRUE(a.mlp_layer_is_moe.empty());

  // glm_moe_dsa builds its layers from mlp_layer_types (HF), so the list wins.
  j["mlp_layer_types"][3] = "dense";
  ModelConfig b = parse_ok(j);
  EXPECT_EQ(b.first_k_dense_replace, 4);
  EXPECT_FALSE(b.is_moe_layer(3));
  EXPECT_TRUE(b.is_moe_layer(4));

  // A pattern first_k/freq cannot express (HF's own test uses ["sparse", "dense"]).
  json k = glm5();
  k.erase("first_k_dense_replace");
  k.erase("moe_layer_freq");
  k["mlp_layer_types"] = types;
  k["mlp_layer_types"][5] = "dense";
  ModelConfig p = parse_ok(k);
  ASSERT_EQ(p.mlp_layer_is_moe.size(), 78u);
  EXPECT_FALSE(p.is_moe_layer(0));
  EXPECT_TRUE(p.is_moe_layer(4));
  EXPECT_FALSE(p.is_moe_layer(5));
  EXPECT_TRUE(p.is_moe_layer(6));
  EXPECT_TRUE(p.is_moe_layer(78));  // MTP

  // deepseek_v3 ignores the list (HF uses first_k_dense_replace): it must agree.
  json v = deepseek_v3();
  std::vector<std::string> vt(61, "sparse");
  vt[0] = vt[1] = vt[2] = "dense";
  v["mlp_layer_types"] = vt;
  EXPECT_EQ(parse_ok(v).first_k_dense_replace, 3);
  v["mlp_layer_types"][5] = "dense";
  EXPECT_HAS(error_of(v),
             "mlp_layer_types[5] = \"dense\" disagrees with first_k_dense_replace = 3");

  k["mlp_layer_types"] = json::array({"dense"});
  EXPECT_HAS(error_of(k), "mlp_layer_types has 1 entries but num_hidden_layers is 78");
  k["mlp_layer_types"] = types;
  k["mlp_layer_types"][7] = "moe";
  EXPECT_HAS(error_of(k), "mlp_layer_types[7] must be \"dense\" or \"sparse\"");
}

TEST(ModelConfig, LoadFromDirectory) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("moe_cfg_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto missing = load_model_config(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_HAS(missing.status().message(), "config.json");
  std::ofstream(dir / "config.json") << kimi_k2().dump(2);
  auto c = load_model_config(dir);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Arch::kKimiK2);
  std::ofstream(dir / "config.json") << R"({"model_type": "glm_moe_dsa"})";
  auto bad = load_model_config(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind((dir / "config.json").string(), 0), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moe::model

namespace moe::model {
namespace {
TEST(ModelConfigIndexerTypes, OnlyFullLayersAreAccepted) {
  auto text = tiny_config_json("glm_moe_dsa");
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  j["indexer_types"] = {"full", "full", "full"};
  EXPECT_TRUE(parse_model_config(j.dump(), "config.json").ok());
  j["indexer_types"] = {"full", "shared", "full"};
  auto r = parse_model_config(j.dump(), "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("indexer_types[1]"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("shared"), std::string::npos);
}
}  // namespace
}  // namespace moe::model
