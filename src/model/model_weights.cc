#include "model/model_weights.h"

#include <cstring>
#include <string>

#include "model/weight_manifest.h"
#include "tensor/quant/fp8_block.h"
#include "tensor/quant/nvfp4.h"

namespace moe::model {
namespace {

class Binder {
 public:
  Binder(const ModelConfig& cfg, const io::Checkpoint& ckpt, ops::Ops& ops, ModelWeights& w)
      : cfg_(cfg), ckpt_(ckpt), ops_(ops), w_(w) {}
  ConstTensorView get(const std::string& name) { return keep(ops_.upload(ckpt_.tensor(name))); }

  // A Linear layer's matrix in the format the quant config gives it (validated beforehand):
  // codes and block scales are uploaded as stored; the F32 scalars are read on the host.
  ops::Weight matrix(const std::string& module, WeightRole role) {
    ops::Weight w = host_matrix(module, role);
    w.data = get(module + ".weight");
    if (w.format == ops::WeightFormat::kNvfp4) w.scale = get(module + ".weight_scale");
    if (w.format == ops::WeightFormat::kFp8Block) w.scale = get(module + ".weight_scale_inv");
    return w;
  }

  // A matrix the model reads as a dense tensor (kv_b_proj feeds the absorbed MLA directly):
  // quantized ones are dequantized to F32 on the host once, then uploaded.
  ConstTensorView dense_matrix(const std::string& module, WeightRole role) {
    ops::Weight hw = host_matrix(module, role);
    if (hw.format == ops::WeightFormat::kDense) return get(module + ".weight");
    Tensor host = Tensor::empty({hw.rows(), hw.cols()}, DType::kF32);
    for (int64_t n = 0; n < hw.rows(); ++n)
      dequantize_row(hw, n, host.data<float>() + n * hw.cols());
    return keep(ops_.upload(host));
  }

 private:
  // The matrix with every tensor viewing the mmapped checkpoint (host memory).
  ops::Weight host_matrix(const std::string& module, WeightRole role) {
    ops::Weight w;
    w.format = module_format(cfg_, role, module);
    w.data = host(module + ".weight");
    switch (w.format) {
      case ops::WeightFormat::kDense:
        break;
      case ops::WeightFormat::kNvfp4:
        w.scale = host(module + ".weight_scale");
        w.global_scale = scalar(module + ".weight_scale_2");
        w.input_scale = scalar(module + ".input_scale");
        break;
      case ops::WeightFormat::kFp8Block:
        w.scale = host(module + ".weight_scale_inv");
        w.block = cfg_.quant.block;
        break;
    }
    return w;
  }
  ConstTensorView host(const std::string& name) {
    host_.push_back(ckpt_.tensor(name));
    return host_.back().cview();
  }
  float scalar(const std::string& name) {
    const io::Checkpoint::Entry* e = ckpt_.find(name);  // validated: F32, one element
    float f = 0.f;
    std::memcpy(&f, e->file->bytes(*e->info).data(), 4);
    return f;
  }
  static void dequantize_row(const ops::Weight& w, int64_t n, float* out) {
    const int64_t K = w.cols();
    const auto* data = static_cast<const uint8_t*>(w.data.raw());
    if (w.format == ops::WeightFormat::kNvfp4) {
      quant::nvfp4_dequantize_row(data + n * (K / 2),
                                  static_cast<const uint8_t*>(w.scale.raw()) + n * w.scale.dim(1),
                                  w.global_scale, K, out);
    } else {
      quant::fp8_block_dequantize_row(
          data + n * K, static_cast<const float*>(w.scale.raw()) + (n / w.block) * w.scale.dim(1),
          K, w.block, out);
    }
  }
  ConstTensorView keep(Tensor t) {
    ConstTensorView v = t.cview();
    w_.holders.push_back(std::move(t));
    return v;
  }

