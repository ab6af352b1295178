// PCRE2 regular expressions for the tokenizer (UTF + UCP + JIT), compiled from the Oniguruma
// syntax that tokenizer.json patterns are written in (HF tokenizers uses Oniguruma).
//
// Translation: `\s`/`\S` become Unicode White_Space (Oniguruma's meaning; PCRE2's UCP `\s` lacks
// U+0085). Known gaps: `\S` inside a bracket class keeps PCRE2's meaning (differs on U+0085 only);
// `\w` follows PCRE2 10.42 (letters, numbers, '_') rather than Oniguruma (adds marks and Pc);
// Unicode properties follow PCRE2's Unicode version (14.0 for Debian 12's 10.42).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

struct pcre2_real_code_8;
struct pcre2_real_match_data_8;

namespace moe::text {

// Per-thread match state (PCRE2 match data); one per EncodeScratch. Not thread-safe.
class RegexScratch {
 public:
  RegexScratch();
  ~RegexScratch();
  RegexScratch(const RegexScratch&) = delete;
  RegexScratch& operator=(const RegexScratch&) = delete;
  pcre2_real_match_data_8* match_data() const { return md_; }

 private:
  pcre2_real_match_data_8* md_;
};

// A compiled pattern. Immutable after compile(); find() is thread-safe given distinct scratch.
class Regex {
 public:
  // Compiles an Oniguruma-syntax pattern. Errors name the pattern and PCRE2's message/offset.
  static Result<Regex> compile(std::string_view oniguruma_pattern);
  // Compiles a literal string (escaped); used for Split { "String": ... } patterns.
  static Result<Regex> literal(std::string_view text);

  // Finds the first match in subject[start..] (subject must be valid UTF-8). Returns false if
  // none; otherwise sets [*begin, *end) (byte offsets into subject).
  bool find(std::string_view subject, size_t start, RegexScratch* scratch, size_t* begin,
            size_t* end) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct CodeDeleter {
    void operator()(pcre2_real_code_8* code) const;
  };
  std::string pattern_;  // the translated PCRE2 pattern
  std::unique_ptr<pcre2_real_code_8, CodeDeleter> code_;
  bool jit_ = false;
};

// Translates Oniguruma syntax to PCRE2 syntax (exposed for tests).
std::string oniguruma_to_pcre2(std::string_view pattern);

}  // namespace moe::text
