// Jinja lexer (see jinja_lexer.h). Mirrors @huggingface/jinja 0.5.11 src/lexer.ts token by token,
// plus {% raw %} blocks, which it lacks; positions map back to the original source.
#include "text/jinja_lexer.h"

#include <cstring>

#include "text/jinja_unicode.h"

namespace moe::text::jinja {
namespace {

// JavaScript's \s (what @huggingface/jinja's whitespace control and trimEnd() strip).
bool js_space(uint32_t cp) {
  if (cp == 0xFEFF) return true;
  if (cp >= 0x1C && cp <= 0x1F) return false;
  if (cp == 0x85) return false;
  return is_space(cp);
}

// Preprocessed text with, for each byte, its offset in the original source.
struct Mapped {
  std::string s;
  std::vector<uint32_t> pos;  // pos.size() == s.size() + 1
  void push(char c, uint32_t p) {
    s += c;
    pos.insert(pos.end() - 1, p);
  }
};

bool is_line_start(const std::string& s, size_t i) {
  if (i == 0) return true;
  if (s[i - 1] == '\n' || s[i - 1] == '\r') return true;
  return i >= 3 && s.compare(i - 3, 2, "\xE2\x80") == 0 &&
         (s[i - 1] == '\xA8' || s[i - 1] == '\xA9');
}

// Length of the JS-whitespace code point at s[i], or 0.
size_t space_len(const std::string& s, size_t i) {
  if (i >= s.size()) return 0;
  size_t len = 1;
  const uint32_t cp = decode_utf8(s, i, &len);
  return js_space(cp) ? len : 0;
}

Mapped preprocess(std::string_view source, const LexOptions& opt) {
  Mapped m;
  m.s.assign(source);
  m.pos.resize(source.size() + 1);
  for (size_t i = 0; i <= source.size(); ++i) m.pos[i] = static_cast<uint32_t>(i);
  if (!m.s.empty() && m.s.back() == '\n') {
    m.s.pop_back();
    m.pos.erase(m.pos.end() - 2);
  }
  auto rebuild = [&](auto&& body) {
    Mapped out;
    out.pos.push_back(m.pos.back());
    out.s.reserve(m.s.size());
    out.pos.reserve(m.pos.size());
    body(out);
    m = std::move(out);
  };
  if (opt.lstrip_blocks) {  // /^[ \t]*({[#%-])/gm -> "$1"
    rebuild([&](Mapped& out) {
      const std::string& s = m.s;
      size_t i = 0;
      while (i < s.size()) {
        if (is_line_start(s, i)) {
          size_t j = i;
          while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
          if (j + 1 < s.size() && s[j] == '{' && std::strchr("#%-", s[j + 1]) && j > i) {
            i = j;
          }
        }
        out.push(s[i], m.pos[i]);
        ++i;
      }
    });
  }
  if (opt.trim_blocks) {  // /([#%-]})\n/g -> "$1"
    rebuild([&](Mapped& out) {
      const std::string& s = m.s;
      size_t i = 0;
      while (i < s.size()) {
        if (i + 2 < s.size() && std::strchr("#%-", s[i]) && s[i] != '\0' && s[i + 1] == '}' &&
            s[i + 2] == '\n') {
          out.push(s[i], m.pos[i]);
          out.push(s[i + 1], m.pos[i + 1]);
          i += 3;
          continue;
        }
        out.push(s[i], m.pos[i]);
        ++i;
      }
    });
  }
  // transformers' {% generation %} / {% endgeneration %}:
  // /(\s*){%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/gs -> lstrip ? "" : before, rstrip ? "" : after
  if (m.s.find("generation") != std::string::npos) {
    rebuild([&](Mapped& out) {
      const std::string& s = m.s;
      size_t last = 0;
      size_t p = s.find("{%");
      while (p != std::string::npos) {
        size_t q = p + 2;
        const bool lstrip = q < s.size() && s[q] == '-';
        if (lstrip) ++q;
        while (size_t l = space_len(s, q)) q += l;
        if (s.compare(q, 3, "end") == 0 && s.compare(q + 3, 10, "generation") == 0) q += 3;
        bool match = s.compare(q, 10, "generation") == 0;
        bool rstrip = false;
        if (match) {
          q += 10;
          while (size_t l = space_len(s, q)) q += l;
          rstrip = q < s.size() && s[q] == '-';
          if (rstrip) ++q;
          match = s.compare(q, 2, "%}") == 0;
        }
        if (!match) {
          p = s.find("{%", p + 2);
          continue;
        }
        q += 2;
        // Leading whitespace run (back to the previous match).
        size_t b = p;
        while (b > last) {
          size_t k = b - 1;
          while (k > last && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
          if (space_len(s, k) != b - k) break;
          b = k;
        }
        size_t e = q;
        while (size_t l = space_len(s, e)) e += l;
        for (size_t i = last; i < b; ++i) out.push(s[i], m.pos[i]);
        if (!lstrip) {
          for (size_t i = b; i < p; ++i) out.push(s[i], m.pos[i]);
        }
        if (!rstrip) {
          for (size_t i = q; i < e; ++i) out.push(s[i], m.pos[i]);
        }
        last = e;
        p = s.find("{%", e);
      }
      for (size_t i = last; i < s.size(); ++i) out.push(s[i], m.pos[i]);
    });
  }
  return m;
}

class Lexer {
 public:
  Lexer(std::string_view source, Mapped m)
      : source_(source), src_(std::move(m.s)), pos_(std::move(m.pos)) {}

  Result<std::vector<Token>> run() {
    try {
      lex();
    } catch (const JinjaLexError& e) {
      return invalid_argument("chat template syntax error at " +
                              describe_position(source_, pos_[std::min(e.at, src_.size())]) + ": " +
                              e.msg);
    }
    tokens_.push_back(Token{TokenType::kEof, "", pos_.back()});
    return std::move(tokens_);
  }

 private:
  struct JinjaLexError {
    std::string msg;
    size_t at;
  };
  [[noreturn]] void error(std::string msg) { throw JinjaLexError{std::move(msg), cur_}; }

  char at(size_t i) const { return i < src_.size() ? src_[i] : '\0'; }
  bool starts(std::string_view t) const { return src_.compare(cur_, t.size(), t) == 0; }
  size_t ws_len(size_t i) const { return space_len(src_, i); }

  void push(TokenType type, std::string value, size_t start) {
    tokens_.push_back(Token{type, std::move(value), pos_[start]});
  }
  TokenType last_type() const { return tokens_.empty() ? TokenType::kEof : tokens_.back().type; }

  void strip_trailing_whitespace() {
    if (tokens_.empty() || tokens_.back().type != TokenType::kText) return;
    std::string& v = tokens_.back().value;
    size_t e = v.size();
    while (e > 0) {
      size_t k = e - 1;
      while (k > 0 && (static_cast<unsigned char>(v[k]) & 0xC0) == 0x80) --k;
      if (space_len(v, k) != e - k) break;
      e = k;
    }
    v.resize(e);
    if (v.empty()) tokens_.pop_back();
  }
  void skip_leading_whitespace() {
    while (size_t l = ws_len(cur_)) cur_ += l;
  }

  // consumeWhile for string literals (with escapes), digits and words.
  template <typename Pred>
  std::string consume_while(Pred pred) {
    std::string str;
    while (true) {
      if (cur_ >= src_.size()) {
        if (pred('\0')) error("Unexpected end of input");
        return str;
      }
      const char c = src_[cur_];
      if (!pred(c)) return str;
      if (c == '\\') {
        ++cur_;
        if (cur_ >= src_.size()) error("Unexpected end of input");
        const char esc = src_[cur_++];
        if (esc == 'x' || esc == 'u') {
          const size_t n = esc == 'x' ? 2 : 4;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = at(cur_ + k);
            int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
            if (d < 0) error(std::string("Invalid hexadecimal escape sequence: \\") + esc);
            cp = cp * 16 + d;
          }
          append_utf8(str, cp);
          cur_ += n;
          continue;
        }
        switch (esc) {
          case 'n':
            str += '\n';
            break;
          case 't':
            str += '\t';
            break;
          case 'r':
            str += '\r';
            break;
          case 'b':
            str += '\b';
            break;
          case 'f':
            str += '\f';
            break;
          case 'v':
            str += '\v';
            break;
          case '\'':
            str += '\'';
            break;
          case '"':
            str += '"';
            break;
          case '\\':
            str += '\\';
            break;
          default:
            error(std::string("Unexpected escaped character: ") + esc);
        }
        continue;
      }
      str += src_[cur_++];
      if (cur_ >= src_.size()) error("Unexpected end of input");
    }
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_word(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }

  // {% raw %}...{% endraw %} at cur_ (which points at "{%"); returns false if not a raw tag.
  bool try_raw() {
    size_t q = cur_ + 2;
    const bool strip_before = at(q) == '-';
    if (strip_before) ++q;
    while (size_t l = ws_len(q)) q += l;
    if (src_.compare(q, 3, "raw") != 0 || is_word(at(q + 3))) return false;
    q += 3;
    while (size_t l = ws_len(q)) q += l;
    const bool strip_inner_start = at(q) == '-';
    if (strip_inner_start) ++q;
    if (src_.compare(q, 2, "%}") != 0) return false;
    q += 2;
    size_t body_start = q;
    if (strip_inner_start) {
      while (size_t l = ws_len(body_start)) body_start += l;
    }
    size_t p = src_.find("{%", q);
    while (p != std::string::npos) {
      size_t r = p + 2;
      const bool strip_inner_end = at(r) == '-';
      if (strip_inner_end) ++r;
      while (size_t l = ws_len(r)) r += l;
      if (src_.compare(r, 6, "endraw") == 0 && !is_word(at(r + 6))) {
        r += 6;
        while (size_t l = ws_len(r)) r += l;
        const bool strip_after = at(r) == '-';
        if (strip_after) ++r;
        if (src_.compare(r, 2, "%}") == 0) {
          if (strip_before) strip_trailing_whitespace();
          std::string body = body_start < p ? src_.substr(body_start, p - body_start) : "";
          if (strip_inner_end) {
            size_t e = body.size();
            while (e > 0) {
              size_t k = e - 1;
              while (k > 0 && (static_cast<unsigned char>(body[k]) & 0xC0) == 0x80) --k;
              if (space_len(body, k) != e - k) break;
              e = k;
            }
            body.resize(e);
          }
          if (!body.empty()) push(TokenType::kText, std::move(body), body_start);
          push(TokenType::kComment, "", cur_);
          cur_ = r + 2;
          if (strip_after) skip_leading_whitespace();
          return true;
        }
      }
      p = src_.find("{%", p + 2);
    }
    error("Missing {% endraw %} for {% raw %}");
  }

  void lex() {
    static constexpr std::pair<std::string_view, TokenType> kTable[] = {
        {"{%", TokenType::kOpenStatement},
        {"%}", TokenType::kCloseStatement},
        {"{{", TokenType::kOpenExpression},
        {"}}", TokenType::kCloseExpression},
        {"(", TokenType::kOpenParen},
        {")", TokenType::kCloseParen},
        {"{", TokenType::kOpenCurlyBracket},
        {"}", TokenType::kCloseCurlyBracket},
        {"[", TokenType::kOpenSquareBracket},
        {"]", TokenType::kCloseSquareBracket},
        {",", TokenType::kComma},
        {".", TokenType::kDot},
        {":", TokenType::kColon},
        {"|", TokenType::kPipe},
        {"<=", TokenType::kComparisonBinaryOperator},
        {">=", TokenType::kComparisonBinaryOperator},
        {"==", TokenType::kComparisonBinaryOperator},
        {"!=", TokenType::kComparisonBinaryOperator},
        {"<", TokenType::kComparisonBinaryOperator},
        {">", TokenType::kComparisonBinaryOperator},
        {"+", TokenType::kAdditiveBinaryOperator},
        {"-", TokenType::kAdditiveBinaryOperator},
        {"~", TokenType::kAdditiveBinaryOperator},
        {"**", TokenType::kExponentiationBinaryOperator},
        {"*", TokenType::kMultiplicativeBinaryOperator},
        {"//", TokenType::kMultiplicativeBinaryOperator},
        {"/", TokenType::kMultiplicativeBinaryOperator},
        {"%", TokenType::kMultiplicativeBinaryOperator},
        {"=", TokenType::kEquals},
    };
    int curly_depth = 0;
    while (cur_ < src_.size()) {
      const TokenType lt = last_type();
      if (lt == TokenType::kEof || lt == TokenType::kCloseStatement ||
          lt == TokenType::kCloseExpression || lt == TokenType::kComment) {
        const size_t start = cur_;
        while (cur_ < src_.size() &&
               !(src_[cur_] == '{' &&
                 (at(cur_ + 1) == '%' || at(cur_ + 1) == '{' || at(cur_ + 1) == '#'))) {
          ++cur_;
        }
        if (cur_ > start) {
          push(TokenType::kText, src_.substr(start, cur_ - start), start);
          continue;
        }
      }
      if (src_[cur_] == '{' && at(cur_ + 1) == '#') {
        const size_t start = cur_;
        cur_ += 2;
        const bool strip_before = at(cur_) == '-';
        if (strip_before) ++cur_;
        std::string comment;
        while (at(cur_) != '#' || at(cur_ + 1) != '}') {
          if (cur_ + 2 >= src_.size()) error("Missing end of comment tag");
          comment += src_[cur_++];
        }
        const bool strip_after = !comment.empty() && comment.back() == '-';
        if (strip_after) comment.pop_back();
        if (strip_before) strip_trailing_whitespace();
        push(TokenType::kComment, std::move(comment), start);
        cur_ += 2;
        if (strip_after) skip_leading_whitespace();
        continue;
      }
      if (starts("{%") && try_raw()) continue;
      if (starts("{%-")) {
        strip_trailing_whitespace();
        push(TokenType::kOpenStatement, "{%", cur_);
        cur_ += 3;
        continue;
      }
      if (starts("{{-")) {
        strip_trailing_whitespace();
        push(TokenType::kOpenExpression, "{{", cur_);
        curly_depth = 0;
        cur_ += 3;
        continue;
      }
      skip_leading_whitespace();
      if (starts("-%}")) {
        push(TokenType::kCloseStatement, "%}", cur_);
        cur_ += 3;
        skip_leading_whitespace();
        continue;
      }
      if (starts("-}}")) {
        push(TokenType::kCloseExpression, "}}", cur_);
        cur_ += 3;
        skip_leading_whitespace();
        continue;
      }
      if (cur_ >= src_.size()) {
        // JS reads src[length] as undefined here and reports it as an unexpected character.
        error("Unexpected character: undefined");
      }
      const char c = src_[cur_];
      if (c == '-' || c == '+') {
        const TokenType t = last_type();
        if (t == TokenType::kText || t == TokenType::kEof) {
          error(std::string("Unexpected character: ") + c);
        }
        if (t != TokenType::kIdentifier && t != TokenType::kNumericLiteral &&
            t != TokenType::kStringLiteral && t != TokenType::kCloseParen &&
            t != TokenType::kCloseSquareBracket) {
          const size_t start = cur_;
          ++cur_;
          std::string num = consume_while(is_digit);
          if (!num.empty() && at(cur_) == '.' && is_digit(at(cur_ + 1))) {
            ++cur_;
            num += "." + consume_while(is_digit);
          }
          push(num.empty() ? TokenType::kUnaryOperator : TokenType::kNumericLiteral,
               std::string(1, c) + num, start);
          continue;
        }
      }
      bool matched = false;
      for (const auto& [seq, type] : kTable) {
        if (seq == "}}" && curly_depth > 0) continue;
        if (starts(seq)) {
          push(type, std::string(seq), cur_);
          if (type == TokenType::kOpenExpression) {
            curly_depth = 0;
          } else if (type == TokenType::kOpenCurlyBracket) {
            ++curly_depth;
          } else if (type == TokenType::kCloseCurlyBracket) {
            --curly_depth;
          }
          cur_ += seq.size();
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (c == '\'' || c == '"') {
        const size_t start = cur_;
        ++cur_;
        std::string str = consume_while([c](char x) { return x != c; });
        push(TokenType::kStringLiteral, std::move(str), start);
        ++cur_;
        continue;
      }
      if (is_digit(c)) {
        const size_t start = cur_;
        std::string num = consume_while(is_digit);
        if (last_type() != TokenType::kDot && at(cur_) == '.' && is_digit(at(cur_ + 1))) {
          ++cur_;
          num += "." + consume_while(is_digit);
        }
        push(TokenType::kNumericLiteral, std::move(num), start);
        continue;
      }
      if (is_word(c)) {
        const size_t start = cur_;
        push(TokenType::kIdentifier, consume_while(is_word), start);
        continue;
      }
      size_t len = 1;
      decode_utf8(src_, cur_, &len);
      error("Unexpected character: " + src_.substr(cur_, len));
    }
  }

  std::string_view source_;
  std::string src_;
  std::vector<uint32_t> pos_;
  size_t cur_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

const char* token_type_name(TokenType t) {
  switch (t) {
    case TokenType::kText:
      return "Text";
    case TokenType::kNumericLiteral:
      return "NumericLiteral";
    case TokenType::kStringLiteral:
      return "StringLiteral";
    case TokenType::kIdentifier:
      return "Identifier";
    case TokenType::kEquals:
      return "Equals";
    case TokenType::kOpenParen:
      return "OpenParen";
    case TokenType::kCloseParen:
      return "CloseParen";
    case TokenType::kOpenStatement:
      return "OpenStatement";
    case TokenType::kCloseStatement:
      return "CloseStatement";
    case TokenType::kOpenExpression:
      return "OpenExpression";
    case TokenType::kCloseExpression:
      return "CloseExpression";
    case TokenType::kOpenSquareBracket:
      return "OpenSquareBracket";
    case TokenType::kCloseSquareBracket:
      return "CloseSquareBracket";
    case TokenType::kOpenCurlyBracket:
      return "OpenCurlyBracket";
    case TokenType::kCloseCurlyBracket:
      return "CloseCurlyBracket";
    case TokenType::kComma:
      return "Comma";
    case TokenType::kDot:
      return "Dot";
    case TokenType::kColon:
      return "Colon";
    case TokenType::kPipe:
      return "Pipe";
    case TokenType::kAdditiveBinaryOperator:
      return "AdditiveBinaryOperator";
    case TokenType::kMultiplicativeBinaryOperator:
      return "MultiplicativeBinaryOperator";
    case TokenType::kExponentiationBinaryOperator:
      return "ExponentiationBinaryOperator";
    case TokenType::kComparisonBinaryOperator:
      return "ComparisonBinaryOperator";
    case TokenType::kUnaryOperator:
      return "UnaryOperator";
    case TokenType::kComment:
      return "Comment";
    case TokenType::kEof:
      return "end of template";
  }
  return "?";
}

void line_column(std::string_view source, size_t offset, int* line, int* column) {
  *line = 1;
  *column = 1;
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++*line;
      *column = 1;
    } else if ((static_cast<unsigned char>(source[i]) & 0xC0) != 0x80) {
      ++*column;
    }
  }
}

std::string describe_position(std::string_view source, size_t offset) {
  int line = 0, column = 0;
  line_column(source, offset, &line, &column);
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

Result<std::vector<Token>> tokenize(std::string_view source, const LexOptions& options) {
  return Lexer(source, preprocess(source, options)).run();
}

}  // namespace moe::text::jinja