  const ModelConfig& cfg_;
  const io::Checkpoint& ckpt_;
  ops::Ops& ops_;
  ModelWeights& w_;
  std::vector<Tensor> host_;  // host views used while binding
};

MlpWeights bind_mlp(Binder& b, const std::string& prefix, WeightRole gate, WeightRole up,
                    WeightRole down) {
  return {b.matrix(prefix + "gate_proj", gate), b.matrix(prefix + "up_proj", up),
          b.matrix(prefix + "down_proj", down)};
}

}  // namespace

Result<ModelWeights> bind_weights(const ModelConfig& cfg, const io::Checkpoint& ckpt,
                                  ops::Ops& ops) {
  MOE_RETURN_IF_ERROR(validate_checkpoint(cfg, ckpt));
  ModelWeights w;
  w.holders.reserve(64);
  Binder b(cfg, ckpt, ops, w);
  w.embed = b.get("model.embed_tokens.weight");
  w.final_norm = b.get("model.norm.weight");
  w.lm_head = b.matrix("lm_head", WeightRole::kLmHead);
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights lw;
    lw.attn_norm = b.get(p + "input_layernorm.weight");
    lw.ffn_norm = b.get(p + "post_attention_layernorm.weight");
    const std::string a = p + "self_attn.";
    lw.attn.q_a_proj = b.matrix(a + "q_a_proj", WeightRole::kQaProj);
    lw.attn.q_a_norm = b.get(a + "q_a_layernorm.weight");
    lw.attn.q_b_proj = b.matrix(a + "q_b_proj", WeightRole::kQbProj);
    lw.attn.kv_a_proj = b.matrix(a + "kv_a_proj_with_mqa", WeightRole::kKvaProj);
    lw.attn.kv_a_norm = b.get(a + "kv_a_layernorm.weight");
    lw.attn.kv_b_proj = b.dense_matrix(a + "kv_b_proj", WeightRole::kKvbProj);
    lw.attn.o_proj = b.matrix(a + "o_proj", WeightRole::kOProj);
    if (cfg.has_indexer) {
      lw.attn.has_indexer = true;
      const std::string ix = a + "indexer.";
      lw.attn.indexer = {b.matrix(ix + "wq_b", WeightRole::kIdxWqb),
                         b.matrix(ix + "wk", WeightRole::kIdxWk), b.get(ix + "k_norm.weight"),
                         b.get(ix + "k_norm.bias"),
                         b.matrix(ix + "weights_proj", WeightRole::kIdxWeightsProj)};
    }
    lw.is_moe = cfg.is_moe_layer(l);
    if (lw.is_moe) {
      lw.router = b.matrix(p + "mlp.gate", WeightRole::kRouterGate);
      lw.router_bias = b.get(p + "mlp.gate.e_score_correction_bias");
      lw.experts.reserve(cfg.n_routed_experts);
      for (int e = 0; e < cfg.n_routed_experts; ++e) {
        MlpWeights m =
            bind_mlp(b, p + "mlp.experts." + std::to_string(e) + ".", WeightRole::kExpertGate,
                     WeightRole::kExpertUp, WeightRole::kExpertDown);
        lw.experts.push_back(m);
      }
      lw.has_shared = cfg.n_shared_experts > 0;
      if (lw.has_shared)
        lw.shared = bind_mlp(b, p + "mlp.shared_experts.", WeightRole::kSharedGate,
                             WeightRole::kSharedUp, WeightRole::kSharedDown);
      // e.g. cuda: packed for its MoE kernels
      ops.prepare_experts(lw.experts, lw.has_shared ? &lw.shared : nullptr, cfg.hidden_size);
    } else {
      lw.dense = bind_mlp(b, p + "mlp.", WeightRole::kDenseGate, WeightRole::kDenseUp,
                          WeightRole::kDenseDown);
    }
    w.layers.push_back(std::move(lw));
  }
  return w;
}

}  // namespace moe::model
