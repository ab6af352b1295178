// BPE model of tokenizer.json ("model": {"type": "BPE", "vocab", "merges", ...}).
// Merging follows HF tokenizers: repeatedly merge the adjacent pair with the lowest merge rank,
// leftmost first. In byte-level mode pieces are raw bytes and the vocabulary (stored in the GPT-2
// byte alphabet) is decoded to bytes once at load, so no per-call alphabet mapping is needed.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace moe::text {

// Token ids are bounded so a hostile file cannot make us allocate an enormous id table.
inline constexpr int64_t kMaxTokenId = 1 << 24;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Memo of piece -> ids, owned by one caller (see EncodeScratch); not thread-safe. Open addressing
// over flat arenas (no per-entry allocation); cleared when full.
class BpeCache {
 public:
  static constexpr size_t kMaxPieceBytes = 256;
  static constexpr size_t kMaxEntries = 1 << 16;
  // Returns true and sets [*ids, *ids + *n) if `piece` is cached (valid until the next insert).
  bool find(std::string_view piece, uint64_t hash, const int32_t** ids, size_t* n) const;
  void insert(std::string_view piece, uint64_t hash, const int32_t* ids, size_t n);
  size_t size() const { return entries_; }
  static uint64_t hash(std::string_view s);

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_off = 0, key_len = 0, ids_off = 0, ids_len = 0;
    bool used = false;
  };
  void clear();
  void grow();
  std::vector<Slot> slots_;  // power-of-two size, at most half full
  std::string keys_;
  std::vector<int32_t> ids_;
  size_t entries_ = 0;
};

// Working memory for one BPE merge; reused between calls to avoid allocations.
struct BpeWork {
  struct Symbol {
    int32_t id, prev, next, len;
  };
  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

class BpeModel {
 public:
  // Parses the "model" object. Errors name the offending field or merge entry.
  static Result<BpeModel> from_json(const nlohmann::json& model, bool byte_level);

  // Appends the ids of one pre-token piece to `out`. Thread-safe given distinct cache/work.
  void encode_piece(std::string_view piece, BpeCache* cache, BpeWork* work,
                    std::vector<int32_t>* out) const;

  // Size of the id space of the vocabulary (max id + 1).
  int32_t id_space() const { return static_cast<int32_t>(id_to_token_.size()); }
  // The vocabulary string of `id` (as written in tokenizer.json), or nullptr if unused/out of
  // range.
  const std::string* token(int32_t id) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  bool byte_level() const { return byte_level_; }

 private:
  struct MergeEntry {
    uint64_t key = ~0ull;  // (left << 32) | right; ~0 = empty slot
    int32_t rank = 0, new_id = 0;
  };
  const MergeEntry* find_merge(int32_t left, int32_t right) const;
  void insert_merge(int32_t left, int32_t right, int32_t rank, int32_t new_id);
  void merge_word(std::string_view piece, BpeWork* work, std::vector<int32_t>* out) const;

  StringIdMap vocab_;                     // tokenizer.json strings -> id
  StringIdMap piece_vocab_;               // piece-space strings -> id (bytes in byte-level mode)
  std::vector<std::string> id_to_token_;  // id -> tokenizer.json string
  std::vector<bool> id_used_;
  std::array<int32_t, 256> byte_id_{};  // byte-level mode: id of each single byte, or -1
  std::vector<MergeEntry> merges_;      // open addressing, power-of-two size
  uint64_t merge_mask_ = 0;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  bool byte_level_ = false;
};

}  // namespace moe::text
