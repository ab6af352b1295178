// The GLM-5-shaped random checkpoint (model/glm5_shape): names, shapes and dtypes as the weight
// manifest and the ModelOpt NVFP4 layout say, sharding, and that the reference backend loads and
// runs it. Host only (a width-shrunk copy of the structure; the full size is checked on paper).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "backends/reference/reference_ops.h"
#include "io/checkpoint.h"
#include "model/glm5_shape.h"
#include "model/loader.h"
#include "model/model_config.h"
#include "model/weight_manifest.h"
#include "runtime/generate.h"

namespace moe::model {
namespace {

std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("moe_glm5_shape_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

TEST(Glm5Shape, FullSizeConfigHasGlm5Dimensions) {
  Glm5ShapeOptions o;
  auto cfg = parse_model_config(glm5_shape_config_json(o), "glm5 shape");
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  EXPECT_EQ(cfg->hidden_size, 6144);
  EXPECT_EQ(cfg->num_attention_heads, 64);
  EXPECT_EQ(cfg->q_lora_rank, 2048);
  EXPECT_EQ(cfg->kv_lora_rank, 512);
  EXPECT_EQ(cfg->qk_nope_head_dim, 192);
  EXPECT_EQ(cfg->qk_rope_head_dim, 64);
  EXPECT_EQ(cfg->v_head_dim, 256);
  EXPECT_EQ(cfg->index_n_heads, 32);
  EXPECT_EQ(cfg->index_head_dim, 128);
  EXPECT_EQ(cfg->index_topk, 2048);
  EXPECT_EQ(cfg->n_routed_experts, 256);
  EXPECT_EQ(cfg->num_experts_per_tok, 8);
  EXPECT_EQ(cfg->moe_intermediate_size, 2048);
  EXPECT_EQ(cfg->intermediate_size, 12288);
  EXPECT_EQ(cfg->vocab_size, 154880);
  EXPECT_EQ(cfg->num_hidden_layers, 4);
  EXPECT_EQ(cfg->first_k_dense_replace, 1);
  auto q = io::parse_hf_quant_config(glm5_shape_quant_config_json(), "hf_quant_config.json");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->format, io::QuantFormat::kNvfp4);
  EXPECT_EQ(q->group_size, 16);
  EXPECT_NE(q->excluded_by("lm_head"), nullptr);
  EXPECT_NE(q->excluded_by("model.layers.2.self_attn.indexer.wk"), nullptr);
  EXPECT_EQ(q->excluded_by("model.layers.2.mlp.experts.5.up_proj"), nullptr);
}

TEST(Glm5Shape, WritesTheNvfp4LayoutAndTheReferenceRunsIt) {
  const auto dir = temp_dir("nvfp4");
  Glm5ShapeOptions o;
  o.shrink = 16;                 // D 384, 16 experts of I 128, 4 heads, vocab 9680
  o.max_shard_bytes = 2u << 20;  // several shards
  ASSERT_TRUE(write_glm5_shape_model(dir, o).ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "model.safetensors.index.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "hf_quant_config.json"));
  auto cfg = load_model_config(dir);
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  auto ckpt = io::Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  Status valid = validate_checkpoint(*cfg, *ckpt);
  EXPECT_TRUE(valid.ok()) << valid.to_string();

  const int64_t D = 384, I = 128, Iq = 12288 / 16;
  struct Want {
    std::string name;
    DType dt;
    std::vector<int64_t> shape;
  };
  const std::vector<Want> wants = {
      {"model.layers.1.mlp.experts.0.gate_proj.weight", DType::kU8, {I, D / 2}},
      {"model.layers.1.mlp.experts.0.gate_proj.weight_scale", DType::kF8E4M3, {I, D / 16}},
      {"model.layers.1.mlp.experts.0.gate_proj.weight_scale_2", DType::kF32, {}},
      {"model.layers.1.mlp.experts.0.gate_proj.input_scale", DType::kF32, {}},
      {"model.layers.3.mlp.experts.15.down_proj.weight", DType::kU8, {D, I / 2}},
      {"model.layers.3.mlp.shared_experts.up_proj.weight", DType::kU8, {I, D / 2}},
      {"model.layers.0.mlp.gate_proj.weight", DType::kU8, {Iq, D / 2}},
      {"model.layers.0.mlp.down_proj.weight_scale", DType::kF8E4M3, {D, Iq / 16}},
      {"model.layers.2.self_attn.q_a_proj.weight", DType::kBF16, {128, D}},
      {"model.layers.2.self_attn.indexer.wk.weight", DType::kBF16, {8, D}},
      {"model.layers.2.mlp.gate.weight", DType::kBF16, {16, D}},
      {"lm_head.weight", DType::kBF16, {9680, D}},
  };
  for (const Want& w : wants) {
    const auto* e = ckpt->find(w.name);
    ASSERT_NE(e, nullptr) << w.name;
    Tensor t = ckpt->tensor(w.name);
    EXPECT_EQ(t.dtype(), w.dt) << w.name;
    ASSERT_EQ(t.shape().rank(), static_cast<int>(w.shape.size())) << w.name;
    for (size_t d = 0; d < w.shape.size(); ++d) EXPECT_EQ(t.shape()[d], w.shape[d]) << w.name;
  }
  EXPECT_EQ(ckpt->find("model.layers.2.self_attn.q_a_proj.weight_scale"), nullptr);

  ThreadPool pool(2);
  reference::ReferenceOps ops(pool);
  auto loaded = load_model(dir, ops);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  KvCache cache(loaded->model->config(), 4, 16, ops);
  HostArena ws;
  runtime::GenerateOptions opt;
  opt.max_new_tokens = 2;
  opt.ignore_eos = true;
  const std::vector<int32_t> prompt = {5, 77, 1234};
  auto r = runtime::generate(*loaded->model, ops, ws, cache, prompt, opt);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->generated.size(), 2u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moe::model
