// The Ops contract: every operation the model forward needs, with exact semantics, shapes and
// dtypes. The model (src/model) is written once against this interface; backends implement it
// (reference: scalar CPU fp32, the oracle; cuda: the product).
//
// Glossary (used in every shape comment of the project):
//   T tokens in the step (ragged: several sequences), S sequences in the step, D hidden,
//   H attention heads, L kv_lora_rank (latent width), R qk_rope_head_dim, Dn qk_nope_head_dim,
//   Dv v_head_dim, Hi indexer heads, Di indexer head dim, E routed experts, K experts per token,
//   I expert intermediate size, V vocabulary, P page size (tokens per KV page).
//
// Conventions: activations are F32 in the reference backend; weights are BF16, F16 or F32 as
// stored in the checkpoint (views into the mmapped file). Outputs are fully overwritten; an op
// never reads its output first. Views may alias only where an op says so.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "ops/weight.h"
#include "tensor/tensor.h"

namespace moe::ops {

// Where each token of a ragged batch sits, and how to find each sequence's KV pages.
// All views are host (reference) or device (cuda) memory of the backend that runs the op.
struct BatchLayout {
  int64_t num_tokens = 0;      // T
  int64_t num_seqs = 0;        // S
  ConstTensorView token_seq;   // [T] i32: sequence (0..S-1) of each token
  ConstTensorView positions;   // [T] i32: absolute position of each token in its sequence
  ConstTensorView seq_lens;    // [S] i32: tokens in each sequence's cache after this step
  ConstTensorView page_table;  // [S, max_pages] i32: page ids of each sequence, in order
  int64_t page_size = 0;       // P
};

// A paged per-layer cache: element (page, slot, :) holds one token's vector.
// Token at position p of sequence s lives at page_table[s, p / P], slot p % P.
struct PagedCacheView {
  TensorView data;  // [num_pages, P, W] f32 (reference)
};

enum class RopeStyle {
  kInterleaved,  // GPT-J: pairs (x[2i], x[2i+1]) rotate by angle pos * inv_freq[i]
  kNeox,         // NeoX: pairs (x[i], x[i + R/2])
};

// Rotary embedding for an R-dim slice: inv_freq[i] for i < R/2 (YaRN already folded in) and the
// factor applied to cos and sin (YaRN attention factor; 1 otherwise).
struct RopeParams {
  RopeStyle style = RopeStyle::kInterleaved;
  std::span<const float> inv_freq;  // [R/2]
  float attention_factor = 1.0f;
};

enum class MlaForm {
  kNaive,     // expand per-head K_nope and V from the latent cache (prefill form)
  kAbsorbed,  // fold W_UK into q and W_UV into the output; attend over the latent (decode form)
};

struct MlaParams {
  int64_t heads = 0;       // H
  int64_t nope_dim = 0;    // Dn
  int64_t rope_dim = 0;    // R
  int64_t v_dim = 0;       // Dv
  int64_t latent_dim = 0;  // L
  float softmax_scale = 1.0f;
  MlaForm form = MlaForm::kNaive;
};

struct MoeRouteParams {
  int64_t top_k = 0;                   // K
  int64_t n_group = 1;                 // expert groups
  int64_t topk_group = 1;              // groups kept per token
  bool norm_topk_prob = true;          // w_i = s_i / sum_j s_j over the K selected
  float routed_scaling_factor = 1.0f;  // applied after normalisation
};

// One routed expert's weights: SwiGLU E(x) = down(silu(gate x) * up x).
struct ExpertWeights {
  Weight gate;  // [I, D]
  Weight up;    // [I, D]
  Weight down;  // [D, I]
};

struct SamplingParams {
  float temperature = 0.0f;  // 0 = greedy (argmax, lowest id on ties)
  float top_p = 1.0f;        // nucleus mass kept, (0, 1]
  int64_t top_k = 0;         // 0 = all
  uint64_t seed = 0;         // with `step`, determines the random draw (counter-based)
};

class Ops {
 public:
  virtual ~Ops() = default;
  virtual std::string_view name() const = 0;

  // ---- Memory: at start-up and between steps, never inside a forward. ----
  // A tensor in this backend's memory (host for reference, device for cuda); zeroed if asked.
  virtual Tensor allocate(Shape shape, DType dtype, bool zero) = 0;
  // A tensor in this backend's memory with the contents of `host` (may share it).
  virtual Tensor upload(const Tensor& host) = 0;
  // Copies dst.nbytes() bytes from host memory into a contiguous tensor of this backend,
  // ordered before the ops that follow (asynchronous on cuda; `src` must stay valid until the
  // next synchronising call).
  virtual void copy_from_host(TensorView dst, const void* src) = 0;
  // Copies a contiguous tensor of this backend to host memory; waits for pending ops.
  virtual void copy_to_host(void* dst, ConstTensorView src) = 0;

  // Once per MoE layer at load, after its expert weights are uploaded and before any forward:
  // lets the backend rearrange them in its memory for its moe_experts kernels (hidden size D),
  // recording the arrangement in the Weight fields (Weight::layout). Weights it changed
  // are then only for this backend's moe_experts. `shared`: the layer's shared expert (passed to
  // moe_experts as well), or null. Default: nothing.
  virtual void prepare_experts(std::span<ExpertWeights> experts, ExpertWeights* shared, int64_t D) {
  }

