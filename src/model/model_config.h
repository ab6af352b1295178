// ModelConfig: the typed, validated form of a HuggingFace config.json for the DeepSeek-V3
// family (glm_moe_dsa = GLM-5, deepseek_v3 = DeepSeek-V3/R1, kimi_k2, deepseek_v32).
// Parsed once; immutable afterwards. Field names follow config.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/quant_config.h"

namespace moe::model {

enum class Arch { kGlmMoeDsa, kDeepseekV3, kKimiK2, kDeepseekV32 };

// "glm_moe_dsa", "deepseek_v3", "kimi_k2", "deepseek_v32".
std::string_view arch_name(Arch a);

enum class RopeType { kDefault, kYarn };

// Rotary embedding parameters, from `rope_theta` + `rope_scaling` (as shipped) or
// `rope_parameters` (as transformers 5.x writes them).
struct RopeConfig {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;  // rope_theta
  // YaRN only (rope_type "yarn"):
  double factor = 1.0;                              // context extension factor
  double beta_fast = 32.0;                          // high-frequency boundary (rotations)
  double beta_slow = 1.0;                           // low-frequency boundary (rotations)
  double mscale = 1.0;                              // mscale of the attention factor
  double mscale_all_dim = 0.0;                      // mscale_all_dim (DeepSeek: 1.0)
  int64_t original_max_position_embeddings = 4096;  // pre-extension context length
  // If the config gives `attention_factor` explicitly (transformers 5.x), it is used for
  // the cos/sin scaling instead of the value derived from mscale / mscale_all_dim.
  std::optional<double> attention_factor;
};

struct ModelConfig {
  Arch arch = Arch::kGlmMoeDsa;
  std::string model_type;  // as written in config.json

  // Sizes.
  int64_t vocab_size = 0;             // rows of embed_tokens and lm_head
  int64_t hidden_size = 0;            // D
  int64_t intermediate_size = 0;      // dense MLP intermediate (layers < first_k_dense_replace)
  int64_t moe_intermediate_size = 0;  // I: per routed expert; shared expert uses I * n_shared
  int num_hidden_layers = 0;          // main-model layers; MTP layers are stored after these
  int first_k_dense_replace = 0;      // layers [0, k) use the dense MLP
  int moe_layer_freq = 1;             // layer l >= k is MoE when (l % moe_layer_freq) == 0
  int num_nextn_predict_layers = 0;   // MTP layers stored as model.layers.{num_hidden_layers+i}

  // Routed experts (noaux_tc router).
  int n_routed_experts = 0;              // E
  int n_shared_experts = 0;              // shared experts, fused into one MLP of I * n_shared
  int num_experts_per_tok = 0;           // K
  int n_group = 1;                       // expert groups for group-limited routing
  int topk_group = 1;                    // groups kept per token
  bool norm_topk_prob = true;            // renormalise the K selected sigmoid scores
  double routed_scaling_factor = 1.0;    // multiplies the routing weights
  std::string scoring_func = "sigmoid";  // only "sigmoid" is supported
  std::string topk_method = "noaux_tc";  // only "noaux_tc" is supported

  // MLA attention.
  int num_attention_heads = 0;  // H
  int64_t q_lora_rank = 0;      // rank of the query compression (c_q)
  int64_t kv_lora_rank = 0;     // L: latent KV width (c_kv)
  int qk_nope_head_dim = 0;     // per-head non-rotary query/key dims
  int qk_rope_head_dim = 0;     // R: rotary dims (one shared key head)
  int v_head_dim = 0;           // per-head value dims
  bool rope_interleave = true;  // true: GPT-J pairs (2i, 2i+1); false: NeoX halves
  RopeConfig rope;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;        // eps of input/post-attention/final RMSNorms
  double attn_lora_norm_eps = 1e-6;  // eps of q_a_layernorm and kv_a_layernorm (HF: default 1e-6)

  // DSA lightning indexer (glm_moe_dsa, deepseek_v32 only).
  bool has_indexer = false;
  int index_n_heads = 0;                // indexer query heads
  int index_head_dim = 0;               // indexer head dim (first qk_rope_head_dim dims rotate)
  int index_topk = 0;                   // keys kept per query
  bool indexer_rope_interleave = true;  // GLM-5: true; DeepSeek-V3.2: false (NeoX)

  // Tokens and output.
  std::vector<int64_t> eos_token_ids;  // generation stops at any of these
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;
  bool tie_word_embeddings = false;  // only false is supported (DeepSeek family is untied)

  // Per-layer MLP kind from `mlp_layer_types` (transformers 5.x) when it cannot be expressed as
  // first_k_dense_replace/moe_layer_freq; empty otherwise (the common case). Entry l is 1 when
  // main-model layer l is MoE. Layers past the list (MTP) are MoE.
  std::vector<uint8_t> mlp_layer_is_moe;

  // Quantization of the checkpoint's matrices: config.json `quantization_config`, overridden by
  // hf_quant_config.json when the directory has one (load_model_config). kNone for BF16.
  io::QuantConfig quant;

  // Derived helpers.
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  bool is_moe_layer(int layer) const {
    if (n_routed_experts <= 0) return false;
    if (!mlp_layer_is_moe.empty() && layer >= 0 &&
        static_cast<size_t>(layer) < mlp_layer_is_moe.size()) {
      return mlp_layer_is_moe[static_cast<size_t>(layer)] != 0;
    }
    return layer >= first_k_dense_replace && layer % (moe_layer_freq > 0 ? moe_layer_freq : 1) == 0;
  }
  // Softmax scale of MLA: qk_head_dim^-0.5, times mscale^2 for YaRN with mscale_all_dim.
  double softmax_scale() const;
};

// Parses config.json text. `source` names the file in error messages. Unknown model_type or
// inconsistent fields give one InvalidArgument listing every problem and what is supported.
Result<ModelConfig> parse_model_config(std::string_view json_text, std::string_view source);
// Reads and parses <dir>/config.json, plus <dir>/hf_quant_config.json when present.
Result<ModelConfig> load_model_config(const std::filesystem::path& dir);

}  // namespace moe::model
