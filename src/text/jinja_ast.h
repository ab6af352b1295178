// Syntax tree of a parsed Jinja template. One node struct for statements and expressions; which
// fields are used depends on `kind` (listed per kind below). Nodes are immutable after parsing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/jinja_value.h"

namespace moe::text::jinja {

struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

enum class NodeKind {
  // Statements (rendered in a body).
  kText,         // text
  kComment,      // nothing
  kIf,           // a = test, body, alt (elif is a nested kIf in alt)
  kFor,          // a = target (identifier or tuple), b = iterable, c = loop filter, body, alt
  kSet,          // a = target (identifier, tuple or member), b = value (null: body is captured)
  kMacro,        // name, params (identifiers or kKwarg defaults), body
  kCallBlock,    // a = call expression, params = caller parameters, body
  kFilterBlock,  // a = filter (kIdentifier or kCall), body
  kBreak,
  kContinue,
  // Expressions (a statement position prints their value).
  kLiteral,     // value
  kIdentifier,  // text = name
  kList,        // items
  kTuple,       // items
  kDict,        // items = key, value, key, value...
  kMember,      // a = object, b = property; flag = computed ([...]); text = name if !computed
  kSlice,       // a, b, c = start, stop, step (each may be null)
  kCall,        // a = callee, items = arguments (kKwarg, kSpread, kKwSpread or expressions)
  kBinary,      // text = operator, a, b
  kUnary,       // text = operator ("not", "-", "+"), a
  kFilter,      // a = operand, text = filter name, items = arguments
  kTest,        // a = operand, text = test name, flag = negated, items = arguments
  kTernary,     // a = condition, b = true value, c = false value (null: undefined if false)
  kKwarg,       // text = name, a = value
  kSpread,      // a
  kKwSpread,    // a
};

struct Node {
  NodeKind kind;
  uint32_t offset = 0;  // byte offset in the template source
  std::string text;
  Value value;
  bool flag = false;
  NodePtr a, b, c;
  NodeList items;
  NodeList body, alt;
  NodeList params;
};

}  // namespace moe::text::jinja