  // y[t, :] = table[ids[t], :]. ids: [T] i32 (MOE_CHECKed in range), table: [V, D], y: [T, D].
  virtual void embed(TensorView y, ConstTensorView ids, ConstTensorView table) = 0;

  // y = x · W^T. x: [T, K] f32 (rows may be strided), W: N x K in any WeightFormat,
  // y: [T, N] f32.
  virtual void linear(TensorView y, ConstTensorView x, const Weight& w) = 0;

  // Row-wise RMSNorm: y = gamma ⊙ x / sqrt(mean(x²) + eps). x, y: [T, N] (strided rows ok),
  // gamma: [N]. y may alias x.
  virtual void rms_norm(TensorView y, ConstTensorView x, ConstTensorView gamma, float eps) = 0;

  // Row-wise LayerNorm: y = (x - mean) / sqrt(var + eps) ⊙ gamma + beta. y may alias x.
  virtual void layer_norm(TensorView y, ConstTensorView x, ConstTensorView gamma,
                          ConstTensorView beta, float eps) = 0;

  // y += x, elementwise, same shapes [T, N].
  virtual void add_inplace(TensorView y, ConstTensorView x) = 0;

  // y *= s, elementwise.
  virtual void scale_inplace(TensorView y, float s) = 0;

  // Rotates x in place. x: [T, heads, R] (strided; R innermost and contiguous),
  // positions: [T] i32.
  virtual void rope(TensorView x, ConstTensorView positions, const RopeParams& p) = 0;

  // y = silu(gate) ⊙ up. gate, up, y: [T, I] (gate/up may be strided halves of one tensor).
  virtual void silu_mul(TensorView y, ConstTensorView gate, ConstTensorView up) = 0;

  // Writes each token's vector into its sequence's pages. src: [T, W], cache: [pages, P, W].
  virtual void cache_write(PagedCacheView cache, ConstTensorView src, const BatchLayout& b) = 0;

  // DSA lightning indexer: for each token t of sequence s at position p, over keys at positions
  // j <= p of s: score[j] = sum_h w[t, h] · relu(q[t, h, :] · k[j, :]); selects the
  // min(top_k, p + 1) highest scores (ties: lower position first), writes their positions in
  // descending score order to out[t, :], and pads the rest of the row with -1.
  // q: [T, Hi, Di], w: [T, Hi] f32, k_cache: [pages, P, Di], out: [T, top_k] i32.
  virtual void dsa_index_topk(TensorView out, ConstTensorView q, ConstTensorView w,
                              PagedCacheView k_cache, const BatchLayout& b) = 0;

  // Multi-head latent attention over the paged latent cache [c_kv (L) | k_pe (R)].
  // q: [T, H, Dn + R] (rope already applied to the last R dims), kv_b: [H * (Dn + Dv), L]
  // (per head: Dn rows of W_UK then Dv rows of W_UV), out: [T, H, Dv].
  // Token t attends causally to positions j <= positions[t] of its sequence; if `selected` is
  // not empty ([T, top_k] i32, -1 padded), only to the listed positions.
  // scores = (q_nope·k_nope + q_pe·k_pe) * softmax_scale. Both forms compute the same function.
  virtual void mla_attention(TensorView out, ConstTensorView q, PagedCacheView latent_cache,
                             ConstTensorView kv_b, ConstTensorView selected, const BatchLayout& b,
                             const MlaParams& p) = 0;

  // noaux_tc router. logits: [T, E] f32; bias: [E] f32 (selection only).
  // s = sigmoid(logits); choice = s + bias; with n_group > 1 each group scores the sum of its
  // top-2 choice values and only the topk_group best groups stay eligible; the top_k eligible
  // experts by choice are selected (ties: lower id first) in descending order;
  // weights = s[ids] (normalised by their sum if norm_topk_prob) * routed_scaling_factor.
  // ids: [T, K] i32, weights: [T, K] f32.
  virtual void moe_route(TensorView ids, TensorView weights, ConstTensorView logits,
                         ConstTensorView bias, const MoeRouteParams& p) = 0;

  // Routed experts plus the shared expert S (if not null; an always-active SwiGLU expert of any
  // intermediate size, weight 1): y[t] = sum_k weights[t, k] · E_{ids[t, k]}(x[t]) + S(x[t]).
  // x, y: [T, D] f32; ids, weights: [T, K]; experts: E entries.
  virtual void moe_experts(TensorView y, ConstTensorView x, ConstTensorView ids,
                           ConstTensorView weights, std::span<const ExpertWeights> experts,
                           const ExpertWeights* shared) = 0;

  // Draws one token per row. logits: [S, V] f32; out: [S] i32; params and steps: S entries
  // (step = index of the token being generated, mixed into the seed).
  virtual void sample(TensorView out, ConstTensorView logits,
                      std::span<const SamplingParams> params, std::span<const uint64_t> steps) = 0;

  // Debug hook: named intermediate tensors (see docs/env.md, MOE_TRACE_DIR).
  virtual void trace(ConstTensorView t, std::string_view name, int layer) {}
};

}  // namespace moe::ops
