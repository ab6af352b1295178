// Jinja parser (see jinja_parser.h).
#include "text/jinja_parser.h"

#include <charconv>
#include <cstdlib>

namespace moe::text::jinja {
namespace {

constexpr int kMaxNesting = 200;

struct ParseError {
  std::string msg;
  uint32_t offset;
};

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  NodeList parse_program() {
    NodeList body;
    while (peek().type != TokenType::kEof) body.push_back(parse_any());
    return body;
  }

 private:
  const Token& peek(size_t k = 0) const {
    const size_t i = cur_ + k;
    return i < t_.size() ? t_[i] : t_.back();
  }
  [[noreturn]] void error(const std::string& msg) const { throw ParseError{msg, peek().offset}; }
  bool is(TokenType type) const { return peek().type == type; }
  bool is_ident(std::string_view name, size_t k = 0) const {
    return peek(k).type == TokenType::kIdentifier && peek(k).value == name;
  }
  bool is_statement(std::initializer_list<std::string_view> names) const {
    if (peek().type != TokenType::kOpenStatement || peek(1).type != TokenType::kIdentifier) {
      return false;
    }
    for (auto n : names) {
      if (peek(1).value == n) return true;
    }
    return false;
  }
  const Token& expect(TokenType type, const char* what) {
    if (peek().type != type) {
      error(std::string("expected ") + what + ", got " + describe(peek()));
    }
    return t_[cur_++];
  }
  void expect_ident(std::string_view name) {
    if (!is_ident(name)) error("expected '" + std::string(name) + "', got " + describe(peek()));
    ++cur_;
  }
  static std::string describe(const Token& t) {
    if (t.type == TokenType::kEof) return "end of template";
    if (t.type == TokenType::kText) return "text";
    return std::string(token_type_name(t.type)) + " '" + t.value + "'";
  }
  NodePtr node(NodeKind kind, uint32_t offset) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->offset = offset;
    return n;
  }

  struct DepthGuard {
    explicit DepthGuard(Parser* p) : p(p) {
      if (++p->depth_ > kMaxNesting) p->error("template nested deeper than 200 levels");
    }
    ~DepthGuard() { --p->depth_; }
    Parser* p;
  };

  NodePtr parse_any() {
    DepthGuard guard(this);
    const Token& tok = peek();
    switch (tok.type) {
      case TokenType::kComment: {
        ++cur_;
        return node(NodeKind::kComment, tok.offset);
      }
      case TokenType::kText: {
        auto n = node(NodeKind::kText, tok.offset);
        n->text = tok.value;
        ++cur_;
        return n;
      }
      case TokenType::kOpenStatement:
        return parse_statement();
      case TokenType::kOpenExpression: {
        ++cur_;
        NodePtr e = parse_expression();
        expect(TokenType::kCloseExpression, "'}}'");
        return e;
      }
      default:
        error("unexpected " + describe(tok));
    }
  }

  // Parses statements until one of `names` opens ({% name ...).
  NodeList parse_until(std::initializer_list<std::string_view> names, const char* block) {
    NodeList body;
    while (!is_statement(names)) {
      if (peek().type == TokenType::kEof) {
        std::string want;
        for (auto n : names) want += (want.empty() ? "{% " : " or {% ") + std::string(n) + " %}";
        error(std::string("unclosed {% ") + block + " %} block: expected " + want);
      }
      body.push_back(parse_any());
    }
    return body;
  }
  void expect_end(std::string_view name) {
    expect(TokenType::kOpenStatement, "'{%'");
    expect_ident(name);
    expect(TokenType::kCloseStatement, "'%}'");
  }

