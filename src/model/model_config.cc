// config.json -> ModelConfig: typed reading of every field, family defaults, then validation.
// Every problem found is collected and reported together in one InvalidArgument.
#include "model/model_config.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "io/strict_json.h"

namespace moe::model {
namespace {

using nlohmann::json;

constexpr const char* kSupportedTypes = "glm_moe_dsa, deepseek_v3, kimi_k2, deepseek_v32";
// Bounds that keep every derived product (shapes, byte counts) far from int64 overflow.
constexpr int64_t kMaxWidth = (int64_t{1} << 31) - 1;  // widths, vocab, positions
constexpr int64_t kMaxCount = int64_t{1} << 16;        // layers, heads, experts, head dims
// Largest model we accept: 1e14 parameters (100x the largest models of this family).
constexpr double kMaxParams = 1e14;
// Routed-expert weight sets over all layers (GLM-5: 78 x 256; Kimi-K2: 61 x 384); bounds the
// size of the weight manifest.
constexpr int64_t kMaxExpertInstances = int64_t{1} << 20;
constexpr uintmax_t kMaxConfigBytes = 16u << 20;

// Reads typed fields of one JSON object, recording a problem for each missing or ill-typed one.
// null counts as absent.
class FieldReader {
 public:
  FieldReader(const json& obj, std::string prefix, std::vector<std::string>* problems)
      : obj_(obj), prefix_(std::move(prefix)), problems_(problems) {}

  const json* find(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool has(const char* key) const { return find(key) != nullptr; }

  // An integer in [lo, hi]. Integral floats (4096.0) are accepted.
  std::optional<int64_t> integer(const char* key, bool required, int64_t lo, int64_t hi) {
    const json* v = find(key);
    if (v == nullptr) {
      if (required) missing(key);
      return std::nullopt;
    }
    std::optional<int64_t> x;
    if (v->is_number_unsigned()) {
      uint64_t u = v->get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        x = static_cast<int64_t>(u);
      } else {
        x = std::numeric_limits<int64_t>::max();
      }
    } else if (v->is_number_integer()) {
      x = v->get<int64_t>();
    } else if (v->is_number_float()) {
      double d = v->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
        x = static_cast<int64_t>(d);
      }
    }
    if (!x) {
      add(name(key) + " must be an integer, got " + io::describe_json(*v));
      return std::nullopt;
    }
    if (*x < lo || *x > hi) {
      add(name(key) + " = " + std::to_string(*x) + " is out of range [" + std::to_string(lo) +
          ", " + std::to_string(hi) + "]");
      return std::nullopt;
    }
    return x;
  }

  // A finite number; `positive` requires > 0.
  std::optional<double> number(const char* key, bool required, bool positive) {
    const json* v = find(key);
    if (v == nullptr) {
      if (required) missing(key);
      return std::nullopt;
    }
    if (!v->is_number()) {
      add(name(key) + " must be a number, got " + io::describe_json(*v));
      return std::nullopt;
    }
    double d = v->get<double>();
    if (!std::isfinite(d) || (positive && !(d > 0))) {
      add(name(key) + " = " + v->dump() + " must be " + (positive ? "positive and " : "") +
          "finite");
      return std::nullopt;
    }
    return d;
  }

