// The forward loop: embeddings, decoder layers (attention + FFN, pre-norm residuals), final
// norm and lm_head on each sequence's last token.
#include "model/model.h"

#include <algorithm>
#include <string>

namespace moe::model {

Model::Model(ModelConfig cfg, ModelWeights weights) : cfg_(std::move(cfg)), w_(std::move(weights)) {
  rope_ = make_rope_table(cfg_.rope, cfg_.qk_rope_head_dim);
  indexer_rope_ = rope_;
}

Status Model::forward(ops::Ops& ops, Workspace& ws, KvCache& cache, std::span<SequenceInput> seqs,
                      TensorView logits, MlaFormPolicy policy) {
  const int64_t S = static_cast<int64_t>(seqs.size());
  const int64_t D = cfg_.hidden_size, V = cfg_.vocab_size;
  MOE_CHECK(logits.dtype() == DType::kF32 && logits.rank() == 2 && logits.dim(0) == S &&
            logits.dim(1) == V)
      << "logits " << logits.shape().to_string();
  if (S == 0) return invalid_argument("forward: empty batch");
  int64_t T = 0, max_pages = 1;
  bool multi_token = false;
  for (int64_t s = 0; s < S; ++s) {
    const SequenceInput& in = seqs[s];
    if (in.tokens.empty())
      return invalid_argument("sequence " + std::to_string(s) + " has no new tokens");
    for (int32_t id : in.tokens)
      if (id < 0 || id >= V)
        return invalid_argument("token id " + std::to_string(id) +
                                " is outside the vocabulary [0, " + std::to_string(V) + ")");
    int64_t end = in.kv->length + static_cast<int64_t>(in.tokens.size());
    if (end > cfg_.max_position_embeddings)
      return out_of_range("sequence " + std::to_string(s) + " would reach " + std::to_string(end) +
                          " tokens, past max_position_embeddings " +
                          std::to_string(cfg_.max_position_embeddings));
    T += static_cast<int64_t>(in.tokens.size());
    multi_token |= in.tokens.size() > 1;
  }
  // Reserve pages for all sequences first; undo on failure so no state changes.
  std::vector<size_t> pages_before(S);
  for (int64_t s = 0; s < S; ++s) pages_before[s] = seqs[s].kv->pages.size();
  for (int64_t s = 0; s < S; ++s) {
    Status st = cache.reserve(*seqs[s].kv, seqs[s].kv->length + seqs[s].tokens.size());
    if (!st.ok()) {
      for (int64_t r = 0; r < s; ++r) {
        KvCache::Sequence tail;
        tail.pages.assign(seqs[r].kv->pages.begin() + pages_before[r], seqs[r].kv->pages.end());
        seqs[r].kv->pages.resize(pages_before[r]);
        cache.release(tail);
      }
      return st;
    }
    max_pages = std::max<int64_t>(max_pages, seqs[s].kv->pages.size());
  }

  ws.reset();
  // Batch layout: built in host staging buffers (kept across steps), then copied to the backend.
  HostLayout& hl = host_layout_;
  hl.ids.resize(T);
  hl.token_seq.resize(T);
  hl.positions.resize(T);
  hl.seq_lens.resize(S);
  hl.page_table.assign(S * max_pages, -1);
  std::vector<int64_t>& last_token = hl.last_token;
  last_token.resize(S);
  int64_t t = 0;
  for (int64_t s = 0; s < S; ++s) {
    const SequenceInput& in = seqs[s];
    for (size_t i = 0; i < in.tokens.size(); ++i, ++t) {
      hl.ids[t] = in.tokens[i];
      hl.token_seq[t] = static_cast<int32_t>(s);
      hl.positions[t] = static_cast<int32_t>(in.kv->length + i);
    }
    last_token[s] = t - 1;
    hl.seq_lens[s] = static_cast<int32_t>(in.kv->length + in.tokens.size());
    std::copy(in.kv->pages.begin(), in.kv->pages.end(), hl.page_table.begin() + s * max_pages);
  }
  TensorView ids = ws.alloc({T}, DType::kI32);                    // [T]
  TensorView token_seq = ws.alloc({T}, DType::kI32);              // [T]
  TensorView positions = ws.alloc({T}, DType::kI32);              // [T]
  TensorView seq_lens = ws.alloc({S}, DType::kI32);               // [S]
  TensorView page_table = ws.alloc({S, max_pages}, DType::kI32);  // [S, max_pages]
  ops.copy_from_host(ids, hl.ids.data());
  ops.copy_from_host(token_seq, hl.token_seq.data());
  ops.copy_from_host(positions, hl.positions.data());
  ops.copy_from_host(seq_lens, hl.seq_lens.data());
  ops.copy_from_host(page_table, hl.page_table.data());
  ops::BatchLayout b;
  b.num_tokens = T;
  b.num_seqs = S;
  b.token_seq = token_seq;
  b.positions = positions;
  b.seq_lens = seq_lens;
  b.page_table = page_table;
  b.page_size = cache.page_size();

  ops::MlaForm form = policy == MlaFormPolicy::kNaive      ? ops::MlaForm::kNaive
                      : policy == MlaFormPolicy::kAbsorbed ? ops::MlaForm::kAbsorbed
                      : multi_token                        ? ops::MlaForm::kNaive
                                                           : ops::MlaForm::kAbsorbed;

  TensorView x = ws.alloc({T, D}, DType::kF32);    // residual stream
  TensorView h = ws.alloc({T, D}, DType::kF32);    // normalised input of a block
  TensorView out = ws.alloc({T, D}, DType::kF32);  // block output
  ops.embed(x, ids, w_.embed);
  ops.trace(x, "embed", -1);
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
    const LayerWeights& lw = w_.layers[l];
    ops.rms_norm(h, x, lw.attn_norm, eps);
    attention(ops, ws, cache, l, out, h, b, form);
    ops.trace(out, "attn_out", l);
    ops.add_inplace(x, out);
    ops.rms_norm(h, x, lw.ffn_norm, eps);
    ffn(ops, ws, l, out, h);
    ops.trace(out, "ffn_out", l);
    ops.add_inplace(x, out);
    ops.trace(x, "layer_out", l);
  }
  TensorView last = ws.alloc({S, D}, DType::kF32);
  for (int64_t s = 0; s < S; ++s) {
    ops.rms_norm(last.slice(0, s, s + 1), x.slice(0, last_token[s], last_token[s] + 1),
                 w_.final_norm, eps);
  }
  ops.trace(last, "final_norm", -1);
  ops.linear(logits, last, w_.lm_head);
  for (int64_t s = 0; s < S; ++s) seqs[s].kv->length += static_cast<int64_t>(seqs[s].tokens.size());
  return Status();
}

}  // namespace moe::model
