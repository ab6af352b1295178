// Incremental detokenizer (see detokenizer.h).
#include "text/detokenizer.h"

#include "text/unicode.h"

namespace moe::text {

Status Detokenizer::push(int32_t id, std::string* out) {
  const std::optional<Tokenizer::Piece> piece = tok_->piece(id);
  if (!piece) {
    return out_of_range("detokenize: token id " + std::to_string(id) +
                        " is not in the vocabulary (" + std::to_string(tok_->id_space()) + " ids)");
  }
  if (options_.skip_special_tokens && piece->special) return {};
  if (tok_->decode_joins_with_space()) {
    if (!first_) out->push_back(' ');
    out->append(piece->bytes);
    first_ = false;
    return {};
  }
  first_ = false;
  if (piece->added) {  // added tokens end a byte run, as in Tokenizer::decode
    repair_utf8(pending_, out);
    pending_.clear();
    out->append(piece->bytes);
    return {};
  }
  pending_.append(piece->bytes);
  const size_t hold = static_cast<size_t>(incomplete_utf8_tail(pending_));
  const size_t ready = pending_.size() - hold;
  if (ready == 0) return {};
  if (hold == 0 && is_valid_utf8(pending_)) {
    out->append(pending_);
  } else {
    repair_utf8(std::string_view(pending_).substr(0, ready), out);
  }
  pending_.erase(0, ready);
  return {};
}

void Detokenizer::finish(std::string* out) {
  repair_utf8(pending_, out);
  reset();
}

void Detokenizer::reset() {
  pending_.clear();
  first_ = true;
}

}  // namespace moe::text
