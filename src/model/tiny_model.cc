#include "model/tiny_model.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/half.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "model/weight_manifest.h"
#include "ops/sampling_rng.h"

namespace moe::model {
namespace {

// Deterministic normal draws: Box-Muller over splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  double uniform() { return static_cast<double>(ops::splitmix64(state_++) >> 11) * 0x1.0p-53; }
  double normal() {
    double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace

Result<std::string> tiny_config_json(std::string_view arch) {
  nlohmann::ordered_json j;
  if (arch == "glm_moe_dsa") {
    j["architectures"] = {"GlmMoeDsaForCausalLM"};
  } else if (arch == "deepseek_v3") {
    j["architectures"] = {"DeepseekV3ForCausalLM"};
  } else if (arch == "deepseek_v32") {
    j["architectures"] = {"DeepseekV32ForCausalLM"};
  } else {
    return invalid_argument("unknown --arch '" + std::string(arch) +
                            "'; supported: glm_moe_dsa, deepseek_v3, deepseek_v32");
  }
  j["model_type"] = arch;
  j["vocab_size"] = 512;
  j["hidden_size"] = 64;
  j["intermediate_size"] = 96;
  j["moe_intermediate_size"] = 32;
  j["num_hidden_layers"] = 3;
  j["first_k_dense_replace"] = 1;
  j["moe_layer_freq"] = 1;
  j["n_routed_experts"] = 8;
  j["n_shared_experts"] = 1;
  j["num_experts_per_tok"] = 2;
  j["n_group"] = arch == "glm_moe_dsa" ? 1 : 4;
  j["topk_group"] = arch == "glm_moe_dsa" ? 1 : 2;
  j["topk_method"] = "noaux_tc";
  j["scoring_func"] = "sigmoid";
  j["norm_topk_prob"] = true;
  j["routed_scaling_factor"] = 2.5;
  j["num_attention_heads"] = 4;
  j["num_key_value_heads"] = 4;
  j["q_lora_rank"] = 32;
  j["kv_lora_rank"] = 32;
  j["qk_nope_head_dim"] = 16;
  j["qk_rope_head_dim"] = 8;
  j["v_head_dim"] = 16;
  j["rope_interleave"] = true;
  if (arch == "glm_moe_dsa") {
    j["rope_parameters"] = {{"rope_theta", 1000000.0}, {"rope_type", "default"}};
    j["rms_norm_eps"] = 1e-5;
  } else {
    j["rope_theta"] = 10000.0;
    j["rope_scaling"] = {{"type", "yarn"},
                         {"factor", 40.0},
                         {"beta_fast", 32.0},
                         {"beta_slow", 1.0},
                         {"mscale", 1.0},
                         {"mscale_all_dim", 1.0},
                         {"original_max_position_embeddings", 64}};
    j["rms_norm_eps"] = 1e-6;
  }
  if (arch != "deepseek_v3") {
    j["index_n_heads"] = 2;
    j["index_head_dim"] = 16;
    j["index_topk"] = 8;
    j["indexer_rope_interleave"] = arch == "glm_moe_dsa";
  }
  j["max_position_embeddings"] = 4096;
  j["eos_token_id"] =
      arch == "glm_moe_dsa" ? nlohmann::ordered_json{1, 2} : nlohmann::ordered_json(1);
  j["bos_token_id"] = 0;
  j["tie_word_embeddings"] = false;
  j["num_nextn_predict_layers"] = 0;
  j["torch_dtype"] = "bfloat16";
  return j.dump(2) + "\n";
}

Status write_tiny_model(const std::filesystem::path& dir, std::string_view arch, uint64_t seed) {
  MOE_ASSIGN_OR_RETURN(std::string text, tiny_config_json(arch));
  MOE_ASSIGN_OR_RETURN(ModelConfig cfg, parse_model_config(text, "tiny config.json"));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return invalid_argument("cannot create directory " + dir.string() + ": " + ec.message());
  {
    std::ofstream f(dir / "config.json");
    f << text;
    if (!f) return invalid_argument("cannot write " + (dir / "config.json").string());
  }
  std::vector<WeightSpec> specs = weight_manifest(cfg);
  std::vector<std::vector<std::byte>> storage(specs.size());
  std::vector<io::TensorToWrite> out;
  Rng rng(seed * 0x9e3779b97f4a7c15ull + 12345);
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec& s = specs[i];
    const int64_t n = s.shape.numel();
    const bool is_vector = s.shape.rank() == 1;
    const bool is_bias = s.role == WeightRole::kRouterBias || s.role == WeightRole::kIdxKNormBias;
    const DType dt = s.role == WeightRole::kRouterBias ? DType::kF32 : DType::kBF16;
    // Matrices: std 1/sqrt(fan_in) (embed / lm_head larger, for clear greedy margins);
    // norm weights around 1; biases small.
    double stdev = is_vector ? 0.1 : 1.0 / std::sqrt(static_cast<double>(s.shape[-1]));
    if (s.role == WeightRole::kEmbed) stdev = 1.0;
    if (s.role == WeightRole::kLmHead) stdev = 4.0 / std::sqrt(static_cast<double>(s.shape[-1]));
    storage[i].resize(static_cast<size_t>(n) * dtype_size(dt));
    for (int64_t k = 0; k < n; ++k) {
      double v = rng.normal() * stdev;
      if (is_vector && !is_bias) v += 1.0;
      if (dt == DType::kF32) {
        float f = static_cast<float>(v);
        std::memcpy(storage[i].data() + 4 * k, &f, 4);
      } else {
        uint16_t h = f32_to_bf16(static_cast<float>(v));
        std::memcpy(storage[i].data() + 2 * k, &h, 2);
      }
    }
    out.push_back({s.name, dt, s.shape, storage[i]});
  }
  return io::write_safetensors(dir / "model.safetensors", out, {{"format", "pt"}});
}

}  // namespace moe::model
