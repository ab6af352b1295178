// Weight manifest: names and shapes for a tiny config, and validate_checkpoint on generated
// checkpoints (OK, then missing + unexpected + mis-shaped together, MTP skipped, dtypes).
#include "model/weight_manifest.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "io/safetensors.h"

namespace moe::model {
namespace {

namespace fs = std::filesystem;

// Tiny GLM-5-shaped config: 3 layers (1 dense), 4 experts, indexer, 1 MTP layer.
ModelConfig tiny(std::string_view model_type = "glm_moe_dsa") {
  std::string text = R"({"model_type": ")" + std::string(model_type) + R"(",
    "vocab_size": 32, "hidden_size": 16, "intermediate_size": 10, "moe_intermediate_size": 6,
    "num_hidden_layers": 3, "first_k_dense_replace": 1, "num_nextn_predict_layers": 1,
    "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
    "num_attention_heads": 2, "q_lora_rank": 8, "kv_lora_rank": 4, "qk_nope_head_dim": 4,
    "qk_rope_head_dim": 2, "v_head_dim": 5, "max_position_embeddings": 64,
    "index_n_heads": 3, "index_head_dim": 4, "index_topk": 4, "eos_token_id": 1})";
  auto r = parse_model_config(text, "tiny/config.json");
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return *r;
}

const WeightSpec* find(const std::vector<WeightSpec>& m, std::string_view name) {
  for (const auto& w : m)
    if (w.name == name) return &w;
  return nullptr;
}

TEST(WeightManifest, NamesAndShapes) {
  ModelConfig c = tiny();
  auto m = weight_manifest(c);
  // 3 global + 3 layers x (2 norms + 7 attention + 5 indexer) + 3 dense + 2 MoE layers x
  // (router 2 + 4 experts x 3 + shared 3).
  EXPECT_EQ(m.size(), 3u + 3 * 14 + 3 + 2 * (2 + 12 + 3));
  std::set<std::string> names;
  for (const auto& w : m) EXPECT_TRUE(names.insert(w.name).second) << "duplicate " << w.name;

  struct Expect {
    const char* name;
    Shape shape;
    WeightRole role;
  };
  const std::vector<Expect> expect = {
      {"model.embed_tokens.weight", {32, 16}, WeightRole::kEmbed},
      {"lm_head.weight", {32, 16}, WeightRole::kLmHead},
      {"model.norm.weight", {16}, WeightRole::kFinalNorm},
      {"model.layers.0.input_layernorm.weight", {16}, WeightRole::kAttnNorm},
      {"model.layers.0.post_attention_layernorm.weight", {16}, WeightRole::kFfnNorm},
      {"model.layers.0.self_attn.q_a_proj.weight", {8, 16}, WeightRole::kQaProj},
      {"model.layers.0.self_attn.q_a_layernorm.weight", {8}, WeightRole::kQaNorm},
      {"model.layers.0.self_attn.q_b_proj.weight", {2 * (4 + 2), 8}, WeightRole::kQbProj},
      {"model.layers.0.self_attn.kv_a_proj_with_mqa.weight", {4 + 2, 16}, WeightRole::kKvaProj},
      {"model.layers.0.self_attn.kv_a_layernorm.weight", {4}, WeightRole::kKvaNorm},
      {"model.layers.0.self_attn.kv_b_proj.weight", {2 * (4 + 5), 4}, WeightRole::kKvbProj},
      {"model.layers.0.self_attn.o_proj.weight", {16, 2 * 5}, WeightRole::kOProj},
      {"model.layers.2.self_attn.indexer.wq_b.weight", {3 * 4, 8}, WeightRole::kIdxWqb},
      {"model.layers.2.self_attn.indexer.wk.weight", {4, 16}, WeightRole::kIdxWk},
      {"model.layers.2.self_attn.indexer.k_norm.weight", {4}, WeightRole::kIdxKNormWeight},
      {"model.layers.2.self_attn.indexer.k_norm.bias", {4}, WeightRole::kIdxKNormBias},
      {"model.layers.2.self_attn.indexer.weights_proj.weight",
       {3, 16},
       WeightRole::kIdxWeightsProj},
      {"model.layers.0.mlp.gate_proj.weight", {10, 16}, WeightRole::kDenseGate},
      {"model.layers.0.mlp.up_proj.weight", {10, 16}, WeightRole::kDenseUp},
      {"model.layers.0.mlp.down_proj.weight", {16, 10}, WeightRole::kDenseDown},
      {"model.layers.1.mlp.gate.weight", {4, 16}, WeightRole::kRouterGate},
      {"model.layers.1.mlp.gate.e_score_correction_bias", {4}, WeightRole::kRouterBias},
      {"model.layers.1.mlp.experts.3.gate_proj.weight", {6, 16}, WeightRole::kExpertGate},
      {"model.layers.1.mlp.experts.3.up_proj.weight", {6, 16}, WeightRole::kExpertUp},
      {"model.layers.2.mlp.experts.0.down_proj.weight", {16, 6}, WeightRole::kExpertDown},
      {"model.layers.2.mlp.shared_experts.gate_proj.weight", {6, 16}, WeightRole::kSharedGate},
      {"model.layers.2.mlp.shared_experts.up_proj.weight", {6, 16}, WeightRole::kSharedUp},
      {"model.layers.2.mlp.shared_experts.down_proj.weight", {16, 6}, WeightRole::kSharedDown},
  };
  for (const Expect& e : expect) {
    const WeightSpec* w = find(m, e.name);
    ASSERT_NE(w, nullptr) << e.name;
    EXPECT_EQ(w->shape, e.shape) << e.name << " " << w->shape.to_string();
    EXPECT_EQ(w->role, e.role) << e.name;
  }
  EXPECT_EQ(find(m, "model.layers.0.mlp.gate.weight"), nullptr);  // layer 0 is dense
  EXPECT_EQ(find(m, "model.layers.1.mlp.gate_proj.weight"), nullptr);
  EXPECT_EQ(find(m, "model.layers.3.input_layernorm.weight"), nullptr);  // MTP excluded
  const WeightSpec* e = find(m, "model.layers.2.mlp.experts.1.up_proj.weight");
  EXPECT_EQ(e->layer, 2);
  EXPECT_EQ(e->expert, 1);
  EXPECT_EQ(find(m, "lm_head.weight")->layer, -1);
  EXPECT_EQ(find(m, "model.layers.1.mlp.gate.e_score_correction_bias")->dtypes,
            (std::vector<DType>{DType::kF32, DType::kBF16}));
  EXPECT_EQ(find(m, "model.layers.0.self_attn.q_a_proj.weight")->dtypes,
            (std::vector<DType>{DType::kBF16, DType::kF16, DType::kF32}));
  EXPECT_EQ(role_name(WeightRole::kExpertGate), "expert_gate");
  EXPECT_EQ(role_name(WeightRole::kQaProj), "q_a_proj");
}