  NodePtr parse_statement() {
    const uint32_t open = peek().offset;
    expect(TokenType::kOpenStatement, "'{%'");
    if (peek().type != TokenType::kIdentifier)
      error("expected a statement name, got " + describe(peek()));
    const std::string name = peek().value;
    ++cur_;
    if (name == "set") return parse_set(open);
    if (name == "if") {
      NodePtr n = parse_if(open);
      expect_end("endif");
      return n;
    }
    if (name == "for") return parse_for(open);
    if (name == "macro") {
      auto n = node(NodeKind::kMacro, open);
      NodePtr callee = parse_primary();
      if (callee->kind != NodeKind::kIdentifier) error("expected a macro name");
      n->text = callee->text;
      n->params = parse_args(/*parameters=*/true);
      expect(TokenType::kCloseStatement, "'%}'");
      n->body = parse_until({"endmacro"}, "macro");
      expect_end("endmacro");
      return n;
    }
    if (name == "call") {
      auto n = node(NodeKind::kCallBlock, open);
      if (is(TokenType::kOpenParen)) n->params = parse_args(/*parameters=*/true);
      const uint32_t at = peek().offset;
      NodePtr callee = parse_primary();
      if (callee->kind != NodeKind::kIdentifier) error("expected a macro name after 'call'");
      auto call = node(NodeKind::kCall, at);
      call->a = std::move(callee);
      call->items = parse_args(/*parameters=*/false);
      n->a = std::move(call);
      expect(TokenType::kCloseStatement, "'%}'");
      n->body = parse_until({"endcall"}, "call");
      expect_end("endcall");
      return n;
    }
    if (name == "filter") {
      auto n = node(NodeKind::kFilterBlock, open);
      auto f = node(NodeKind::kFilter, peek().offset);
      f->text = expect(TokenType::kIdentifier, "a filter name").value;
      if (is(TokenType::kOpenParen)) f->items = parse_args(false);
      n->a = std::move(f);
      expect(TokenType::kCloseStatement, "'%}'");
      n->body = parse_until({"endfilter"}, "filter");
      expect_end("endfilter");
      return n;
    }
    if (name == "break" || name == "continue") {
      expect(TokenType::kCloseStatement, "'%}'");
      return node(name == "break" ? NodeKind::kBreak : NodeKind::kContinue, open);
    }
    if (name == "include" || name == "import" || name == "from" || name == "extends" ||
        name == "block") {
      error("'{% " + name +
            " %}' is not supported: chat templates are rendered without file access");
    }
    cur_--;
    error("unknown statement '" + name + "'");
  }

  NodePtr parse_set(uint32_t open) {
    auto n = node(NodeKind::kSet, open);
    n->a = parse_expression_sequence(false);
    check_target(*n->a, "set");
    if (is(TokenType::kEquals)) {
      ++cur_;
      n->b = parse_expression_sequence(false);
    } else {
      if (n->a->kind != NodeKind::kIdentifier && n->a->kind != NodeKind::kMember) {
        error("block set needs a single name");
      }
      expect(TokenType::kCloseStatement, "'=' or '%}'");
      n->body = parse_until({"endset"}, "set");
      expect(TokenType::kOpenStatement, "'{%'");
      expect_ident("endset");
    }
    expect(TokenType::kCloseStatement, "'%}'");
    return n;
  }

  void check_target(const Node& t, const char* what) {
    if (t.kind == NodeKind::kIdentifier) return;
    if (t.kind == NodeKind::kMember && !t.flag) return;
    if (t.kind == NodeKind::kTuple) {
      for (const auto& i : t.items) {
        if (i->kind != NodeKind::kIdentifier)
          error(std::string("cannot assign to this in ") + what);
      }
      return;
    }
    throw ParseError{std::string("invalid assignment target in ") + what, t.offset};
  }

  NodePtr parse_if(uint32_t open) {
    auto n = node(NodeKind::kIf, open);
    n->a = parse_expression();
    expect(TokenType::kCloseStatement, "'%}'");
    n->body = parse_until({"elif", "else", "endif"}, "if");
    if (is_statement({"elif"})) {
      const uint32_t at = peek().offset;
      cur_ += 2;
      n->alt.push_back(parse_if(at));
    } else if (is_statement({"else"})) {
      cur_ += 2;
      expect(TokenType::kCloseStatement, "'%}'");
      n->alt = parse_until({"endif"}, "if");
    }
    return n;
  }

  NodePtr parse_for(uint32_t open) {
    auto n = node(NodeKind::kFor, open);
    n->a = parse_expression_sequence(true);
    if (n->a->kind != NodeKind::kIdentifier) {
      check_target(*n->a, "for");
      if (n->a->kind != NodeKind::kTuple) error("expected a loop variable");
    }
    if (!is_ident("in")) error("expected 'in' after the loop variable, got " + describe(peek()));
    ++cur_;
    NodePtr iter = parse_expression();
    if (iter->kind == NodeKind::kTernary && !iter->c) {  // `for x in xs if cond`
      n->b = std::move(iter->b);
      n->c = std::move(iter->a);
    } else {
      n->b = std::move(iter);
    }
    if (is_ident("recursive")) error("recursive loops are not supported");
    expect(TokenType::kCloseStatement, "'%}'");
    n->body = parse_until({"endfor", "else"}, "for");
    if (is_statement({"else"})) {
      cur_ += 2;
      expect(TokenType::kCloseStatement, "'%}'");
      n->alt = parse_until({"endfor"}, "for");
    }
    expect_end("endfor");
    return n;
  }

