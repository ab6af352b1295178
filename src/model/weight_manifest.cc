// The weight manifest (names, shapes, accepted dtypes per glm5-model.md §2.0, generalised by
// ModelConfig) and the checkpoint validation that reports every mismatch at once.
#include "model/weight_manifest.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <span>

#include "tensor/quant/fp8_block.h"
#include "tensor/quant/nvfp4.h"

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
  ManifestBuilder(const ModelConfig& cfg, std::vector<WeightSpec>* out) : cfg_(cfg), out_(out) {}
  void add(std::string name, WeightRole role, int layer, int expert, Shape shape,
           const std::vector<DType>& dtypes) {
    WeightSpec w;
    w.name = std::move(name);
    w.role = role;
    w.layer = layer;
    w.expert = expert;
    w.shape = shape;
    w.dtypes = dtypes;
    out_->push_back(std::move(w));
  }
  // A Linear layer's matrix `<module>.weight` of logical shape [N, K], plus its scales when
  // the quant config quantizes the module.
  void matrix(const std::string& module, WeightRole role, int layer, int expert, int64_t N,
              int64_t K) {
    const ops::WeightFormat f = module_format(cfg_, role, module);
    auto push = [&](TensorPart part, Shape shape, DType dt) {
      const bool dense = part == TensorPart::kWeight && f == ops::WeightFormat::kDense;
      add(module + "." + std::string(tensor_part_suffix(part)), role, layer, expert, shape,
          dense ? matrix_dtypes() : std::vector<DType>{dt});
      WeightSpec& w = out_->back();
      w.module = module;
      w.format = f;
      w.part = part;
      w.logical_shape = {N, K};
    };
    switch (f) {
      case ops::WeightFormat::kDense:
        push(TensorPart::kWeight, {N, K}, DType::kBF16);
        break;
      case ops::WeightFormat::kNvfp4:
        push(TensorPart::kWeight, {N, K / 2}, DType::kU8);
        push(TensorPart::kWeightScale, {N, K / quant::kNvfp4Group}, DType::kF8E4M3);
        push(TensorPart::kWeightScale2, {}, DType::kF32);
        push(TensorPart::kInputScale, {}, DType::kF32);
        break;
      case ops::WeightFormat::kFp8Block: {
        const int64_t b = cfg_.quant.block;
        push(TensorPart::kWeight, {N, K}, DType::kF8E4M3);
        push(TensorPart::kWeightScaleInv, {quant::ceil_div(N, b), quant::ceil_div(K, b)},
             DType::kF32);
        break;
      }
    }
  }

 private:
  const ModelConfig& cfg_;
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

std::string_view tensor_part_suffix(TensorPart p) {
  switch (p) {
    case TensorPart::kWeight:
      return "weight";
    case TensorPart::kWeightScale:
      return "weight_scale";
    case TensorPart::kWeightScale2:
      return "weight_scale_2";
    case TensorPart::kInputScale:
      return "input_scale";
    case TensorPart::kWeightScaleInv:
      return "weight_scale_inv";
  }
  return "?";
}

int64_t WeightSpec::params() const {
  if (part != TensorPart::kWeight) return 0;
  return logical_shape.rank() == 2 ? logical_shape.numel() : shape.numel();
}

bool is_linear_role(WeightRole r) {
  switch (r) {
    case WeightRole::kEmbed:
    case WeightRole::kFinalNorm:
    case WeightRole::kAttnNorm:
    case WeightRole::kFfnNorm:
    case WeightRole::kQaNorm:
    case WeightRole::kKvaNorm:
    case WeightRole::kIdxKNormWeight:
    case WeightRole::kIdxKNormBias:
    case WeightRole::kRouterBias:
      return false;
    default:
      return true;
  }
}