TEST(WeightManifest, NoIndexerForDeepseekV3AndNoSharedWhenZero) {
  ModelConfig c = tiny("deepseek_v3");
  auto m = weight_manifest(c);
  for (const auto& w : m) EXPECT_EQ(w.name.find("indexer"), std::string::npos) << w.name;
  EXPECT_EQ(m.size(), 3u + 3 * 9 + 3 + 2 * (2 + 12 + 3));
  c.n_shared_experts = 0;
  for (const auto& w : weight_manifest(c)) {
    EXPECT_EQ(w.name.find("shared_experts"), std::string::npos) << w.name;
  }
  c.n_shared_experts = 2;
  EXPECT_EQ(find(weight_manifest(c), "model.layers.1.mlp.shared_experts.down_proj.weight")->shape,
            Shape({16, 12}));
}

TEST(WeightManifest, IsMtpTensor) {
  ModelConfig c = tiny();
  EXPECT_TRUE(is_mtp_tensor("model.layers.3.eh_proj.weight", c));
  EXPECT_TRUE(is_mtp_tensor("model.layers.3.mlp.experts.0.up_proj.weight", c));
  EXPECT_TRUE(is_mtp_tensor("model.layers.17.x", c));
  EXPECT_FALSE(is_mtp_tensor("model.layers.2.input_layernorm.weight", c));
  EXPECT_FALSE(is_mtp_tensor("model.layers.03.x", c));
  EXPECT_FALSE(is_mtp_tensor("model.layers.x.y", c));
  EXPECT_FALSE(is_mtp_tensor("model.layers.3", c));
  EXPECT_FALSE(is_mtp_tensor("model.layers..x", c));
  EXPECT_FALSE(is_mtp_tensor("lm_head.weight", c));
  EXPECT_FALSE(is_mtp_tensor("model.layers.-3.x", c));
}

class ValidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("moe_manifest_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes model.safetensors with one tensor per spec (first accepted dtype, contents zero)
  // after applying `edit` to the spec list.
  void write(const std::vector<io::TensorToWrite>& tensors) {
    ASSERT_TRUE(io::write_safetensors(dir_ / "model.safetensors", tensors).ok());
  }
  std::vector<io::TensorToWrite> from_manifest(const std::vector<WeightSpec>& m) {
    std::vector<io::TensorToWrite> out;
    for (const auto& w : m) out.push_back(make(w.name, w.dtypes[0], w.shape));
    return out;
  }
  io::TensorToWrite make(const std::string& name, DType d, Shape s) {
    size_t n = static_cast<size_t>(s.numel()) * dtype_size(d);
    if (zeros_.size() < n) zeros_.resize(n);
    return {name, d, s, std::span<const std::byte>(zeros_.data(), n)};
  }
  Status validate(const ModelConfig& c) {
    auto ck = io::Checkpoint::open(dir_);
    EXPECT_TRUE(ck.ok()) << ck.status().to_string();
    if (!ck.ok()) return ck.status();
    return validate_checkpoint(c, *ck);
  }
  fs::path dir_;
  std::vector<std::byte> zeros_ = std::vector<std::byte>(1 << 16);
};

