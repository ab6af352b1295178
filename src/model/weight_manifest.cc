// The weight manifest (names, shapes, accepted dtypes per glm5-model.md §2.0, generalised by
// ModelConfig) and the checkpoint validation that reports every mismatch at once.
#include "model/weight_manifest.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace moe::model {
namespace {

constexpr size_t kMaxReportLines = 30;

const std::vector<DType>& matrix_dtypes() {
  static const std::vector<DType> k = {DType::kBF16, DType::kF16, DType::kF32};
  return k;
}
const std::vector<DType>& norm_dtypes() { return matrix_dtypes(); }
const std::vector<DType>& router_bias_dtypes() {
  static const std::vector<DType> k = {DType::kF32, DType::kBF16};  // shipped as F32
  return k;
}

std::string dtype_list(const std::vector<DType>& ds) {
  std::string s;
  for (DType d : ds) s += (s.empty() ? "" : ", ") + std::string(dtype_name(d));
  return s;
}

class ManifestBuilder {
 public:
  explicit ManifestBuilder(std::vector<WeightSpec>* out) : out_(out) {}
  void add(std::string name, WeightRole role, int layer, int expert, Shape shape,
           const std::vector<DType>& dtypes) {
    out_->push_back(WeightSpec{std::move(name), role, layer, expert, shape, dtypes});
  }

 private:
  std::vector<WeightSpec>* out_;
};

}  // namespace

std::string_view role_name(WeightRole r) {
  switch (r) {
    case WeightRole::kEmbed:
      return "embed";
    case WeightRole::kLmHead:
      return "lm_head";
    case WeightRole::kFinalNorm:
      return "final_norm";
    case WeightRole::kAttnNorm:
      return "attn_norm";
    case WeightRole::kFfnNorm:
      return "ffn_norm";
    case WeightRole::kQaProj:
      return "q_a_proj";
    case WeightRole::kQaNorm:
      return "q_a_norm";
    case WeightRole::kQbProj:
      return "q_b_proj";
    case WeightRole::kKvaProj:
      return "kv_a_proj";
    case WeightRole::kKvaNorm:
      return "kv_a_norm";
    case WeightRole::kKvbProj:
      return "kv_b_proj";
    case WeightRole::kOProj:
      return "o_proj";
    case WeightRole::kIdxWqb:
      return "indexer_wq_b";
    case WeightRole::kIdxWk:
      return "indexer_wk";
    case WeightRole::kIdxKNormWeight:
      return "indexer_k_norm_weight";
    case WeightRole::kIdxKNormBias:
      return "indexer_k_norm_bias";
    case WeightRole::kIdxWeightsProj:
      return "indexer_weights_proj";
    case WeightRole::kDenseGate:
      return "dense_gate";
    case WeightRole::kDenseUp:
      return "dense_up";
    case WeightRole::kDenseDown:
      return "dense_down";
    case WeightRole::kRouterGate:
      return "router_gate";
    case WeightRole::kRouterBias:
      return "router_bias";
    case WeightRole::kExpertGate:
      return "expert_gate";
    case WeightRole::kExpertUp:
      return "expert_up";
    case WeightRole::kExpertDown:
      return "expert_down";
    case WeightRole::kSharedGate:
      return "shared_gate";
    case WeightRole::kSharedUp:
      return "shared_up";
    case WeightRole::kSharedDown:
      return "shared_down";
  }
  return "?";
}

