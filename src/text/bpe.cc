// BPE model: vocabulary/merges loading and the rank-ordered merge loop (see bpe.h).
#include "text/bpe.h"

#include <algorithm>
#include <cstring>

#include "text/byte_level.h"
#include "text/unicode.h"

namespace moe::text {
namespace {

uint64_t merge_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}
uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

}  // namespace

uint64_t BpeCache::hash(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = mix(h ^ w) * 0x9E3779B97F4A7C15ull;
  }
  uint64_t w = 0;
  std::memcpy(&w, s.data() + i, s.size() - i);
  return mix(h ^ w ^ (static_cast<uint64_t>(s.size()) << 56));
}

bool BpeCache::find(std::string_view piece, uint64_t hash, const int32_t** ids, size_t* n) const {
  if (slots_.empty()) return false;
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (!s.used) return false;
    if (s.hash == hash && s.key_len == piece.size() &&
        std::memcmp(keys_.data() + s.key_off, piece.data(), piece.size()) == 0) {
      *ids = ids_.data() + s.ids_off;
      *n = s.ids_len;
      return true;
    }
  }
}

void BpeCache::clear() {
  slots_.assign(1024, Slot{});
  keys_.clear();
  ids_.clear();
  entries_ = 0;
}

void BpeCache::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (!s.used) continue;
    size_t i = s.hash & mask;
    while (slots_[i].used) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void BpeCache::insert(std::string_view piece, uint64_t hash, const int32_t* ids, size_t n) {
  if (piece.size() > kMaxPieceBytes) return;
  if (slots_.empty() || entries_ >= kMaxEntries) clear();
  if ((entries_ + 1) * 2 > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].used) i = (i + 1) & mask;
  slots_[i] = {hash,
               static_cast<uint32_t>(keys_.size()),
               static_cast<uint32_t>(piece.size()),
               static_cast<uint32_t>(ids_.size()),
               static_cast<uint32_t>(n),
               true};
  keys_.append(piece);
  ids_.insert(ids_.end(), ids, ids + n);
  ++entries_;
}

const BpeModel::MergeEntry* BpeModel::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = merge_key(left, right);
  for (uint64_t i = mix(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    const MergeEntry& e = merges_[i];
    if (e.key == key) return &e;
    if (e.key == ~0ull) return nullptr;
  }
}

void BpeModel::insert_merge(int32_t left, int32_t right, int32_t rank, int32_t new_id) {
  const uint64_t key = merge_key(left, right);
  for (uint64_t i = mix(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    MergeEntry& e = merges_[i];
    if (e.key == key || e.key == ~0ull) {  // a repeated merge keeps the later rank, as HF does
      e = {key, rank, new_id};
      return;
    }
  }
}

Result<BpeModel> BpeModel::from_json(const nlohmann::json& model, bool byte_level) {
  BpeModel m;
  m.byte_level_ = byte_level;
  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) {
    return invalid_argument("model.vocab: expected an object {token: id}");
  }
  int32_t max_id = -1;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() >= kMaxTokenId) {
      return invalid_argument("model.vocab[\"" + it.key() + "\"]: id must be an integer in [0, " +
                              std::to_string(kMaxTokenId) + ")");
    }
    const auto id = it.value().get<int32_t>();
    m.vocab_[it.key()] = id;
    max_id = std::max(max_id, id);
  }
  m.id_to_token_.resize(max_id + 1);
  m.id_used_.assign(max_id + 1, false);
  for (const auto& [tok, id] : m.vocab_) {
    m.id_to_token_[id] = tok;
    m.id_used_[id] = true;
  }
  m.byte_id_.fill(-1);
  if (byte_level) {
    for (const auto& [tok, id] : m.vocab_) {
      if (auto bytes = byte_level_decode(tok)) {
        if (bytes->size() == 1) m.byte_id_[static_cast<unsigned char>((*bytes)[0])] = id;
        m.piece_vocab_[*bytes] = id;
      }
    }
  } else {
    m.piece_vocab_ = m.vocab_;
  }
  // Options.
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = m.vocab_.find(model["unk_token"].get<std::string>());
    if (it == m.vocab_.end()) {
      return invalid_argument("model.unk_token \"" + model["unk_token"].get<std::string>() +
                              "\" is not in the vocabulary");
    }
    m.unk_id_ = it->second;
  }
  m.fuse_unk_ = model.value("fuse_unk", false);
  m.ignore_merges_ = model.contains("ignore_merges") && model["ignore_merges"].is_boolean() &&
                     model["ignore_merges"].get<bool>();
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty()) {
      return unimplemented(std::string("model.") + key + " is not supported");
    }
  }
  if (model.contains("byte_fallback") && model["byte_fallback"].is_boolean() &&
      model["byte_fallback"].get<bool>()) {
    return unimplemented("model.byte_fallback is not supported");
  }
  if (model.contains("dropout") && model["dropout"].is_number() &&
      model["dropout"].get<double>() > 0) {
    return unimplemented("model.dropout (BPE dropout) is not supported at inference");
  }
  // Merges: "a b" strings or ["a", "b"] pairs.
  auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) {
    return invalid_argument("model.merges: expected an array");
  }
  size_t cap = 16;
  while (cap < merges->size() * 2 + 16) cap <<= 1;
  m.merges_.assign(cap, MergeEntry{});
  m.merge_mask_ = cap - 1;
  for (size_t i = 0; i < merges->size(); ++i) {
    const auto& e = (*merges)[i];
    std::string a, b;
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        return invalid_argument("model.merges[" + std::to_string(i) + "] \"" + s +
                                "\": expected two tokens separated by one space");
      }
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else {
      return invalid_argument("model.merges[" + std::to_string(i) +
                              "]: expected \"a b\" or [\"a\", \"b\"]");
    }
    auto ia = m.vocab_.find(a), ib = m.vocab_.find(b), iab = m.vocab_.find(a + b);
    for (const auto& [it, name] : {std::pair{ia, &a}, std::pair{ib, &b}}) {
      if (it == m.vocab_.end()) {
        return invalid_argument("model.merges[" + std::to_string(i) + "]: token \"" + *name +
                                "\" is not in the vocabulary");
      }
    }
    if (iab == m.vocab_.end()) {
      return invalid_argument("model.merges[" + std::to_string(i) + "]: merged token \"" + a + b +
                              "\" is not in the vocabulary");
    }
    m.insert_merge(ia->second, ib->second, static_cast<int32_t>(i), iab->second);
  }
  return m;
}