  NodePtr parse_expression_sequence(bool primary) {
    const uint32_t at = peek().offset;
    NodePtr first = primary ? parse_primary() : parse_expression();
    if (!is(TokenType::kComma)) return first;
    auto tuple = node(NodeKind::kTuple, at);
    tuple->items.push_back(std::move(first));
    while (is(TokenType::kComma)) {
      ++cur_;
      tuple->items.push_back(primary ? parse_primary() : parse_expression());
    }
    return tuple;
  }

  NodePtr parse_expression() {
    DepthGuard guard(this);
    return parse_if_expression();
  }

  NodePtr parse_if_expression() {
    NodePtr a = parse_or();
    if (is_ident("if")) {
      auto n = node(NodeKind::kTernary, peek().offset);
      ++cur_;
      n->a = parse_or();
      n->b = std::move(a);
      if (is_ident("else")) {
        ++cur_;
        n->c = parse_if_expression();
      }
      return n;
    }
    return a;
  }

  NodePtr binary(std::string op, uint32_t at, NodePtr l, NodePtr r) {
    auto n = node(NodeKind::kBinary, at);
    n->text = std::move(op);
    n->a = std::move(l);
    n->b = std::move(r);
    return n;
  }

  NodePtr parse_or() {
    NodePtr left = parse_and();
    while (is_ident("or")) {
      const uint32_t at = peek().offset;
      ++cur_;
      left = binary("or", at, std::move(left), parse_and());
    }
    return left;
  }
  NodePtr parse_and() {
    NodePtr left = parse_not();
    while (is_ident("and")) {
      const uint32_t at = peek().offset;
      ++cur_;
      left = binary("and", at, std::move(left), parse_not());
    }
    return left;
  }
  NodePtr parse_not() {
    if (is_ident("not")) {
      DepthGuard guard(this);
      auto n = node(NodeKind::kUnary, peek().offset);
      ++cur_;
      n->text = "not";
      n->a = parse_not();
      return n;
    }
    return parse_comparison();
  }
  NodePtr parse_comparison() {
    NodePtr left = parse_additive();
    while (true) {
      const uint32_t at = peek().offset;
      std::string op;
      if (is_ident("not") && is_ident("in", 1)) {
        op = "not in";
        cur_ += 2;
      } else if (is_ident("in")) {
        op = "in";
        ++cur_;
      } else if (is(TokenType::kComparisonBinaryOperator)) {
        op = t_[cur_++].value;
      } else {
        return left;
      }
      left = binary(op, at, std::move(left), parse_additive());
    }
  }
  NodePtr parse_additive() {
    NodePtr left = parse_multiplicative();
    while (is(TokenType::kAdditiveBinaryOperator)) {
      const Token& op = t_[cur_++];
      left = binary(op.value, op.offset, std::move(left), parse_multiplicative());
    }
    return left;
  }
  NodePtr parse_multiplicative() {
    NodePtr left = parse_power();
    while (is(TokenType::kMultiplicativeBinaryOperator)) {
      const Token& op = t_[cur_++];
      left = binary(op.value, op.offset, std::move(left), parse_power());
    }
    return left;
  }
  NodePtr parse_power() {
    NodePtr left = parse_test();
    while (is(TokenType::kExponentiationBinaryOperator)) {
      const Token& op = t_[cur_++];
      left = binary(op.value, op.offset, std::move(left), parse_test());
    }
    return left;
  }
  NodePtr parse_test() {
    NodePtr operand = parse_filter();
    while (is_ident("is")) {
      auto n = node(NodeKind::kTest, peek().offset);
      ++cur_;
      if (is_ident("not")) {
        n->flag = true;
        ++cur_;
      }
      if (peek().type != TokenType::kIdentifier) error("expected a test name after 'is'");
      n->text = t_[cur_++].value;
      if (n->text == "none" || n->text == "None") n->text = "none";
      if (n->text == "True") n->text = "true";
      if (n->text == "False") n->text = "false";
      if (is(TokenType::kOpenParen)) {
        n->items = parse_args(false);
      } else if (is(TokenType::kNumericLiteral) || is(TokenType::kStringLiteral) ||
                 is(TokenType::kOpenSquareBracket) || is(TokenType::kOpenCurlyBracket) ||
                 (is(TokenType::kIdentifier) && !is_ident("else") && !is_ident("or") &&
                  !is_ident("and") && !is_ident("if") && !is_ident("is") && !is_ident("in") &&
                  !is_ident("not"))) {
        n->items.push_back(parse_call_member());  // Jinja2: `x is divisibleby 3`
      }
      n->a = std::move(operand);
      operand = std::move(n);
    }
    return operand;
  }
  NodePtr parse_filter() {
    NodePtr operand = parse_unary_sign();
    while (is(TokenType::kPipe)) {
      ++cur_;
      auto n = node(NodeKind::kFilter, peek().offset);
      n->text = expect(TokenType::kIdentifier, "a filter name").value;
      if (is(TokenType::kOpenParen)) n->items = parse_args(false);
      n->a = std::move(operand);
      operand = std::move(n);
    }
    return operand;
  }
  NodePtr parse_unary_sign() {
    const Token& tok = peek();
    if ((tok.type == TokenType::kUnaryOperator || tok.type == TokenType::kAdditiveBinaryOperator) &&
        (tok.value == "-" || tok.value == "+")) {
      DepthGuard guard(this);
      auto n = node(NodeKind::kUnary, tok.offset);
      n->text = tok.value;
      ++cur_;
      n->a = parse_unary_sign();
      return n;
    }
    return parse_call_member();
  }
  NodePtr parse_call_member() {
    NodePtr e = parse_member(parse_primary());
    while (is(TokenType::kOpenParen)) {
      auto call = node(NodeKind::kCall, peek().offset);
      call->a = std::move(e);
      call->items = parse_args(false);
      e = parse_member(std::move(call));
    }
    return e;
  }