  std::optional<bool> boolean(const char* key) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) {
      add(name(key) + " must be true or false, got " + io::describe_json(*v));
      return std::nullopt;
    }
    return v->get<bool>();
  }

  std::optional<std::string> string(const char* key, bool required) {
    const json* v = find(key);
    if (v == nullptr) {
      if (required) missing(key);
      return std::nullopt;
    }
    if (!v->is_string()) {
      add(name(key) + " must be a string, got " + io::describe_json(*v));
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  void add(std::string problem) { problems_->push_back(std::move(problem)); }
  std::string name(const char* key) const { return prefix_ + key; }

 private:
  void missing(const char* key) { add("missing required field " + name(key)); }

  const json& obj_;
  std::string prefix_;
  std::vector<std::string>* problems_;
};

template <typename T, typename U>
void assign(T* dst, const std::optional<U>& v) {
  if (v) *dst = static_cast<T>(*v);
}

std::optional<Arch> arch_from_name(std::string_view s) {
  if (s == "glm_moe_dsa") return Arch::kGlmMoeDsa;
  if (s == "deepseek_v3") return Arch::kDeepseekV3;
  if (s == "kimi_k2") return Arch::kKimiK2;
  if (s == "deepseek_v32") return Arch::kDeepseekV32;
  return std::nullopt;
}

// One token id or a list of them, each in [0, vocab) when vocab is known.
std::vector<int64_t> read_token_ids(FieldReader& r, const char* key, bool allow_list) {
  std::vector<int64_t> ids;
  const json* v = r.find(key);
  if (v == nullptr) return ids;
  auto one = [&](const json& x) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0) {
      r.add(r.name(key) + " must be a non-negative integer" +
            (allow_list ? std::string(" or a list of them") : "") + ", got " +
            io::describe_json(x));
      return;
    }
    ids.push_back(x.get<int64_t>());
  };
  if (allow_list && v->is_array()) {
    for (const auto& x : *v) one(x);
  } else {
    one(*v);
  }
  return ids;
}

// RoPE from `rope_parameters` (transformers 5.x) or `rope_theta` + `rope_scaling` (as shipped).
void read_rope(FieldReader& r, int64_t max_position_embeddings, std::vector<std::string>* problems,
               RopeConfig* rope) {
  std::optional<double> top_theta = r.number("rope_theta", false, true);
  const json* params = r.find("rope_parameters");
  const json* scaling = r.find("rope_scaling");
  const json* src = params ? params : scaling;
  const std::string src_name = params ? "rope_parameters" : "rope_scaling";
  rope->theta = top_theta.value_or(10000.0);
  rope->type = RopeType::kDefault;
  if (src == nullptr) return;
  if (!src->is_object()) {
    r.add(src_name + " must be an object, got " + io::describe_json(*src));
    return;
  }
  FieldReader sr(*src, src_name + ".", problems);
  if (params) {
    std::optional<double> t = sr.number("rope_theta", false, true);
    if (t) {
      if (top_theta && *top_theta != *t) {
        r.add("rope_theta = " + std::to_string(*top_theta) +
              " disagrees with rope_parameters.rope_theta = " + std::to_string(*t));
      }
      rope->theta = *t;
    } else if (!top_theta && !sr.has("rope_theta")) {
      r.add("missing required field rope_parameters.rope_theta");
    }
  }
  std::optional<std::string> type = sr.string("rope_type", false);
  std::optional<std::string> legacy_type = sr.string("type", false);
  if (type && legacy_type && *type != *legacy_type) {
    r.add(src_name + ".rope_type '" + *type + "' disagrees with " + src_name + ".type '" +
          *legacy_type + "'");
  }
  if (!type) type = legacy_type;
  if (params && scaling && scaling->is_object()) {
    // Both forms given: they must describe the same rope.
    auto st = scaling->find("rope_type");
    if (st == scaling->end()) st = scaling->find("type");
    std::string stype =
        st != scaling->end() && st->is_string() ? st->get<std::string>() : "default";
    if (stype != type.value_or("default")) {
      r.add("rope_scaling type '" + stype + "' disagrees with rope_parameters.rope_type '" +
            type.value_or("default") + "'");
    }
  }
  const std::string t = type.value_or("default");
  if (t == "default") return;
  if (t != "yarn") {
    r.add(src_name + " rope type '" + t + "' is not supported; supported: default, yarn");
    return;
  }
  rope->type = RopeType::kYarn;
  std::optional<double> factor = sr.number("factor", true, true);
  if (factor) {
    if (*factor < 1.0) {
      r.add(src_name + ".factor = " + std::to_string(*factor) + " must be >= 1 for yarn");
    }
    rope->factor = *factor;
  }
  assign(&rope->beta_fast, sr.number("beta_fast", false, true));
  assign(&rope->beta_slow, sr.number("beta_slow", false, true));
  assign(&rope->mscale, sr.number("mscale", false, false));
  assign(&rope->mscale_all_dim, sr.number("mscale_all_dim", false, false));
  // Absent: transformers falls back to max_position_embeddings.
  rope->original_max_position_embeddings =
      max_position_embeddings > 0 ? max_position_embeddings : 4096;
  assign(&rope->original_max_position_embeddings,
         sr.integer("original_max_position_embeddings", false, 1, kMaxWidth));
  std::optional<double> af = sr.number("attention_factor", false, true);
  if (af) rope->attention_factor = *af;
}

