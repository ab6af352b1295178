// Model: the DeepSeek-V3-family forward (MLA + optional DSA indexer + noaux_tc MoE), written
// once against ops::Ops. A step takes a ragged batch: new tokens of several sequences, each
// appended to that sequence's paged KV cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/rope_table.h"
#include "ops/ops.h"
#include "tensor/arena.h"

namespace moe::model {

// Which MLA form the attention uses: kAuto = naive when a sequence brings more than one new
// token (prefill), absorbed otherwise (decode).
enum class MlaFormPolicy { kAuto, kNaive, kAbsorbed };

struct SequenceInput {
  std::span<const int32_t> tokens;  // new tokens, appended at kv->length
  KvCache::Sequence* kv = nullptr;
};

class Model {
 public:
  Model(ModelConfig cfg, ModelWeights weights);

  const ModelConfig& config() const { return cfg_; }
  const ModelWeights& weights() const { return w_; }

  // Runs one step. Writes the logits of each sequence's last new token to logits [S, V] (F32)
  // and advances each kv->length. Bad input (token id out of range, empty sequence, cache full,
  // position past max_position_embeddings) returns an error and changes no sequence's length.
  Status forward(ops::Ops& ops, Workspace& ws, KvCache& cache, std::span<SequenceInput> seqs,
                 TensorView logits, MlaFormPolicy policy = MlaFormPolicy::kAuto);

 private:
  void attention(ops::Ops& ops, Workspace& ws, KvCache& cache, int layer, TensorView out,
                 ConstTensorView x, const ops::BatchLayout& b, ops::MlaForm form);
  void ffn(ops::Ops& ops, Workspace& ws, int layer, TensorView out, ConstTensorView x);

  // Host staging of the batch layout, reused across steps.
  struct HostLayout {
    std::vector<int32_t> ids, token_seq, positions, seq_lens, page_table;
    std::vector<int64_t> last_token;
  };

  ModelConfig cfg_;
  ModelWeights w_;
  HostLayout host_layout_;
  RopeTable rope_;          // MLA rope (qk_rope_head_dim)
  RopeTable indexer_rope_;  // indexer rope (same dims, same settings)
};

}  // namespace moe::model
