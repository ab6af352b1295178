#include "model/kv_cache.h"

#include <string>

namespace moe::model {

KvCache::KvCache(const ModelConfig& cfg, int64_t num_pages, int64_t page_size, ops::Ops& ops)
    : num_pages_(num_pages), page_size_(page_size) {
  MOE_CHECK(num_pages > 0 && page_size > 0);
  const int64_t lat = cfg.kv_lora_rank + cfg.qk_rope_head_dim;
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    latent_.push_back(ops.allocate({num_pages, page_size, lat}, DType::kF32, true));
    if (cfg.has_indexer)
      index_keys_.push_back(
          ops.allocate({num_pages, page_size, cfg.index_head_dim}, DType::kF32, true));
  }
  free_.reserve(num_pages);
  for (int64_t p = num_pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
}

int64_t KvCache::bytes_per_token(const ModelConfig& cfg) {
  int64_t per_layer = (cfg.kv_lora_rank + cfg.qk_rope_head_dim) * 4;
  if (cfg.has_indexer) per_layer += cfg.index_head_dim * 4;
  return per_layer * cfg.num_hidden_layers;
}

Status KvCache::reserve(Sequence& seq, int64_t new_length) {
  int64_t need = (new_length + page_size_ - 1) / page_size_;
  int64_t extra = need - static_cast<int64_t>(seq.pages.size());
  if (extra <= 0) return Status();
  if (extra > free_pages())
    return resource_exhausted(
        "KV cache full: a sequence of " + std::to_string(new_length) + " tokens needs " +
        std::to_string(extra) + " more pages of " + std::to_string(page_size_) + " tokens, " +
        std::to_string(free_pages()) +
        " are free; shorten the prompt or --max-new-tokens, or enlarge the cache");
  for (int64_t i = 0; i < extra; ++i) {
    seq.pages.push_back(free_.back());
    free_.pop_back();
  }
  return Status();
}

void KvCache::release(Sequence& seq) {
  for (int32_t p : seq.pages) free_.push_back(p);
  seq.pages.clear();
  seq.length = 0;
}

}  // namespace moe::model
