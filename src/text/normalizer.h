// Normalizer of tokenizer.json, applied to text outside added tokens before pre-tokenization.
// Supported: null, Sequence, NFC, Prepend, Replace (String or Regex pattern), Strip. Others
// (NFD, NFKC, NFKD, Lowercase, BertNormalizer, Precompiled, StripAccents) are reported as
// unimplemented when the file is loaded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/pretokenizer_regex.h"

namespace moe::text {

class Normalizer {
 public:
  static Result<Normalizer> from_json(const nlohmann::json& j);

  bool empty() const { return steps_.empty(); }
  // Normalizes `in` (valid UTF-8). Returns false if the text is unchanged (then `out` is not
  // touched), true if the result was written to `out`. Thread-safe given a distinct scratch.
  bool apply(std::string_view in, RegexScratch* scratch, std::string* out) const;
  std::string apply(std::string_view in, RegexScratch* scratch) const;

 private:
  struct Step {
    enum class Kind { kNfc, kPrepend, kReplace, kStrip } kind;
    std::string text;                  // Prepend: prefix; Replace: replacement content
    Regex pattern;                     // Replace
    bool left = false, right = false;  // Strip
  };
  static Status parse_into(const nlohmann::json& j, const std::string& path, Normalizer* out);
  bool apply_step(const Step& s, std::string_view in, RegexScratch* scratch,
                  std::string* out) const;

  std::vector<Step> steps_;
};

}  // namespace moe::text