// `mlp_layer_types` (transformers 5.x): "dense"/"sparse" per main-model layer. What HF builds
// (docs/hf-reference-notes.md §6): glm_moe_dsa and deepseek_v32 follow mlp_layer_types (derived
// from first_k_dense_replace only when absent), so the list wins and defines
// first_k_dense_replace/moe_layer_freq, or `mlp_layer_is_moe` for patterns they cannot express.
// deepseek_v3 (and kimi_k2) ignore the list and use first_k_dense_replace, so there the list must
// agree with it.
void read_mlp_layer_types(FieldReader& r, ModelConfig* cfg) {
  const json* v = r.find("mlp_layer_types");
  if (v == nullptr) return;
  if (!v->is_array()) {
    r.add("mlp_layer_types must be a list of \"dense\"/\"sparse\", got " + io::describe_json(*v));
    return;
  }
  if (static_cast<int64_t>(v->size()) != cfg->num_hidden_layers) {
    r.add("mlp_layer_types has " + std::to_string(v->size()) +
          " entries but num_hidden_layers is " + std::to_string(cfg->num_hidden_layers));
    return;
  }
  std::vector<uint8_t> is_moe;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_string() || (e.get<std::string>() != "dense" && e.get<std::string>() != "sparse")) {
      r.add("mlp_layer_types[" + std::to_string(i) + "] must be \"dense\" or \"sparse\", got " +
            io::describe_json(e));
      return;
    }
    is_moe.push_back(e.get<std::string>() == "sparse" ? 1 : 0);
  }
  if (!cfg->has_indexer) {
    for (size_t i = 0; i < is_moe.size(); ++i) {
      if ((is_moe[i] != 0) != cfg->is_moe_layer(static_cast<int>(i))) {
        r.add("mlp_layer_types[" + std::to_string(i) + "] = \"" + (is_moe[i] ? "sparse" : "dense") +
              "\" disagrees with first_k_dense_replace = " +
              std::to_string(cfg->first_k_dense_replace) +
              " and moe_layer_freq = " + std::to_string(cfg->moe_layer_freq) + " (" +
              cfg->model_type + " builds its layers from first_k_dense_replace)");
        return;
      }
    }
    return;
  }
  // "k dense layers, then all sparse" maps onto first_k_dense_replace = k.
  size_t k = 0;
  while (k < is_moe.size() && !is_moe[k]) ++k;
  bool prefix_form = true;
  for (size_t i = k; i < is_moe.size(); ++i) prefix_form = prefix_form && is_moe[i];
  cfg->moe_layer_freq = 1;
  if (prefix_form) {
    cfg->first_k_dense_replace = static_cast<int>(k);
  } else {
    cfg->first_k_dense_replace = 0;
    cfg->mlp_layer_is_moe = std::move(is_moe);
  }
}

// Cross-field checks on the typed values. Only fields that were read successfully are checked.
// `indexer_types` (GLM-5.2 IndexShare): "full" layers run their own DSA indexer, "shared" layers
// reuse the previous full layer's top-k and ship no indexer weights. Only "full" is supported.
void read_indexer_types(FieldReader& r) {
  const json* v = r.find("indexer_types");
  if (!v || v->is_null()) return;
  if (!v->is_array()) {
    r.add("indexer_types must be a list of \"full\"/\"shared\", got " + io::describe_json(*v));
    return;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_string() || e.get<std::string>() != "full") {
      r.add("indexer_types[" + std::to_string(i) + "] = " + io::describe_json(e) +
            ": only \"full\" indexer layers are supported (IndexShare \"shared\" layers, as in "
            "GLM-5.2, are not yet)");
      return;
    }
  }
}