std::vector<WeightSpec> weight_manifest(const ModelConfig& cfg) {
  const int64_t D = cfg.hidden_size, V = cfg.vocab_size, H = cfg.num_attention_heads;
  const int64_t Rq = cfg.q_lora_rank, Rkv = cfg.kv_lora_rank;
  const int64_t Dn = cfg.qk_nope_head_dim, Dr = cfg.qk_rope_head_dim, Dv = cfg.v_head_dim;
  const int64_t E = cfg.n_routed_experts, I = cfg.moe_intermediate_size;
  const int64_t Is = I * cfg.n_shared_experts, Id = cfg.intermediate_size;
  const int64_t Hi = cfg.index_n_heads, Di = cfg.index_head_dim;
  const auto& mat = matrix_dtypes();
  const auto& norm = norm_dtypes();

  std::vector<WeightSpec> out;
  ManifestBuilder b(&out);
  b.add("model.embed_tokens.weight", WeightRole::kEmbed, -1, -1, {V, D}, mat);
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    b.add(p + "input_layernorm.weight", WeightRole::kAttnNorm, l, -1, {D}, norm);
    b.add(p + "post_attention_layernorm.weight", WeightRole::kFfnNorm, l, -1, {D}, norm);
    const std::string a = p + "self_attn.";
    b.add(a + "q_a_proj.weight", WeightRole::kQaProj, l, -1, {Rq, D}, mat);
    b.add(a + "q_a_layernorm.weight", WeightRole::kQaNorm, l, -1, {Rq}, norm);
    b.add(a + "q_b_proj.weight", WeightRole::kQbProj, l, -1, {H * (Dn + Dr), Rq}, mat);
    b.add(a + "kv_a_proj_with_mqa.weight", WeightRole::kKvaProj, l, -1, {Rkv + Dr, D}, mat);
    b.add(a + "kv_a_layernorm.weight", WeightRole::kKvaNorm, l, -1, {Rkv}, norm);
    b.add(a + "kv_b_proj.weight", WeightRole::kKvbProj, l, -1, {H * (Dn + Dv), Rkv}, mat);
    b.add(a + "o_proj.weight", WeightRole::kOProj, l, -1, {D, H * Dv}, mat);
    if (cfg.has_indexer) {
      const std::string x = a + "indexer.";
      b.add(x + "wq_b.weight", WeightRole::kIdxWqb, l, -1, {Hi * Di, Rq}, mat);
      b.add(x + "wk.weight", WeightRole::kIdxWk, l, -1, {Di, D}, mat);
      b.add(x + "k_norm.weight", WeightRole::kIdxKNormWeight, l, -1, {Di}, norm);
      b.add(x + "k_norm.bias", WeightRole::kIdxKNormBias, l, -1, {Di}, norm);
      b.add(x + "weights_proj.weight", WeightRole::kIdxWeightsProj, l, -1, {Hi, D}, mat);
    }
    const std::string m = p + "mlp.";
    if (!cfg.is_moe_layer(l)) {
      b.add(m + "gate_proj.weight", WeightRole::kDenseGate, l, -1, {Id, D}, mat);
      b.add(m + "up_proj.weight", WeightRole::kDenseUp, l, -1, {Id, D}, mat);
      b.add(m + "down_proj.weight", WeightRole::kDenseDown, l, -1, {D, Id}, mat);
      continue;
    }
    b.add(m + "gate.weight", WeightRole::kRouterGate, l, -1, {E, D}, mat);
    b.add(m + "gate.e_score_correction_bias", WeightRole::kRouterBias, l, -1, {E},
          router_bias_dtypes());
    for (int e = 0; e < E; ++e) {
      const std::string x = m + "experts." + std::to_string(e) + ".";
      b.add(x + "gate_proj.weight", WeightRole::kExpertGate, l, e, {I, D}, mat);
      b.add(x + "up_proj.weight", WeightRole::kExpertUp, l, e, {I, D}, mat);
      b.add(x + "down_proj.weight", WeightRole::kExpertDown, l, e, {D, I}, mat);
    }
    if (cfg.n_shared_experts > 0) {
      const std::string s = m + "shared_experts.";
      b.add(s + "gate_proj.weight", WeightRole::kSharedGate, l, -1, {Is, D}, mat);
      b.add(s + "up_proj.weight", WeightRole::kSharedUp, l, -1, {Is, D}, mat);
      b.add(s + "down_proj.weight", WeightRole::kSharedDown, l, -1, {D, Is}, mat);
    }
  }
  b.add("model.norm.weight", WeightRole::kFinalNorm, -1, -1, {D}, norm);
  b.add("lm_head.weight", WeightRole::kLmHead, -1, -1, {V, D}, mat);
  return out;
}

