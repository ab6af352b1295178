// PCRE2 wrapper for the pre-tokenizer patterns (see pretokenizer_regex.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/pretokenizer_regex.h"

#include <pcre2.h>

namespace moe::text {

// Oniguruma's \s is Unicode White_Space; PCRE2's UCP \s is \p{Xsp}, which lacks U+0085.
std::string oniguruma_to_pcre2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (n == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else {
        out.push_back(c);
        out.push_back(n);
      }
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

RegexScratch::RegexScratch() : md_(pcre2_match_data_create(1, nullptr)) {}
RegexScratch::~RegexScratch() { pcre2_match_data_free(md_); }

void Regex::CodeDeleter::operator()(pcre2_real_code_8* code) const { pcre2_code_free(code); }

Result<Regex> Regex::compile(std::string_view oniguruma_pattern) {
  Regex r;
  r.pattern_ = oniguruma_to_pcre2(oniguruma_pattern);
  int err = 0;
  PCRE2_SIZE err_off = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(r.pattern_.data()), r.pattern_.size(),
                    PCRE2_UTF | PCRE2_UCP, &err, &err_off, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return invalid_argument("bad regex /" + std::string(oniguruma_pattern) +
                            "/: " + reinterpret_cast<const char*>(msg) + " at offset " +
                            std::to_string(err_off) + " (of the PCRE2 translation /" + r.pattern_ +
                            "/)");
  }
  r.code_.reset(code);
  r.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return r;
}

Result<Regex> Regex::literal(std::string_view text) {
  std::string quoted;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) quoted += '\\';
    quoted += c;
  }
  return compile(quoted);
}

bool Regex::find(std::string_view subject, size_t start, RegexScratch* scratch, size_t* begin,
                 size_t* end) const {
  pcre2_match_data* md = scratch->match_data();
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const int rc =
      jit_ ? pcre2_jit_match(code_.get(), s, subject.size(), start, 0, md, nullptr)
           : pcre2_match(code_.get(), s, subject.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
  if (rc < 0) return false;  // no match (or a match-limit error: treat as no match)
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  *begin = ov[0];
  *end = ov[1];
  return true;
}

}  // namespace moe::text