void validate(const ModelConfig& c, FieldReader& r) {
  if (c.n_routed_experts > 0 && c.num_experts_per_tok > c.n_routed_experts) {
    r.add("num_experts_per_tok = " + std::to_string(c.num_experts_per_tok) +
          " exceeds n_routed_experts = " + std::to_string(c.n_routed_experts));
  }
  if (c.n_group > 0 && c.n_routed_experts > 0 && c.n_routed_experts % c.n_group != 0) {
    r.add("n_routed_experts = " + std::to_string(c.n_routed_experts) +
          " is not divisible by n_group = " + std::to_string(c.n_group));
  }
  if (c.topk_group > c.n_group) {
    r.add("topk_group = " + std::to_string(c.topk_group) +
          " exceeds n_group = " + std::to_string(c.n_group));
  } else if (c.n_group > 0 && c.n_routed_experts > 0 && c.n_routed_experts % c.n_group == 0 &&
             c.num_experts_per_tok <= c.n_routed_experts &&
             int64_t{c.topk_group} * (c.n_routed_experts / c.n_group) < c.num_experts_per_tok) {
    r.add("topk_group = " + std::to_string(c.topk_group) + " groups of " +
          std::to_string(c.n_routed_experts / c.n_group) + " experts cannot supply " +
          "num_experts_per_tok = " + std::to_string(c.num_experts_per_tok) + " experts");
  }
  if (c.qk_rope_head_dim % 2 != 0) {
    r.add("qk_rope_head_dim = " + std::to_string(c.qk_rope_head_dim) +
          " must be even (RoPE rotates pairs)");
  }
  if (c.has_indexer && c.index_head_dim > 0 && c.qk_rope_head_dim > 0 &&
      c.index_head_dim < c.qk_rope_head_dim) {
    r.add("index_head_dim = " + std::to_string(c.index_head_dim) +
          " is smaller than qk_rope_head_dim = " + std::to_string(c.qk_rope_head_dim) +
          " (the indexer rotates its first qk_rope_head_dim dims)");
  }
  if (c.scoring_func != "sigmoid") {
    r.add("scoring_func '" + c.scoring_func + "' is not supported; supported: sigmoid");
  }
  if (c.topk_method != "noaux_tc") {
    r.add("topk_method '" + c.topk_method + "' is not supported; supported: noaux_tc");
  }
  if (c.tie_word_embeddings) {
    r.add("tie_word_embeddings = true is not supported (this family ships an untied lm_head)");
  }
  if (c.num_hidden_layers > 0 && c.first_k_dense_replace > c.num_hidden_layers) {
    r.add("first_k_dense_replace = " + std::to_string(c.first_k_dense_replace) +
          " exceeds num_hidden_layers = " + std::to_string(c.num_hidden_layers));
  }
  if (c.rms_norm_eps >= 1.0) r.add("rms_norm_eps = " + std::to_string(c.rms_norm_eps) + " >= 1");
  auto check_id = [&](const char* what, int64_t id) {
    if (c.vocab_size > 0 && id >= c.vocab_size) {
      r.add(std::string(what) + " " + std::to_string(id) +
            " is not below vocab_size = " + std::to_string(c.vocab_size));
    }
  };
  for (int64_t id : c.eos_token_ids) check_id("eos_token_id", id);
  if (c.bos_token_id) check_id("bos_token_id", *c.bos_token_id);
  if (c.pad_token_id) check_id("pad_token_id", *c.pad_token_id);

  if (int64_t{c.num_hidden_layers} * c.n_routed_experts > kMaxExpertInstances) {
    r.add("num_hidden_layers x n_routed_experts = " +
          std::to_string(int64_t{c.num_hidden_layers} * c.n_routed_experts) +
          " expert weight sets is more than the supported " + std::to_string(kMaxExpertInstances));
  }
  // Parameter count estimate in double: catches sizes that are each in range but absurd together.
  const double D = static_cast<double>(c.hidden_size), H = c.num_attention_heads;
  const double attn =
      c.q_lora_rank * (D + H * c.qk_head_dim()) + (c.kv_lora_rank + c.qk_rope_head_dim) * D +
      c.kv_lora_rank * H * (c.qk_nope_head_dim + c.v_head_dim) + D * H * c.v_head_dim;
  const double ffn = 3.0 * D *
                     std::max(static_cast<double>(c.intermediate_size),
                              static_cast<double>(c.moe_intermediate_size) *
                                  (c.n_routed_experts + c.n_shared_experts));
  const double total = (attn + ffn) * c.num_hidden_layers + 2.0 * c.vocab_size * D;
  if (total > kMaxParams) {
    r.add("the sizes describe about " + std::to_string(total) +
          " parameters, more than the supported maximum of 1e14; check the size fields");
  }
}

}  // namespace

