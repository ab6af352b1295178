// Incremental detokenizer for streaming: feed ids one at a time, get the newly completed text.
// Never emits a broken UTF-8 sequence: bytes of an unfinished multi-byte character are held back
// until a later token completes them. Invariant (tested): the concatenation of everything push()
// and finish() emit equals Tokenizer::decode() of the same ids with the same options
// (except clean_up_tokenization_spaces, which streaming does not apply).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "text/tokenizer.h"

namespace moe::text {

class Detokenizer {
 public:
  // `tokenizer` must outlive the Detokenizer. One Detokenizer per stream; not thread-safe.
  explicit Detokenizer(const Tokenizer& tokenizer, DecodeOptions options = {})
      : tok_(&tokenizer), options_(options) {}

  // Appends the text completed by `id` to `out` (possibly nothing). Error if the id is unknown
  // (the state is unchanged then).
  Status push(int32_t id, std::string* out);
  // End of stream: emits held-back bytes (an unfinished character becomes U+FFFD) and resets.
  void finish(std::string* out);
  void reset();
  // Bytes currently held back (0-3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tok_;
  DecodeOptions options_;
  std::string pending_;  // undecoded bytes of ordinary tokens
  bool first_ = true;
};

}  // namespace moe::text