  // (a, b=1, *xs, **kw); parameters: only names and name=default.
  NodeList parse_args(bool parameters) {
    expect(TokenType::kOpenParen, "'('");
    NodeList args;
    bool saw_keyword = false;
    while (!is(TokenType::kCloseParen)) {
      if (is(TokenType::kEof)) error("unclosed '(': expected ')'");
      const uint32_t at = peek().offset;
      const bool kw_spread = is(TokenType::kExponentiationBinaryOperator);
      const bool spread = is(TokenType::kMultiplicativeBinaryOperator) && peek().value == "*";
      if (parameters && (kw_spread || spread)) {
        error("argument unpacking is not allowed in parameter declarations");
      }
      NodePtr arg;
      if (kw_spread || spread) {
        ++cur_;
        arg = node(kw_spread ? NodeKind::kKwSpread : NodeKind::kSpread, at);
        arg->a = parse_expression();
      } else {
        arg = parse_expression();
        if (is(TokenType::kEquals)) {
          ++cur_;
          if (arg->kind != NodeKind::kIdentifier) {
            error(parameters ? "expected a parameter name" : "expected a keyword argument name");
          }
          auto kw = node(NodeKind::kKwarg, at);
          kw->text = arg->text;
          kw->a = parse_expression();
          arg = std::move(kw);
          saw_keyword = true;
        } else if (saw_keyword) {
          throw ParseError{parameters ? "non-default argument follows default argument"
                                      : "positional argument follows keyword argument",
                           at};
        }
        if (parameters && arg->kind != NodeKind::kIdentifier && arg->kind != NodeKind::kKwarg) {
          throw ParseError{"expected a parameter name", at};
        }
      }
      args.push_back(std::move(arg));
      if (is(TokenType::kComma)) {
        ++cur_;
      } else if (!is(TokenType::kCloseParen)) {
        error("expected ',' or ')' in argument list, got " + describe(peek()));
      }
    }
    ++cur_;
    return args;
  }

  NodePtr parse_member(NodePtr object) {
    while (is(TokenType::kDot) || is(TokenType::kOpenSquareBracket)) {
      const bool computed = is(TokenType::kOpenSquareBracket);
      auto n = node(NodeKind::kMember, peek().offset);
      ++cur_;
      n->flag = computed;
      if (computed) {
        n->b = parse_subscript();
        expect(TokenType::kCloseSquareBracket, "']'");
      } else {
        const Token& p = peek();
        if (p.type == TokenType::kIdentifier) {
          n->text = p.value;
        } else if (p.type == TokenType::kNumericLiteral &&
                   p.value.find_first_not_of("0123456789") == std::string::npos) {
          n->flag = true;
          auto lit = node(NodeKind::kLiteral, p.offset);
          lit->value = Value::integer(std::strtoll(p.value.c_str(), nullptr, 10));
          n->b = std::move(lit);
        } else {
          error("expected an attribute name after '.', got " + describe(p));
        }
        ++cur_;
      }
      n->a = std::move(object);
      object = std::move(n);
    }
    return object;
  }

