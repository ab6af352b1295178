// MLA attention block with the optional DSA lightning indexer (glm5-model.md §2.2-2.5).
#include <cmath>

#include "model/model.h"

namespace moe::model {

void Model::attention(ops::Ops& ops, Workspace& ws, KvCache& cache, int layer, TensorView out,
                      ConstTensorView x, const ops::BatchLayout& b, ops::MlaForm form) {
  const AttentionWeights& aw = w_.layers[layer].attn;
  const int64_t T = x.dim(0), H = cfg_.num_attention_heads, Dn = cfg_.qk_nope_head_dim,
                R = cfg_.qk_rope_head_dim, Dv = cfg_.v_head_dim, L = cfg_.kv_lora_rank,
                Q = cfg_.q_lora_rank;
  const float lora_eps = static_cast<float>(cfg_.attn_lora_norm_eps);
  const ops::RopeParams rope{
      cfg_.rope_interleave ? ops::RopeStyle::kInterleaved : ops::RopeStyle::kNeox, rope_.inv_freq,
      rope_.attention_factor};

  // Query path: c_q = RMSNorm(x W_qa^T); q = c_q W_qb^T, per head [nope | rope].
  TensorView cq = ws.alloc({T, Q}, DType::kF32);  // [T, q_lora]
  ops.linear(cq, x, aw.q_a_proj);
  ops.rms_norm(cq, cq, aw.q_a_norm, lora_eps);
  TensorView q = ws.alloc({T, H * (Dn + R)}, DType::kF32);
  ops.linear(q, cq, aw.q_b_proj);
  TensorView q3 = q.reshape({T, H, Dn + R});             // [T, H, Dn + R]
  ops.rope(q3.slice(2, Dn, Dn + R), b.positions, rope);  // [T, H, R]

  // Latent path: [c_kv | k_pe] = x W_kva^T; c_kv normalised; k_pe rotated; both cached.
  TensorView kv = ws.alloc({T, L + R}, DType::kF32);  // [T, L + R]
  ops.linear(kv, x, aw.kv_a_proj);
  TensorView c_kv = kv.slice(1, 0, L);  // [T, L]
  ops.rms_norm(c_kv, c_kv, aw.kv_a_norm, lora_eps);
  ops.rope(kv.slice(1, L, L + R).unsqueeze(1), b.positions, rope);  // [T, 1, R]
  ops.cache_write(cache.latent(layer), kv, b);
  ops.trace(kv, "latent", layer);

  // DSA indexer: choose which cached keys each query attends to.
  TensorView selected;
  if (aw.has_indexer) {
    const IndexerWeights& iw = aw.indexer;
    const int64_t Hi = cfg_.index_n_heads, Di = cfg_.index_head_dim;
    const ops::RopeParams irope{
        cfg_.indexer_rope_interleave ? ops::RopeStyle::kInterleaved : ops::RopeStyle::kNeox,
        indexer_rope_.inv_freq, indexer_rope_.attention_factor};
    TensorView qi = ws.alloc({T, Hi * Di}, DType::kF32);
    ops.linear(qi, cq, iw.wq_b);
    TensorView qi3 = qi.reshape({T, Hi, Di});          // [T, Hi, Di], rope first
    ops.rope(qi3.slice(2, 0, R), b.positions, irope);  // [T, Hi, R]
    TensorView ki = ws.alloc({T, Di}, DType::kF32);    // [T, Di]
    ops.linear(ki, x, iw.wk);
    ops.layer_norm(ki, ki, iw.k_norm_weight, iw.k_norm_bias, 1e-6f);
    ops.rope(ki.reshape({T, 1, Di}).slice(2, 0, R), b.positions, irope);
    ops.cache_write(cache.index_keys(layer), ki, b);
    TensorView wts = ws.alloc({T, Hi}, DType::kF32);  // [T, Hi]
    ops.linear(wts, x, iw.weights_proj);
    ops.scale_inplace(wts, static_cast<float>(1.0 / std::sqrt(static_cast<double>(Hi)) /
                                              std::sqrt(static_cast<double>(Di))));
    selected = ws.alloc({T, cfg_.index_topk}, DType::kI32);  // [T, index_topk]
    ops.dsa_index_topk(selected, qi3, wts, cache.index_keys(layer), b);
    ops.trace(selected, "dsa_selected", layer);
  }

  TensorView attn = ws.alloc({T, H, Dv}, DType::kF32);  // [T, H, Dv]
  ops::MlaParams mp{H, Dn, R, Dv, L, static_cast<float>(cfg_.softmax_scale()), form};
  ops.mla_attention(attn, q3, cache.latent(layer), aw.kv_b_proj, selected, b, mp);
  ops.trace(attn, "attn", layer);
  ops.linear(out, attn.reshape({T, H * Dv}), aw.o_proj);
}

}  // namespace moe::model
