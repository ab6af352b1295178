#include "model/model_weights.h"

#include <string>

#include "model/weight_manifest.h"

namespace moe::model {
namespace {

class Binder {
 public:
  Binder(const io::Checkpoint& ckpt, ops::Ops& ops, ModelWeights& w)
      : ckpt_(ckpt), ops_(ops), w_(w) {}
  ConstTensorView get(const std::string& name) {
    Tensor t = ops_.upload(ckpt_.tensor(name));  // validated beforehand: exists
    ConstTensorView v = t.cview();
    w_.holders.push_back(std::move(t));
    return v;
  }

 private:
  const io::Checkpoint& ckpt_;
  ops::Ops& ops_;
  ModelWeights& w_;
};

MlpWeights bind_mlp(Binder& b, const std::string& prefix) {
  return {b.get(prefix + "gate_proj.weight"), b.get(prefix + "up_proj.weight"),
          b.get(prefix + "down_proj.weight")};
}

}  // namespace

Result<ModelWeights> bind_weights(const ModelConfig& cfg, const io::Checkpoint& ckpt,
                                  ops::Ops& ops) {
  MOE_RETURN_IF_ERROR(validate_checkpoint(cfg, ckpt));
  ModelWeights w;
  w.holders.reserve(64);
  Binder b(ckpt, ops, w);
  w.embed = b.get("model.embed_tokens.weight");
  w.final_norm = b.get("model.norm.weight");
  w.lm_head = b.get("lm_head.weight");
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights lw;
    lw.attn_norm = b.get(p + "input_layernorm.weight");
    lw.ffn_norm = b.get(p + "post_attention_layernorm.weight");
    const std::string a = p + "self_attn.";
    lw.attn.q_a_proj = b.get(a + "q_a_proj.weight");
    lw.attn.q_a_norm = b.get(a + "q_a_layernorm.weight");
    lw.attn.q_b_proj = b.get(a + "q_b_proj.weight");
    lw.attn.kv_a_proj = b.get(a + "kv_a_proj_with_mqa.weight");
    lw.attn.kv_a_norm = b.get(a + "kv_a_layernorm.weight");
    lw.attn.kv_b_proj = b.get(a + "kv_b_proj.weight");
    lw.attn.o_proj = b.get(a + "o_proj.weight");
    if (cfg.has_indexer) {
      lw.attn.has_indexer = true;
      const std::string ix = a + "indexer.";
      lw.attn.indexer = {b.get(ix + "wq_b.weight"), b.get(ix + "wk.weight"),
                         b.get(ix + "k_norm.weight"), b.get(ix + "k_norm.bias"),
                         b.get(ix + "weights_proj.weight")};
    }
    lw.is_moe = cfg.is_moe_layer(l);
    if (lw.is_moe) {
      lw.router = b.get(p + "mlp.gate.weight");
      lw.router_bias = b.get(p + "mlp.gate.e_score_correction_bias");
      lw.experts.reserve(cfg.n_routed_experts);
      for (int e = 0; e < cfg.n_routed_experts; ++e) {
        MlpWeights m = bind_mlp(b, p + "mlp.experts." + std::to_string(e) + ".");
        lw.experts.push_back({m.gate, m.up, m.down});
      }
      lw.has_shared = cfg.n_shared_experts > 0;
      if (lw.has_shared) lw.shared = bind_mlp(b, p + "mlp.shared_experts.");
    } else {
      lw.dense = bind_mlp(b, p + "mlp.");
    }
    w.layers.push_back(std::move(lw));
  }
  return w;
}

}  // namespace moe::model