ops::WeightFormat module_format(const ModelConfig& cfg, WeightRole r, std::string_view module) {
  if (cfg.quant.format == io::QuantFormat::kNone || !is_linear_role(r)) {
    return ops::WeightFormat::kDense;
  }
  if (r == WeightRole::kRouterGate || cfg.quant.excluded_by(module) != nullptr) {
    return ops::WeightFormat::kDense;
  }
  if (cfg.quant.format == io::QuantFormat::kNvfp4) return ops::WeightFormat::kNvfp4;
  if (r == WeightRole::kIdxWeightsProj || r == WeightRole::kLmHead) {
    return ops::WeightFormat::kDense;
  }
  return ops::WeightFormat::kFp8Block;
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
  ManifestBuilder b(cfg, &out);
  b.add("model.embed_tokens.weight", WeightRole::kEmbed, -1, -1, {V, D}, mat);
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    b.add(p + "input_layernorm.weight", WeightRole::kAttnNorm, l, -1, {D}, norm);
    b.add(p + "post_attention_layernorm.weight", WeightRole::kFfnNorm, l, -1, {D}, norm);
    const std::string a = p + "self_attn.";
    b.matrix(a + "q_a_proj", WeightRole::kQaProj, l, -1, Rq, D);
    b.add(a + "q_a_layernorm.weight", WeightRole::kQaNorm, l, -1, {Rq}, norm);
    b.matrix(a + "q_b_proj", WeightRole::kQbProj, l, -1, H * (Dn + Dr), Rq);
    b.matrix(a + "kv_a_proj_with_mqa", WeightRole::kKvaProj, l, -1, Rkv + Dr, D);
    b.add(a + "kv_a_layernorm.weight", WeightRole::kKvaNorm, l, -1, {Rkv}, norm);
    b.matrix(a + "kv_b_proj", WeightRole::kKvbProj, l, -1, H * (Dn + Dv), Rkv);
    b.matrix(a + "o_proj", WeightRole::kOProj, l, -1, D, H * Dv);
    if (cfg.has_indexer) {
      const std::string x = a + "indexer.";
      b.matrix(x + "wq_b", WeightRole::kIdxWqb, l, -1, Hi * Di, Rq);
      b.matrix(x + "wk", WeightRole::kIdxWk, l, -1, Di, D);
      b.add(x + "k_norm.weight", WeightRole::kIdxKNormWeight, l, -1, {Di}, norm);
      b.add(x + "k_norm.bias", WeightRole::kIdxKNormBias, l, -1, {Di}, norm);
      b.matrix(x + "weights_proj", WeightRole::kIdxWeightsProj, l, -1, Hi, D);
    }
    const std::string m = p + "mlp.";
    if (!cfg.is_moe_layer(l)) {
      b.matrix(m + "gate_proj", WeightRole::kDenseGate, l, -1, Id, D);
      b.matrix(m + "up_proj", WeightRole::kDenseUp, l, -1, Id, D);
      b.matrix(m + "down_proj", WeightRole::kDenseDown, l, -1, D, Id);
      continue;
    }
    b.matrix(m + "gate", WeightRole::kRouterGate, l, -1, E, D);
    b.add(m + "gate.e_score_correction_bias", WeightRole::kRouterBias, l, -1, {E},
          router_bias_dtypes());
    for (int e = 0; e < E; ++e) {
      const std::string x = m + "experts." + std::to_string(e) + ".";
      b.matrix(x + "gate_proj", WeightRole::kExpertGate, l, e, I, D);
      b.matrix(x + "up_proj", WeightRole::kExpertUp, l, e, I, D);
      b.matrix(x + "down_proj", WeightRole::kExpertDown, l, e, D, I);
    }
    if (cfg.n_shared_experts > 0) {
      const std::string s = m + "shared_experts.";
      b.matrix(s + "gate_proj", WeightRole::kSharedGate, l, -1, Is, D);
      b.matrix(s + "up_proj", WeightRole::kSharedUp, l, -1, Is, D);
      b.matrix(s + "down_proj", WeightRole::kSharedDown, l, -1, D, Is);
    }
  }
  b.add("model.norm.weight", WeightRole::kFinalNorm, -1, -1, {D}, norm);
  b.matrix("lm_head", WeightRole::kLmHead, -1, -1, V, D);
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