  // [i] or [start:stop:step].
  NodePtr parse_subscript() {
    const uint32_t at = peek().offset;
    std::vector<NodePtr> parts;
    bool slice = false;
    while (!is(TokenType::kCloseSquareBracket)) {
      if (is(TokenType::kEof)) error("unclosed '[': expected ']'");
      if (is(TokenType::kColon)) {
        parts.push_back(nullptr);
        ++cur_;
        slice = true;
      } else {
        parts.push_back(parse_expression());
        if (is(TokenType::kColon)) {
          ++cur_;
          slice = true;
        } else if (!is(TokenType::kCloseSquareBracket)) {
          error("expected ':' or ']' in subscript, got " + describe(peek()));
        }
      }
    }
    if (parts.empty()) error("expected an index or slice inside '[]'");
    if (!slice) return std::move(parts[0]);
    if (parts.size() > 3) throw ParseError{"a slice takes at most 3 parts", at};
    auto n = node(NodeKind::kSlice, at);
    parts.resize(3);
    n->a = std::move(parts[0]);
    n->b = std::move(parts[1]);
    n->c = std::move(parts[2]);
    return n;
  }

  NodePtr parse_primary() {
    DepthGuard guard(this);
    const Token& tok = peek();
    switch (tok.type) {
      case TokenType::kNumericLiteral: {
        ++cur_;
        auto n = node(NodeKind::kLiteral, tok.offset);
        if (tok.value.find('.') != std::string::npos) {
          n->value = Value::floating(std::strtod(tok.value.c_str(), nullptr));
        } else {
          int64_t v = 0;
          const char* b = tok.value.data();
          const char* e = b + tok.value.size();
          if (*b == '+') ++b;
          auto r = std::from_chars(b, e, v);
          if (r.ec != std::errc() || r.ptr != e) {
            throw ParseError{"integer literal out of range: " + tok.value, tok.offset};
          }
          n->value = Value::integer(v);
        }
        return n;
      }
      case TokenType::kStringLiteral: {
        ++cur_;
        std::string s = tok.value;
        while (is(TokenType::kStringLiteral)) s += t_[cur_++].value;
        auto n = node(NodeKind::kLiteral, tok.offset);
        n->value = Value::string(std::move(s));
        return n;
      }
      case TokenType::kIdentifier: {
        ++cur_;
        const std::string& v = tok.value;
        if (v == "true" || v == "True" || v == "false" || v == "False") {
          auto n = node(NodeKind::kLiteral, tok.offset);
          n->value = Value::boolean(v[0] == 't' || v[0] == 'T');
          return n;
        }
        if (v == "none" || v == "None") {
          auto n = node(NodeKind::kLiteral, tok.offset);
          n->value = Value::none();
          return n;
        }
        auto n = node(NodeKind::kIdentifier, tok.offset);
        n->text = v;
        return n;
      }
      case TokenType::kOpenParen: {
        ++cur_;
        NodePtr e = parse_expression_sequence(false);
        if (e->kind == NodeKind::kTuple && is(TokenType::kCloseParen)) e->flag = true;
        expect(TokenType::kCloseParen, "')'");
        return e;
      }
      case TokenType::kOpenSquareBracket: {
        ++cur_;
        auto n = node(NodeKind::kList, tok.offset);
        while (!is(TokenType::kCloseSquareBracket)) {
          if (is(TokenType::kEof)) error("unclosed '[': expected ']'");
          n->items.push_back(parse_expression());
          if (is(TokenType::kComma)) {
            ++cur_;
          } else if (!is(TokenType::kCloseSquareBracket)) {
            error("expected ',' or ']' in list, got " + describe(peek()));
          }
        }
        ++cur_;
        return n;
      }
      case TokenType::kOpenCurlyBracket: {
        ++cur_;
        auto n = node(NodeKind::kDict, tok.offset);
        while (!is(TokenType::kCloseCurlyBracket)) {
          if (is(TokenType::kEof)) error("unclosed '{': expected '}'");
          n->items.push_back(parse_expression());
          expect(TokenType::kColon, "':' between key and value");
          n->items.push_back(parse_expression());
          if (is(TokenType::kComma)) {
            ++cur_;
          } else if (!is(TokenType::kCloseCurlyBracket)) {
            error("expected ',' or '}' in dict, got " + describe(peek()));
          }
        }
        ++cur_;
        return n;
      }
      default:
        error("unexpected " + describe(tok) + " in expression");
    }
  }

  const std::vector<Token>& t_;
  size_t cur_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<NodeList> parse(const std::vector<Token>& tokens, std::string_view source) {
  if (tokens.empty() || tokens.back().type != TokenType::kEof) {
    return invalid_argument("chat template: token list must end with Eof");
  }
  try {
    return Parser(tokens).parse_program();
  } catch (const ParseError& e) {
    return invalid_argument("chat template syntax error at " + describe_position(source, e.offset) +
                            ": " + e.msg);
  }
}

}  // namespace moe::text::jinja
