// Jinja parser: tokens -> syntax tree, with the precedence of @huggingface/jinja's parser.ts
// (ternary < or < and < not < comparison/in < + - ~ < * / // % < ** < is-test < |filter < unary
// sign < call/member). Extensions: test arguments (`is divisibleby(3)`, `is eq 2`), true/false/none
// as literals. Errors name the line and column and what was expected.
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/jinja_ast.h"
#include "text/jinja_lexer.h"

namespace moe::text::jinja {

// Returns the template body. `source` is only used for error positions.
Result<NodeList> parse(const std::vector<Token>& tokens, std::string_view source);

}  // namespace moe::text::jinja