const std::string* BpeModel::token(int32_t id) const {
  if (id < 0 || id >= id_space() || !id_used_[id]) return nullptr;
  return &id_to_token_[id];
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::merge_word(std::string_view piece, BpeWork* work, std::vector<int32_t>* out) const {
  auto& syms = work->symbols;
  syms.clear();
  // Initial symbols: bytes (byte-level) or characters.
  for (size_t i = 0; i < piece.size();) {
    int32_t len = 1, id = -1;
    if (byte_level_) {
      id = byte_id_[static_cast<unsigned char>(piece[i])];
    } else {
      char32_t cp;
      len = std::max(decode_utf8(piece, i, &cp), 1);
      auto it = piece_vocab_.find(piece.substr(i, len));
      if (it != piece_vocab_.end()) id = it->second;
    }
    if (id < 0) {
      if (unk_id_) {
        if (fuse_unk_ && !syms.empty() && syms.back().id == *unk_id_) {
          syms.back().len += len;
        } else {
          syms.push_back({*unk_id_, static_cast<int32_t>(syms.size()) - 1, -1, len});
        }
      }
      i += len;
      continue;
    }
    syms.push_back({id, static_cast<int32_t>(syms.size()) - 1, -1, len});
    i += len;
  }
  const auto n = static_cast<int32_t>(syms.size());
  for (int32_t i = 0; i + 1 < n; ++i) syms[i].next = i + 1;
  auto& heap = work->heap;
  heap.clear();
  auto greater = [](const BpeWork::Candidate& a, const BpeWork::Candidate& b) { return a > b; };
  auto push = [&](int32_t pos) {
    const int32_t nx = syms[pos].next;
    if (nx < 0) return;
    if (const MergeEntry* e = find_merge(syms[pos].id, syms[nx].id)) {
      heap.push_back({e->rank, pos, e->new_id});
      std::push_heap(heap.begin(), heap.end(), greater);
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    const BpeWork::Candidate top = heap.back();
    heap.pop_back();
    BpeWork::Symbol& s = syms[top.pos];
    if (s.len == 0 || s.next < 0) continue;
    const MergeEntry* e = find_merge(s.id, syms[s.next].id);
    if (e == nullptr || e->new_id != top.new_id) continue;  // stale candidate
    BpeWork::Symbol& right = syms[s.next];
    s.id = top.new_id;
    s.len += right.len;
    right.len = 0;
    s.next = right.next;
    if (s.next >= 0) syms[s.next].prev = top.pos;
    if (s.prev >= 0) push(s.prev);
    push(top.pos);
  }
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = syms[i].next) out->push_back(syms[i].id);
}

void BpeModel::encode_piece(std::string_view piece, BpeCache* cache, BpeWork* work,
                            std::vector<int32_t>* out) const {
  if (piece.empty()) return;
  if (byte_level_ && piece.size() == 1 && byte_id_[static_cast<unsigned char>(piece[0])] >= 0) {
    out->push_back(byte_id_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  if (ignore_merges_) {
    auto it = piece_vocab_.find(piece);
    if (it != piece_vocab_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  uint64_t h = 0;
  if (cache != nullptr && piece.size() <= BpeCache::kMaxPieceBytes) {
    h = BpeCache::hash(piece);
    const int32_t* ids;
    size_t n;
    if (cache->find(piece, h, &ids, &n)) {
      out->insert(out->end(), ids, ids + n);
      return;
    }
  }
  const size_t before = out->size();
  merge_word(piece, work, out);
  if (cache != nullptr && piece.size() <= BpeCache::kMaxPieceBytes) {
    cache->insert(piece, h, out->data() + before, out->size() - before);
  }
}

}  // namespace moe::text
