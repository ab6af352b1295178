// Added-token parsing and the byte trie used to split them out (see added_tokens.h).
#include "text/added_tokens.h"

#include <cctype>

#include "text/bpe.h"
#include "text/unicode.h"

namespace moe::text {

bool added_token_is_space_at(std::string_view text, size_t i, size_t* len) {
  char32_t cp;
  const int n = decode_utf8(text, i, &cp);
  if (n == 0 || !is_white_space(cp)) return false;
  *len = n;
  return true;
}

bool added_token_space_before(std::string_view text, size_t e, size_t* len) {
  if (e == 0) return false;
  size_t p = e - 1;
  while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
  if (!added_token_is_space_at(text, p, len) || p + *len != e) return false;
  return true;
}

namespace {

bool is_word_char_at(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return std::isalnum(c) || c == '_';
  size_t n;
  return !added_token_is_space_at(text, i, &n);
}

}  // namespace

bool AddedTokenMatcher::single_word_ok(std::string_view text, size_t b, size_t e) const {
  if (b > 0) {
    size_t p = b - 1;
    while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
    if (is_word_char_at(text, p)) return false;
  }
  return e >= text.size() || !is_word_char_at(text, e);
}

AddedTokenMatcher AddedTokenMatcher::build(const std::vector<AddedToken>& tokens,
                                           const std::vector<std::string>& contents,
                                           bool normalized_pass) {
  AddedTokenMatcher m;
  m.nodes_.emplace_back();
  for (size_t k = 0; k < tokens.size(); ++k) {
    if (tokens[k].normalized != normalized_pass || contents[k].empty()) continue;
    const auto index = static_cast<int32_t>(m.tokens_.size());
    m.tokens_.push_back(tokens[k]);
    int32_t node = 0;
    for (unsigned char c : contents[k]) {
      int32_t next = -1;
      for (const auto& [ch, child] : m.nodes_[node].edges) {
        if (ch == c) next = child;
      }
      if (next < 0) {
        next = static_cast<int32_t>(m.nodes_.size());
        m.nodes_[node].edges.emplace_back(c, next);
        m.nodes_.emplace_back();
      }
      node = next;
    }
    if (m.nodes_[node].token < 0) m.nodes_[node].token = index;  // first definition wins
    m.first_byte_[static_cast<unsigned char>(contents[k][0])] = true;
  }
  return m;
}

int32_t AddedTokenMatcher::longest_match(std::string_view text, size_t i, bool allow_special,
                                         size_t* len) const {
  int32_t node = 0, best = -1;
  for (size_t j = i; j < text.size(); ++j) {
    int32_t next = -1;
    for (const auto& [ch, child] : nodes_[node].edges) {
      if (ch == static_cast<unsigned char>(text[j])) {
        next = child;
        break;
      }
    }
    if (next < 0) break;
    node = next;
    const int32_t t = nodes_[node].token;
    if (t >= 0 && (allow_special || !tokens_[t].special)) {
      best = t;
      *len = j + 1 - i;
    }
  }
  return best;
}

Result<std::vector<AddedToken>> parse_added_tokens(const nlohmann::json& j) {
  std::vector<AddedToken> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return invalid_argument("added_tokens: expected an array");
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& e = j[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("id") || !e["id"].is_number_integer() ||
        !e.contains("content") || !e["content"].is_string()) {
      return invalid_argument(where + ": expected {\"id\": int, \"content\": string, ...}");
    }
    AddedToken t;
    const int64_t id = e["id"].get<int64_t>();
    if (id < 0 || id >= kMaxTokenId) {
      return invalid_argument(where + ": id must be in [0, " + std::to_string(kMaxTokenId) + ")");
    }
    t.id = static_cast<int32_t>(id);
    t.content = e["content"].get<std::string>();
    if (!is_valid_utf8(t.content) || t.content.empty()) {
      return invalid_argument(where + ": content must be non-empty UTF-8");
    }
    auto flag = [&](const char* key, bool def) {
      return e.contains(key) && e[key].is_boolean() ? e[key].get<bool>() : def;
    };
    t.special = flag("special", false);
    t.single_word = flag("single_word", false);
    t.lstrip = flag("lstrip", false);
    t.rstrip = flag("rstrip", false);
    t.normalized = flag("normalized", !t.special);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace moe::text
