// ModelWeights: typed views of every tensor the forward reads, bound by name from a validated
// checkpoint. Views point into the mmapped files; `holders` keeps them mapped.
#pragma once

#include <vector>

#include "core/status.h"
#include "io/checkpoint.h"
#include "model/model_config.h"
#include "ops/ops.h"
#include "tensor/tensor.h"

namespace moe::model {

struct IndexerWeights {
  ops::Weight wq_b;               // [Hi * Di, q_lora]
  ops::Weight wk;                 // [Di, D]
  ConstTensorView k_norm_weight;  // [Di]
  ConstTensorView k_norm_bias;    // [Di]
  ops::Weight weights_proj;       // [Hi, D]
};

struct AttentionWeights {
  ops::Weight q_a_proj;       // [q_lora, D]
  ConstTensorView q_a_norm;   // [q_lora]
  ops::Weight q_b_proj;       // [H * (Dn + R), q_lora]
  ops::Weight kv_a_proj;      // [L + R, D]
  ConstTensorView kv_a_norm;  // [L]
  ConstTensorView kv_b_proj;  // [H * (Dn + Dv), L]; dense (a quantized one is dequantized to F32)
  ops::Weight o_proj;         // [D, H * Dv]
  bool has_indexer = false;
  IndexerWeights indexer;
};

// A SwiGLU MLP: gate [I, D], up [I, D], down [D, I] (the dense MLP, an expert, the shared expert).
using MlpWeights = ops::ExpertWeights;

struct LayerWeights {
  ConstTensorView attn_norm;  // [D] input_layernorm
  ConstTensorView ffn_norm;   // [D] post_attention_layernorm
  AttentionWeights attn;
  bool is_moe = false;
  MlpWeights dense;                         // dense layers
  ops::Weight router;                       // [E, D] mlp.gate.weight
  ConstTensorView router_bias;              // [E] e_score_correction_bias
  std::vector<ops::ExpertWeights> experts;  // E entries
  bool has_shared = false;
  MlpWeights shared;  // [I * n_shared, D] ... (moe_experts runs it with the routed ones)
};

struct ModelWeights {
  ConstTensorView embed;       // [V, D]
  ConstTensorView final_norm;  // [D]
  ops::Weight lm_head;         // [V, D]
  std::vector<LayerWeights> layers;
  std::vector<Tensor> holders;  // keep the mapped files alive
};

// Validates the checkpoint against the manifest (all problems in one error), then binds each
// tensor as `ops.upload` places it (the reference backend reads the mmapped file directly).
// Quantized matrices keep their stored codes and scales (ops::Weight format, scale,
// global_scale, input_scale; the F32 scalars are read on the host here); each MoE layer's
// routed and shared experts then go through ops.prepare_experts (the backend may rearrange them).
Result<ModelWeights> bind_weights(const ModelConfig& cfg, const io::Checkpoint& ckpt,
                                  ops::Ops& ops);

}  // namespace moe::model