namespace {

std::string describe(const io::TensorInfo& t) {
  return std::string(dtype_name(t.dtype)) + " " + t.shape.to_string();
}

// Where the exclusion of `module` comes from, for messages.
std::string exclusion_reason(const ModelConfig& cfg, const WeightSpec& w) {
  if (cfg.quant.format == io::QuantFormat::kNone) return "config.json has no quantization_config";
  if (const std::string* pat = cfg.quant.excluded_by(w.module))
    return cfg.quant.source + " excludes it (pattern '" + *pat + "')";
  return std::string(role_name(w.role)) + " stays unquantized in " +
         std::string(io::quant_format_name(cfg.quant.format)) + " checkpoints";
}

// One quantized module's tensor against its spec; empty string when it is fine.
std::string check_quant_tensor(const WeightSpec& w, const io::Checkpoint::Entry* e) {
  const std::string fmt(w.format == ops::WeightFormat::kNvfp4 ? "NVFP4" : "FP8 block");
  const std::string need = std::string(dtype_name(w.dtypes[0])) + " " + w.shape.to_string();
  if (e == nullptr) {
    return "missing " + std::string(w.part == TensorPart::kWeight ? "tensor " : "scale tensor ") +
           w.name + " (" + fmt + " module " + w.module + " of shape " +
           w.logical_shape.to_string() + " needs " + need + ")";
  }
  const io::TensorInfo& t = *e->info;
  const bool scalar = w.shape.rank() == 0;
  const bool shape_ok = scalar ? t.shape.numel() == 1 && t.shape.rank() <= 1 : t.shape == w.shape;
  if (t.dtype == w.dtypes[0] && shape_ok) return "";
  if (w.part == TensorPart::kWeight && w.format == ops::WeightFormat::kNvfp4 &&
      t.dtype == DType::kU8 && t.shape.rank() == 2) {
    return "packed size does not match the shape: " + w.name + " is U8 " + t.shape.to_string() +
           ", which holds " + std::to_string(t.shape[1] * 2) + " E2M1 values per row, but " +
           w.module + " is " + w.logical_shape.to_string() + " (needs U8 " + w.shape.to_string() +
           ", two values per byte)";
  }
  if (w.part == TensorPart::kWeight && t.dtype != w.dtypes[0]) {
    return w.name + " is " + describe(t) + " but the quantization config makes " + w.module + " " +
           fmt + " (" + need + "); exclude the module in the quantization config or " +
           "quantize it";
  }
  return "wrong " + std::string(w.part == TensorPart::kWeight ? "" : "scale ") +
         "tensor: " + w.name + " is " + describe(t) + ", " + fmt + " needs " + need + " for " +
         w.module + " " + w.logical_shape.to_string();
}

// NaN/Inf in a scale tensor (F8_E4M3 codes 0x7F/0xFF, or non-finite F32); empty when fine.
std::string check_scale_values(const WeightSpec& w, const io::Checkpoint::Entry& e) {
  std::span<const std::byte> bytes = e.file->bytes(*e.info);
  if (e.info->dtype == DType::kF8E4M3) {
    // Fast pass 8 bytes at a time (SWAR): a NaN code has its low 7 bits set, so OR-ing in the
    // sign bit makes it 0xFF, i.e. a zero byte of the complement.
    size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
      uint64_t v;
      std::memcpy(&v, bytes.data() + i, 8);
      const uint64_t inv = ~(v | 0x8080808080808080ull);
      if (((inv - 0x0101010101010101ull) & ~inv & 0x8080808080808080ull) != 0) break;
    }
    for (; i < bytes.size(); ++i) {
      const uint8_t b = static_cast<uint8_t>(bytes[i]);
      if ((b & 0x7F) == 0x7F) {
        return "scale tensor " + w.name + " holds NaN (FP8 code 0x" +
               (b == 0xFF ? std::string("FF") : std::string("7F")) + ") at flat index " +
               std::to_string(i);
      }
    }
  } else if (e.info->dtype == DType::kF32) {
    for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
      float f;
      std::memcpy(&f, bytes.data() + i, 4);
      if (!std::isfinite(f)) {
        return "scale tensor " + w.name + " holds " + (std::isnan(f) ? "NaN" : "Inf") +
               " at flat index " + std::to_string(i / 4);
      }
    }
  }
  return "";
}