bool is_mtp_tensor(std::string_view name, const ModelConfig& cfg) {
  constexpr std::string_view kPrefix = "model.layers.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  std::string_view rest = name.substr(kPrefix.size());
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  std::string_view digits = rest.substr(0, dot);
  if (digits.size() > 1 && digits[0] == '0') return false;  // "07" is not a layer index
  uint64_t layer = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), layer);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return false;
  return layer >= static_cast<uint64_t>(cfg.num_hidden_layers);
}

Status validate_checkpoint(const ModelConfig& cfg, const io::Checkpoint& ckpt) {
  const std::vector<WeightSpec> manifest = weight_manifest(cfg);
  std::map<std::string_view, const WeightSpec*> by_name;
  for (const WeightSpec& w : manifest) by_name.emplace(w.name, &w);

  std::vector<std::string> missing, unexpected, bad_shape, bad_dtype;
  bool saw_fp8 = false;
  for (const auto& [name, entry] : ckpt.entries()) {
    const io::TensorInfo& t = *entry.info;
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      if (is_mtp_tensor(name, cfg)) continue;
      unexpected.push_back("unexpected: " + name + " " + std::string(dtype_name(t.dtype)) + " " +
                           t.shape.to_string());
      continue;
    }
    const WeightSpec& w = *it->second;
    if (t.shape != w.shape) {
      bad_shape.push_back("wrong shape: " + name + " is " + t.shape.to_string() +
                          ", the config needs " + w.shape.to_string());
    }
    bool dtype_ok = false;
    for (DType d : w.dtypes) dtype_ok = dtype_ok || d == t.dtype;
    if (!dtype_ok) {
      saw_fp8 = saw_fp8 || t.dtype == DType::kF8E4M3;
      bad_dtype.push_back("wrong dtype: " + name + " is " + std::string(dtype_name(t.dtype)) +
                          ", accepted: " + dtype_list(w.dtypes));
    }
  }
  for (const WeightSpec& w : manifest) {
    if (ckpt.find(w.name) == nullptr) {
      missing.push_back("missing: " + w.name + " " + std::string(dtype_name(w.dtypes[0])) + " " +
                        w.shape.to_string());
    }
  }
  const size_t total = missing.size() + unexpected.size() + bad_shape.size() + bad_dtype.size();
  if (total == 0) return Status();

  std::string msg = ckpt.dir().string() + ": checkpoint does not match config.json (model_type " +
                    cfg.model_type + "): " + std::to_string(missing.size()) + " missing, " +
                    std::to_string(unexpected.size()) + " unexpected, " +
                    std::to_string(bad_shape.size()) + " wrong shape, " +
                    std::to_string(bad_dtype.size()) + " wrong dtype";
  if (saw_fp8) {
    msg += "\n  note: FP8 (F8_E4M3) weights are not supported; use a BF16 checkpoint";
  }
  // Show every kind of problem: each list first gets an equal share of the lines, then the
  // lines left over go to the lists that need more, in the order below.
  const std::vector<std::string>* lists[] = {&missing, &bad_shape, &bad_dtype, &unexpected};
  size_t take[4] = {};
  size_t left = kMaxReportLines;
  for (int i = 0; i < 4; ++i) {
    take[i] = std::min(lists[i]->size(), kMaxReportLines / 4);
    left -= take[i];
  }
  for (int i = 0; i < 4; ++i) {
    size_t more = std::min(lists[i]->size() - take[i], left);
    take[i] += more;
    left -= more;
  }
  size_t shown = 0;
  for (int i = 0; i < 4; ++i) {
    for (size_t k = 0; k < take[i]; ++k) msg += "\n  " + (*lists[i])[k];
    shown += take[i];
  }
  if (total > shown) msg += "\n  ... and " + std::to_string(total - shown) + " more";
  return invalid_argument(msg);
}

}  // namespace moe::model