TEST_F(ValidateTest, MatchingCheckpointWithMtpIsOk) {
  ModelConfig c = tiny();
  auto tw = from_manifest(weight_manifest(c));
  tw.push_back(make("model.layers.3.eh_proj.weight", DType::kBF16, {16, 32}));
  tw.push_back(make("model.layers.3.mlp.experts.0.up_proj.weight", DType::kBF16, {6, 16}));
  // Accepted alternatives: an F16 matrix, a BF16 router bias.
  for (auto& t : tw) {
    if (t.name == "model.layers.0.self_attn.o_proj.weight") t = make(t.name, DType::kF16, t.shape);
    if (t.name == "model.layers.1.mlp.gate.e_score_correction_bias") {
      t = make(t.name, DType::kBF16, t.shape);
    }
  }
  write(tw);
  Status s = validate(c);
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST_F(ValidateTest, MissingUnexpectedMisshapedReportedTogether) {
  ModelConfig c = tiny();
  auto tw = from_manifest(weight_manifest(c));
  std::erase_if(tw, [](const io::TensorToWrite& t) {
    return t.name == "model.layers.2.mlp.experts.1.down_proj.weight";
  });
  tw.push_back(make("model.layers.1.self_attn.rotary_emb.inv_freq", DType::kF32, {1}));
  for (auto& t : tw) {
    if (t.name == "model.layers.0.self_attn.kv_b_proj.weight") t = make(t.name, t.dtype, {18, 5});
    if (t.name == "model.norm.weight") t = make(t.name, DType::kI32, t.shape);
  }
  tw.push_back(make("model.layers.3.eh_proj.weight", DType::kBF16, {16, 32}));  // MTP: fine
  write(tw);
  Status s = validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  const std::string& m = s.message();
  EXPECT_EQ(m.rfind(dir_.string(), 0), 0u) << m;
  for (const char* part :
       {"1 missing, 1 unexpected, 1 wrong shape, 1 wrong dtype",
        "missing: model.layers.2.mlp.experts.1.down_proj.weight BF16 [16, 6]",
        "unexpected: model.layers.1.self_attn.rotary_emb.inv_freq F32 [1]",
        "wrong shape: model.layers.0.self_attn.kv_b_proj.weight is [18, 5], the config needs "
        "[18, 4]",
        "wrong dtype: model.norm.weight is I32, accepted: BF16, F16, F32"}) {
    EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in:\n" << m;
  }
  EXPECT_EQ(m.find("eh_proj"), std::string::npos) << m;
}

TEST_F(ValidateTest, LongReportsAreCappedButShowEveryKind) {
  ModelConfig c = tiny();
  c.n_routed_experts = 40;  // manifest now wants 36 more experts per MoE layer
  ModelConfig shipped = tiny();
  auto tw = from_manifest(weight_manifest(shipped));
  tw.push_back(make("bogus.weight", DType::kF32, {1}));
  for (auto& t : tw) {
    if (t.name == "model.layers.1.mlp.gate.e_score_correction_bias") {
      t = make(t.name, DType::kF8E4M3, t.shape);
    }
  }
  write(tw);
  Status s = validate(c);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_NE(m.find("216 missing, 1 unexpected, 4 wrong shape, 1 wrong dtype"), std::string::npos)
      << m;
  EXPECT_NE(m.find("unexpected: bogus.weight"), std::string::npos) << m;
  EXPECT_NE(m.find("wrong dtype: model.layers.1.mlp.gate.e_score_correction_bias is F8_E4M3, "
                   "accepted: F32, BF16"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("FP8"), std::string::npos) << m;
  EXPECT_NE(m.find("... and 192 more"), std::string::npos) << m;
  EXPECT_LE(std::count(m.begin(), m.end(), '\n'), 33);
}

// The HF-generated fixtures (tools/golden) must parse and match their manifests exactly.
TEST(WeightManifest, HfFixturesValidate) {
  for (const char* name : {"glm_moe_dsa", "deepseek_v3", "deepseek_v32"}) {
    SCOPED_TRACE(name);
    const fs::path dir = fs::path(MOE_SOURCE_DIR) / "tests" / "fixtures" / name;
    if (!fs::exists(dir / "model.safetensors")) GTEST_SKIP() << dir << " not present";
    auto cfg = load_model_config(dir);
    ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
    EXPECT_EQ(cfg->model_type, name);
    auto ck = io::Checkpoint::open(dir);
    ASSERT_TRUE(ck.ok()) << ck.status().to_string();
    Status s = validate_checkpoint(*cfg, *ck);
    EXPECT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(ck->entries().size(), weight_manifest(*cfg).size());
  }
}

}  // namespace
}  // namespace moe::model