// Quantization problems, one line naming the first offending tensor (the checkpoint is
// unusable until it is fixed, and a long list would mostly repeat the same cause).
Status validate_quantized(const ModelConfig& cfg, const io::Checkpoint& ckpt,
                          const std::vector<WeightSpec>& manifest) {
  for (const WeightSpec& w : manifest) {
    if (w.module.empty()) continue;
    const io::Checkpoint::Entry* e = ckpt.find(w.name);
    if (w.format == ops::WeightFormat::kDense) {
      // An unquantized module must not carry scales or quantized codes.
      for (TensorPart p : {TensorPart::kWeightScale, TensorPart::kWeightScale2,
                           TensorPart::kInputScale, TensorPart::kWeightScaleInv}) {
        const std::string n = w.module + "." + std::string(tensor_part_suffix(p));
        if (ckpt.find(n) != nullptr) {
          return invalid_argument(ckpt.dir().string() + ": " + w.module +
                                  " is quantized (the checkpoint holds " + n + ") but " +
                                  exclusion_reason(cfg, w));
        }
      }
      if (e != nullptr && (e->info->dtype == DType::kU8 || e->info->dtype == DType::kF8E4M3)) {
        return invalid_argument(ckpt.dir().string() + ": " + w.name + " is " + describe(*e->info) +
                                " (quantized) but " + exclusion_reason(cfg, w));
      }
      continue;
    }
    if (w.part == TensorPart::kWeight && w.format == ops::WeightFormat::kNvfp4 &&
        w.logical_shape[1] % quant::kNvfp4Group != 0) {
      return invalid_argument(ckpt.dir().string() + ": " + w.module +
                              " has K = " + std::to_string(w.logical_shape[1]) +
                              ", not a multiple of the NVFP4 group size 16; exclude it");
    }
    std::string problem = check_quant_tensor(w, e);
    if (problem.empty() && w.part != TensorPart::kWeight) problem = check_scale_values(w, *e);
    if (!problem.empty()) return invalid_argument(ckpt.dir().string() + ": " + problem);
  }
  return Status();
}

}  // namespace

Status validate_checkpoint(const ModelConfig& cfg, const io::Checkpoint& ckpt) {
  const std::vector<WeightSpec> manifest = weight_manifest(cfg);
  if (cfg.quant.format != io::QuantFormat::kNone) {
    MOE_RETURN_IF_ERROR(validate_quantized(cfg, ckpt, manifest));
  }
  std::map<std::string_view, const WeightSpec*> by_name;
  for (const WeightSpec& w : manifest) by_name.emplace(w.name, &w);

  std::vector<std::string> missing, unexpected, bad_shape, bad_dtype;
  bool saw_fp8 = false;
  for (const auto& [name, entry] : ckpt.entries()) {
    const io::TensorInfo& t = *entry.info;
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      if (is_mtp_tensor(name, cfg)) continue;
      // KV-cache scales of a ModelOpt export with kv_cache_quant_algo: our KV cache format is
      // our own (per-tile dynamic scales), so stored k/v scales are not used.
      if (!cfg.quant.kv_cache_quant_algo.empty() &&
          (name.ends_with(".k_scale") || name.ends_with(".v_scale"))) {
        continue;
      }
      unexpected.push_back("unexpected: " + name + " " + std::string(dtype_name(t.dtype)) + " " +
                           t.shape.to_string());
      continue;
    }
    const WeightSpec& w = *it->second;
    const bool scalar_ok = w.shape.rank() == 0 && t.shape.rank() <= 1 && t.shape.numel() == 1;
    if (t.shape != w.shape && !scalar_ok) {
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
    msg +=
        "\n  note: FP8 (F8_E4M3) weights need a quantization_config in config.json "
        "({\"quant_method\": "
        "\"fp8\", \"weight_block_size\": [128, 128]}) and weight_scale_inv tensors";
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
