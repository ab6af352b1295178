// FFN block: dense SwiGLU MLP, or noaux_tc-routed experts plus the shared expert.
#include "model/model.h"

namespace moe::model {
namespace {

void swiglu_mlp(ops::Ops& ops, Workspace& ws, const MlpWeights& m, TensorView out,
                ConstTensorView x) {
  const int64_t T = x.dim(0), I = m.gate.rows();
  TensorView g = ws.alloc({T, I}, DType::kF32);  // [T, I]
  TensorView u = ws.alloc({T, I}, DType::kF32);  // [T, I]
  ops.linear(g, x, m.gate);
  ops.linear(u, x, m.up);
  ops.silu_mul(g, g, u);
  ops.linear(out, g, m.down);
}

}  // namespace

void Model::ffn(ops::Ops& ops, Workspace& ws, int layer, TensorView out, ConstTensorView x) {
  const LayerWeights& lw = w_.layers[layer];
  if (!lw.is_moe) {
    swiglu_mlp(ops, ws, lw.dense, out, x);
    return;
  }
  const int64_t T = x.dim(0), E = cfg_.n_routed_experts, K = cfg_.num_experts_per_tok;
  TensorView logits = ws.alloc({T, E}, DType::kF32);  // [T, E]
  ops.linear(logits, x, lw.router);
  TensorView ids = ws.alloc({T, K}, DType::kI32);      // [T, K]
  TensorView weights = ws.alloc({T, K}, DType::kF32);  // [T, K]
  ops::MoeRouteParams rp{K, cfg_.n_group, cfg_.topk_group, cfg_.norm_topk_prob,
                         static_cast<float>(cfg_.routed_scaling_factor)};
  ops.moe_route(ids, weights, logits, lw.router_bias, rp);
  ops.trace(ids, "expert_ids", layer);
  ops.trace(weights, "expert_weights", layer);
  ops.moe_experts(out, x, ids, weights, lw.experts, lw.has_shared ? &lw.shared : nullptr);
}

}  // namespace moe::model
