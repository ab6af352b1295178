// Added tokens of tokenizer.json ("added_tokens"): matched in the text before normalization
// (normalized = false) or after it (normalized = true), leftmost-longest, and split out before
// pre-tokenization. Honours lstrip/rstrip (absorb adjacent White_Space), single_word (only when
// not inside a word: neighbours must not be ASCII alphanumerics, '_' or non-ASCII letters by a
// coarse test: any non-ASCII, non-White_Space code point counts as a word character) and special
// (special tokens can be disabled per call, e.g. for untrusted text).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace moe::text {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

class AddedTokenMatcher {
 public:
  // Builds a matcher over `tokens` whose `normalized` flag equals `normalized_pass`; in that pass
  // the content is matched as given by `contents` (same order as tokens; normalized contents for
  // the normalized pass).
  static AddedTokenMatcher build(const std::vector<AddedToken>& tokens,
                                 const std::vector<std::string>& contents, bool normalized_pass);

  bool empty() const { return nodes_.size() <= 1; }

  // Splits `text` into plain segments and added tokens, in order. `on_text(std::string_view)` gets
  // non-empty plain segments; `on_token(int32_t id)` gets each matched token. Special tokens are
  // skipped (left as text) unless `allow_special`.
  template <typename TextFn, typename TokenFn>
  void split(std::string_view text, bool allow_special, TextFn&& on_text, TokenFn&& on_token) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> edges;
    int32_t token = -1;  // index into tokens_ of a token ending here
  };
  // Longest match starting at text[i]; returns token index or -1, sets *len.
  int32_t longest_match(std::string_view text, size_t i, bool allow_special, size_t* len) const;
  bool single_word_ok(std::string_view text, size_t b, size_t e) const;

  std::vector<Node> nodes_;
  std::vector<AddedToken> tokens_;
  bool first_byte_[256] = {};
};

// Parses "added_tokens". Errors name the entry.
Result<std::vector<AddedToken>> parse_added_tokens(const nlohmann::json& j);

// ---- implementation of the template -----------------------------------------------------------

bool added_token_is_space_at(std::string_view text, size_t i, size_t* len);
bool added_token_space_before(std::string_view text, size_t e, size_t* len);

template <typename TextFn, typename TokenFn>
void AddedTokenMatcher::split(std::string_view text, bool allow_special, TextFn&& on_text,
                              TokenFn&& on_token) const {
  if (empty()) {
    if (!text.empty()) on_text(text);
    return;
  }
  size_t seg = 0;  // start of the pending plain segment
  size_t i = 0;
  while (i < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    size_t len = 0;
    const int32_t t = longest_match(text, i, allow_special, &len);
    if (t < 0 || (tokens_[t].single_word && !single_word_ok(text, i, i + len))) {
      ++i;
      continue;
    }
    size_t b = i, e = i + len, n;
    if (tokens_[t].lstrip) {
      while (b > seg && added_token_space_before(text, b, &n)) b -= n;
    }
    if (tokens_[t].rstrip) {
      while (e < text.size() && added_token_is_space_at(text, e, &n)) e += n;
    }
    if (b > seg) on_text(text.substr(seg, b - seg));
    on_token(tokens_[t].id);
    seg = i = e;
  }
  if (seg < text.size()) on_text(text.substr(seg));
}

}  // namespace moe::text
