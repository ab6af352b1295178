// KvCache: the paged per-layer caches of the model: the MLA latent [c_kv (L) | k_pe (R)] and,
// for DSA models, the indexer keys [Di]. Fixed-size pages from one pool; each sequence owns a
// list of pages. Host memory (reference backend). Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"
#include "ops/ops.h"
#include "tensor/tensor.h"

namespace moe::model {

class KvCache {
 public:
  struct Sequence {
    std::vector<int32_t> pages;  // page ids in position order
    int64_t length = 0;          // tokens whose keys are in the cache
  };

  // Allocates num_pages pages of page_size tokens for every layer in `ops`' memory.
  KvCache(const ModelConfig& cfg, int64_t num_pages, int64_t page_size, ops::Ops& ops);

  int64_t page_size() const { return page_size_; }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  int64_t num_pages() const { return num_pages_; }
  // Bytes of one token's entries over all layers.
  static int64_t bytes_per_token(const ModelConfig& cfg);

  // Makes sure `seq` has pages for `new_length` tokens. ResourceExhausted (nothing changed)
  // when the pool has too few free pages.
  Status reserve(Sequence& seq, int64_t new_length);
  // Returns all pages of `seq` to the pool and empties it.
  void release(Sequence& seq);

  ops::PagedCacheView latent(int layer) { return {latent_[layer].view()}; }
  ops::PagedCacheView index_keys(int layer) { return {index_keys_[layer].view()}; }

 private:
  int64_t num_pages_;
  int64_t page_size_;
  std::vector<Tensor> latent_;      // per layer [pages, P, L + R] f32
  std::vector<Tensor> index_keys_;  // per layer [pages, P, Di] f32 (DSA models)
  std::vector<int32_t> free_;
};

}  // namespace moe::model