std::string_view arch_name(Arch a) {
  switch (a) {
    case Arch::kGlmMoeDsa:
      return "glm_moe_dsa";
    case Arch::kDeepseekV3:
      return "deepseek_v3";
    case Arch::kKimiK2:
      return "kimi_k2";
    case Arch::kDeepseekV32:
      return "deepseek_v32";
  }
  return "?";
}

double ModelConfig::softmax_scale() const {
  double scale = 1.0 / std::sqrt(static_cast<double>(qk_head_dim()));
  if (rope.type == RopeType::kYarn && rope.mscale_all_dim != 0.0) {
    double m = rope.factor > 1.0 ? 0.1 * rope.mscale_all_dim * std::log(rope.factor) + 1.0 : 1.0;
    scale *= m * m;
  }
  return scale;
}

Result<ModelConfig> parse_model_config(std::string_view json_text, std::string_view source) {
  const std::string src(source);
  MOE_ASSIGN_OR_RETURN(json root, io::parse_json_strict(json_text, src));
  if (!root.is_object()) {
    return invalid_argument(src + ": config must be a JSON object, got " + io::describe_json(root));
  }
  std::vector<std::string> problems;
  FieldReader r(root, "", &problems);
  ModelConfig c;

  std::optional<std::string> model_type = r.string("model_type", false);
  std::optional<Arch> arch;
  if (!r.has("model_type")) {
    r.add(std::string("missing required field model_type; supported: ") + kSupportedTypes);
  } else if (model_type) {
    arch = arch_from_name(*model_type);
    if (!arch) {
      r.add("model_type '" + *model_type + "' is not supported; supported: " + kSupportedTypes);
    }
  }
  if (arch) {
    c.arch = *arch;
    c.model_type = *model_type;
  }
  c.has_indexer = arch == Arch::kGlmMoeDsa || arch == Arch::kDeepseekV32;
  c.indexer_rope_interleave = arch != Arch::kDeepseekV32;  // V3.2's indexer is NeoX

  // Sizes.
  assign(&c.vocab_size, r.integer("vocab_size", true, 1, kMaxWidth));
  assign(&c.hidden_size, r.integer("hidden_size", true, 1, kMaxWidth));
  assign(&c.intermediate_size, r.integer("intermediate_size", true, 1, kMaxWidth));
  assign(&c.moe_intermediate_size, r.integer("moe_intermediate_size", true, 1, kMaxWidth));
  assign(&c.num_hidden_layers, r.integer("num_hidden_layers", true, 1, kMaxCount));
  assign(&c.first_k_dense_replace, r.integer("first_k_dense_replace", false, 0, kMaxCount));
  assign(&c.moe_layer_freq, r.integer("moe_layer_freq", false, 1, kMaxCount));
  assign(&c.num_nextn_predict_layers, r.integer("num_nextn_predict_layers", false, 0, kMaxCount));

  // Routing.
  assign(&c.n_routed_experts, r.integer("n_routed_experts", true, 1, kMaxCount));
  assign(&c.n_shared_experts, r.integer("n_shared_experts", false, 0, kMaxCount));
  assign(&c.num_experts_per_tok, r.integer("num_experts_per_tok", true, 1, kMaxCount));
  assign(&c.n_group, r.integer("n_group", false, 1, kMaxCount));
  assign(&c.topk_group, r.integer("topk_group", false, 1, kMaxCount));
  assign(&c.norm_topk_prob, r.boolean("norm_topk_prob"));
  assign(&c.routed_scaling_factor, r.number("routed_scaling_factor", false, true));
  assign(&c.scoring_func, r.string("scoring_func", false));
  assign(&c.topk_method, r.string("topk_method", false));
  if (std::optional<std::string> act = r.string("hidden_act", false); act && *act != "silu") {
    r.add("hidden_act '" + *act + "' is not supported; supported: silu");
  }

  // MLA.
  assign(&c.num_attention_heads, r.integer("num_attention_heads", true, 1, kMaxCount));
  if (auto q = root.find("q_lora_rank"); q != root.end() && q->is_null()) {
    r.add(
        "q_lora_rank is null (no query compression, as in DeepSeek-V2-Lite); only models with "
        "q_lora_rank are supported");
  } else {
    assign(&c.q_lora_rank, r.integer("q_lora_rank", true, 1, kMaxWidth));
  }
  assign(&c.kv_lora_rank, r.integer("kv_lora_rank", true, 1, kMaxWidth));
  assign(&c.qk_nope_head_dim, r.integer("qk_nope_head_dim", true, 1, kMaxCount));
  assign(&c.qk_rope_head_dim, r.integer("qk_rope_head_dim", true, 1, kMaxCount));
  assign(&c.v_head_dim, r.integer("v_head_dim", true, 1, kMaxCount));
  assign(&c.rope_interleave, r.boolean("rope_interleave"));
  assign(&c.max_position_embeddings, r.integer("max_position_embeddings", true, 1, kMaxWidth));
  read_rope(r, c.max_position_embeddings, &problems, &c.rope);
  assign(&c.rms_norm_eps, r.number("rms_norm_eps", false, true));
  // q_a_layernorm / kv_a_layernorm eps: transformers builds these RMSNorms with its default
  // eps = 1e-6 and does not pass rms_norm_eps (the GLM-5.1 module printout shows eps=1e-06);
  // sglang/vLLM pass rms_norm_eps instead. We match transformers, our parity oracle.
  c.attn_lora_norm_eps = 1e-6;

  // DSA indexer.
  if (c.has_indexer) {
    assign(&c.index_n_heads, r.integer("index_n_heads", true, 1, kMaxCount));
    assign(&c.index_head_dim, r.integer("index_head_dim", true, 1, kMaxCount));
    assign(&c.index_topk, r.integer("index_topk", true, 1, kMaxWidth));
    assign(&c.indexer_rope_interleave, r.boolean("indexer_rope_interleave"));
  }

  // Tokens and output.
  c.eos_token_ids = read_token_ids(r, "eos_token_id", true);
  if (std::vector<int64_t> b = read_token_ids(r, "bos_token_id", false); !b.empty()) {
    c.bos_token_id = b[0];
  }
  if (std::vector<int64_t> p = read_token_ids(r, "pad_token_id", false); !p.empty()) {
    c.pad_token_id = p[0];
  }
  assign(&c.tie_word_embeddings, r.boolean("tie_word_embeddings"));

  if (c.num_hidden_layers > 0) read_mlp_layer_types(r, &c);
  if (c.has_indexer) read_indexer_types(r);
  validate(c, r);

  if (!problems.empty()) {
    std::string msg = src + ": " + std::to_string(problems.size()) + " problem" +
                      (problems.size() == 1 ? "" : "s") + " in model config" +
                      (c.model_type.empty() ? "" : " (model_type " + c.model_type + ")") + ":";
    for (const std::string& p : problems) msg += "\n  - " + p;
    return invalid_argument(msg);
  }
  if (auto qc = root.find("quantization_config"); qc != root.end() && !qc->is_null()) {
    MOE_ASSIGN_OR_RETURN(c.quant, io::parse_quantization_config(*qc, src));
  }
  return c;
}

Result<ModelConfig> load_model_config(const std::filesystem::path& dir) {
  const std::filesystem::path p = dir / "config.json";
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) {
    return not_found(p.string() + ": not found; a model directory needs a HuggingFace config.json");
  }
  MOE_ASSIGN_OR_RETURN(std::string text, read_small_file(p, kMaxConfigBytes));
  MOE_ASSIGN_OR_RETURN(ModelConfig c, parse_model_config(text, p.string()));
  if (std::filesystem::exists(dir / "hf_quant_config.json", ec)) {
    MOE_ASSIGN_OR_RETURN(c.quant, io::load_quant_config(dir, json()));
  }
  return c;
}

}  // namespace moe::model
