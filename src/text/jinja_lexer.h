// Jinja lexer: template text -> tokens, the way @huggingface/jinja's tokenize() does it, including
// its preprocessing (trim_blocks, lstrip_blocks, one trailing newline dropped, transformers'
// {% generation %} tags removed). Every token keeps its byte offset in the original source so
// errors can name a line and column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace moe::text::jinja {

enum class TokenType {
  kText,
  kNumericLiteral,
  kStringLiteral,
  kIdentifier,
  kEquals,
  kOpenParen,
  kCloseParen,
  kOpenStatement,
  kCloseStatement,
  kOpenExpression,
  kCloseExpression,
  kOpenSquareBracket,
  kCloseSquareBracket,
  kOpenCurlyBracket,
  kCloseCurlyBracket,
  kComma,
  kDot,
  kColon,
  kPipe,
  kAdditiveBinaryOperator,        // + - ~
  kMultiplicativeBinaryOperator,  // * / // %
  kExponentiationBinaryOperator,  // **
  kComparisonBinaryOperator,      // < > <= >= == !=
  kUnaryOperator,                 // - + not followed by a number
  kComment,
  kEof,
};
const char* token_type_name(TokenType t);

struct Token {
  TokenType type;
  std::string value;
  uint32_t offset;  // byte offset in the original template source
};

struct LexOptions {
  // transformers renders chat templates with trim_blocks=True, lstrip_blocks=True; so does
  // @huggingface/jinja's Template. Both default on here.
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// "line L, column C" (1-based, columns in code points) of a byte offset.
std::string describe_position(std::string_view source, size_t offset);
void line_column(std::string_view source, size_t offset, int* line, int* column);

// Tokens end with one kEof token. Errors: InvalidArgument naming line/column and the problem.
Result<std::vector<Token>> tokenize(std::string_view source, const LexOptions& options = {});

}  // namespace moe::text::jinja
