// Tree-walking Jinja interpreter (see jinja_interpreter.h). Semantics follow Python Jinja2 as
// transformers configures it (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols) where @huggingface/jinja agrees or is silent; README-level differences are listed
// in chat_template.h.
#include "text/jinja_interpreter.h"

#include <cmath>

#include "text/jinja_unicode.h"

namespace moe::text::jinja {

const Value* Scope::lookup(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    for (const auto& [k, v] : s->vars_) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::set(std::string_view name, Value v) {
  for (auto& [k, old] : vars_) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars_.emplace_back(std::string(name), std::move(v));
}

Value undefined_named(std::string hint) { return Value::undefined(std::move(hint)); }

void fail_undefined(const Value& v) {
  fail(v.str().empty() ? std::string("value is undefined") : v.str());
}

namespace {

// Annotates an error with the position of the innermost node that saw it.
[[noreturn]] void rethrow_at(JinjaError& e, uint32_t offset) {
  if (!e.has_offset) {
    e.has_offset = true;
    e.offset = offset;
  }
  throw;
}

struct DepthGuard {
  DepthGuard(int* d, int max, const char* what) : d(d) {
    if (++*d > max) {
      --*d;
      fail(std::string(what));
    }
  }
  ~DepthGuard() { --*d; }
  int* d;
};

void check_overflow(bool overflow) {
  if (overflow) fail("integer overflow");
}

double num_of(const Value& v) {
  return v.kind() == Kind::kBool ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
}
bool is_intlike(const Value& v) { return v.kind() == Kind::kInt || v.kind() == Kind::kBool; }
int64_t int_of(const Value& v) {
  return v.kind() == Kind::kBool ? (v.as_bool() ? 1 : 0) : v.as_int();
}

}  // namespace

void Interpreter::check_string_size(size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    fail("string longer than the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
}
void Interpreter::check_list_size(size_t items) const {
  if (items > limits_.max_list_items) {
    fail("list longer than the limit of " + std::to_string(limits_.max_list_items) + " items");
  }
}
void Interpreter::count_iterations(uint64_t n) {
  iterations_ += n;
  if (iterations_ > limits_.max_loop_iterations) {
    fail("loop iteration limit of " + std::to_string(limits_.max_loop_iterations) + " exceeded");
  }
}
void Interpreter::step() {
  if (++steps_ > limits_.max_steps) {
    fail("evaluation step limit of " + std::to_string(limits_.max_steps) + " exceeded");
  }
}
void Interpreter::append(std::string& out, std::string_view s) const {
  if (out.size() + s.size() > limits_.max_output_bytes) {
    fail("output larger than the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  out.append(s);
}

void Interpreter::render(const NodeList& body, Scope& globals, std::string& out) {
  current_scope_ = &globals;
  exec_block(body, globals, out);
}

Interpreter::Flow Interpreter::exec_block(const NodeList& body, Scope& scope, std::string& out) {
  for (const auto& n : body) {
    const Flow f = exec(*n, scope, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Node& n, Scope& scope, std::string& out) {
  step();
  DepthGuard guard(&depth_, 400, "template evaluation nested too deeply");
  try {
    switch (n.kind) {
      case NodeKind::kText:
        append(out, n.text);
        return Flow::kNormal;
      case NodeKind::kComment:
        return Flow::kNormal;
      case NodeKind::kIf:
        return exec_block(eval(*n.a, scope).truthy() ? n.body : n.alt, scope, out);
      case NodeKind::kFor:
        return exec_for(n, scope, out);
      case NodeKind::kSet:
        exec_set(n, scope);
        return Flow::kNormal;
      case NodeKind::kMacro:
        scope.set(n.text, make_macro(n));
        return Flow::kNormal;
      case NodeKind::kBreak:
        return Flow::kBreak;
      case NodeKind::kContinue:
        return Flow::kContinue;
      case NodeKind::kCallBlock: {
        const Node* block = &n;
        Scope* defining = &scope;
        Value caller =
            Value::function("caller", [this, block, defining](Interpreter&, CallArgs& args) {
              Scope cs(defining);
              bind_macro_args(block->params, args, cs);
              std::string body_out;
              exec_block(block->body, cs, body_out);
              return Value::string(std::move(body_out));
            });
        Scope call_scope(&scope);
        call_scope.set("caller", caller);
        const Node& call = *n.a;
        CallArgs args = eval_args(call.items, scope);
        Value fn = eval(*call.a, scope);
        append(out, to_str(this->call(fn, args, call_scope)));
        return Flow::kNormal;
      }
      case NodeKind::kFilterBlock: {
        std::string body_out;
        exec_block(n.body, scope, body_out);
        CallArgs args = eval_args(n.a->items, scope);
        append(out,
               to_str(apply_filter(*this, n.a->text, Value::string(std::move(body_out)), args)));
        return Flow::kNormal;
      }
      default:
        append(out, to_str(eval(n, scope)));
        return Flow::kNormal;
    }
  } catch (JinjaError& e) {
    rethrow_at(e, n.offset);
  }
}

Interpreter::Flow Interpreter::exec_for(const Node& n, Scope& scope, std::string& out) {
  Scope loop_scope(&scope);
  const Value iterable = eval(*n.b, loop_scope);
  Array items;
  switch (iterable.kind()) {
    case Kind::kArray:
      items = iterable.arr();
      break;
    case Kind::kObject:
      for (const auto& kv : iterable.obj().items) items.push_back(Value::string(kv.first));
      break;
    case Kind::kString: {
      const std::vector<size_t> offs = code_point_offsets(iterable.str());
      for (size_t i = 0; i + 1 < offs.size(); ++i) {
        items.push_back(Value::string(iterable.str().substr(offs[i], offs[i + 1] - offs[i])));
      }
      break;
    }
    case Kind::kUndefined:
      break;  // Jinja2's Undefined iterates as empty
    default:
      fail(std::string("'") + iterable.type_name() + "' object is not iterable");
  }
  auto bind = [&](Scope& s, const Value& item) {
    if (n.a->kind == NodeKind::kIdentifier) {
      s.set(n.a->text, item);
      return;
    }
    if (!item.is_array()) fail(std::string("cannot unpack non-iterable ") + item.type_name());
    const size_t want = n.a->items.size();
    if (item.arr().size() != want) {
      fail(std::string("too ") + (item.arr().size() < want ? "few" : "many") +
           " values to unpack (expected " + std::to_string(want) + ", got " +
           std::to_string(item.arr().size()) + ")");
    }
    for (size_t i = 0; i < want; ++i) s.set(n.a->items[i]->text, item.arr()[i]);
  };
  if (n.c) {  // for x in xs if cond
    Array kept;
    for (const Value& item : items) {
      count_iterations(1);
      Scope test_scope(&loop_scope);
      bind(test_scope, item);
      if (eval(*n.c, test_scope).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  const auto len = static_cast<int64_t>(items.size());
  bool iterated = false;
  for (int64_t i = 0; i < len; ++i) {
    count_iterations(1);
    Object loop;
    loop.items.reserve(10);
    loop.items.emplace_back("index", Value::integer(i + 1));
    loop.items.emplace_back("index0", Value::integer(i));
    loop.items.emplace_back("revindex", Value::integer(len - i));
    loop.items.emplace_back("revindex0", Value::integer(len - i - 1));
    loop.items.emplace_back("first", Value::boolean(i == 0));
    loop.items.emplace_back("last", Value::boolean(i == len - 1));
    loop.items.emplace_back("length", Value::integer(len));
    loop.items.emplace_back("previtem",
                            i > 0 ? items[i - 1] : undefined_named("'loop.previtem' is undefined"));
    loop.items.emplace_back(
        "nextitem", i + 1 < len ? items[i + 1] : undefined_named("'loop.nextitem' is undefined"));
    loop.items.emplace_back("cycle", Value::function("cycle", [i](Interpreter&, CallArgs& a) {
                              if (a.args.empty()) fail("no items for cycling given");
                              return a.args[static_cast<size_t>(i) % a.args.size()];
                            }));
    loop_scope.set("loop", Value::object(std::move(loop)));
    bind(loop_scope, items[i]);
    iterated = true;
    const Flow f = exec_block(n.body, loop_scope, out);
    if (f == Flow::kBreak) break;
  }
  if (!iterated) exec_block(n.alt, loop_scope, out);
  return Flow::kNormal;
}

void Interpreter::exec_set(const Node& n, Scope& scope) {
  Value rhs;
  if (n.b) {
    rhs = eval(*n.b, scope);
  } else {
    std::string captured;
    exec_block(n.body, scope, captured);
    rhs = Value::string(std::move(captured));
  }
  const Node& t = *n.a;
  if (t.kind == NodeKind::kIdentifier) {
    scope.set(t.text, std::move(rhs));
  } else if (t.kind == NodeKind::kTuple) {
    if (!rhs.is_array()) fail(std::string("cannot unpack non-iterable ") + rhs.type_name());
    if (rhs.arr().size() != t.items.size()) {
      fail(std::string("too ") + (rhs.arr().size() < t.items.size() ? "few" : "many") +
           " values to unpack in set");
    }
    for (size_t i = 0; i < t.items.size(); ++i) scope.set(t.items[i]->text, rhs.arr()[i]);
  } else {  // member: namespace attribute
    const Value obj = eval(*t.a, scope);
    if (obj.kind() != Kind::kNamespace) {
      fail("cannot assign attribute on non-namespace object (use namespace())");
    }
    obj.obj().set(t.text, std::move(rhs));
  }
}

void Interpreter::bind_macro_args(const NodeList& params, CallArgs& args, Scope& scope) {
  std::vector<const Node*> pending;
  std::vector<std::pair<std::string, Value>> kwargs = std::move(args.kwargs);
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = *params[i];
    const std::string& name = p.text;
    if (i < args.args.size()) {
      scope.set(name, args.args[i]);
      continue;
    }
    bool found = false;
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      if (it->first == name) {
        scope.set(name, std::move(it->second));
        kwargs.erase(it);
        found = true;
        break;
      }
    }
    if (found) continue;
    scope.set(name, undefined_named("'" + name + "' is undefined"));
    if (p.kind == NodeKind::kKwarg) pending.push_back(&p);
  }
  Array varargs;
  for (size_t i = params.size(); i < args.args.size(); ++i) varargs.push_back(args.args[i]);
  scope.set("varargs", Value::array(std::move(varargs)));
  Object kw;
  for (auto& [k, v] : kwargs) kw.set(k, std::move(v));
  scope.set("kwargs", Value::object(std::move(kw)));
  for (const Node* p : pending) scope.set(p->text, eval(*p->a, scope));
}

Value Interpreter::make_macro(const Node& n) {
  const Node* macro = &n;
  return Value::function(n.text, [this, macro](Interpreter&, CallArgs& args) {
    DepthGuard guard(&call_depth_, limits_.max_call_depth, "macro recursion too deep");
    Scope ms(current_scope_);
    bind_macro_args(macro->params, args, ms);
    std::string out;
    exec_block(macro->body, ms, out);
    return Value::string(std::move(out));
  });
}

Value Interpreter::call(const Value& fn, CallArgs& args, Scope& scope) {
  if (fn.kind() != Kind::kFunction) {
    if (fn.is_undefined()) fail_undefined(fn);
    fail(std::string("'") + fn.type_name() + "' object is not callable");
  }
  Scope* saved = current_scope_;
  current_scope_ = &scope;
  Value r = fn.fn().fn(*this, args);
  current_scope_ = saved;
  return r;
}

CallArgs Interpreter::eval_args(const NodeList& items, Scope& scope) {
  CallArgs a;
  for (const auto& it : items) {
    if (it->kind == NodeKind::kSpread) {
      Value v = eval(*it->a, scope);
      if (!v.is_array())
        fail(std::string("argument after * must be iterable, not ") + v.type_name());
      for (const Value& x : v.arr()) a.args.push_back(x);
    } else if (it->kind != NodeKind::kKwarg && it->kind != NodeKind::kKwSpread) {
      a.args.push_back(eval(*it, scope));
    }
  }
  for (const auto& it : items) {
    if (it->kind == NodeKind::kKwarg) {
      a.kwargs.emplace_back(it->text, eval(*it->a, scope));
    } else if (it->kind == NodeKind::kKwSpread) {
      Value v = eval(*it->a, scope);
      if (!v.is_object())
        fail(std::string("argument after ** must be a mapping, not ") + v.type_name());
      for (const auto& kv : v.obj().items) a.kwargs.push_back(kv);
    }
  }
  return a;
}

Value Interpreter::eval(const Node& n, Scope& scope) {
  step();
  DepthGuard guard(&depth_, 400, "template evaluation nested too deeply");
  try {
    switch (n.kind) {
      case NodeKind::kLiteral:
        return n.value;
      case NodeKind::kIdentifier: {
        const Value* v = scope.lookup(n.text);
        return v ? *v : undefined_named("'" + n.text + "' is undefined");
      }
      case NodeKind::kList:
      case NodeKind::kTuple: {
        Array a;
        a.reserve(n.items.size());
        for (const auto& i : n.items) a.push_back(eval(*i, scope));
        return Value::array(std::move(a), n.kind == NodeKind::kTuple);
      }
      case NodeKind::kDict: {
        Object o;
        for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
          Value k = eval(*n.items[i], scope);
          if (!k.is_string()) fail(std::string("dict keys must be strings, got ") + k.type_name());
          o.set(k.str(), eval(*n.items[i + 1], scope));
        }
        return Value::object(std::move(o));
      }
      case NodeKind::kMember:
        return eval_member(n, scope);
      case NodeKind::kCall:
        return eval_call(n, scope);
      case NodeKind::kBinary:
        return eval_binary(n, scope);
      case NodeKind::kUnary: {
        Value v = eval(*n.a, scope);
        if (n.text == "not") return Value::boolean(!v.truthy());
        const bool neg = n.text == "-";
        if (v.kind() == Kind::kFloat) return Value::floating(neg ? -v.as_number() : v.as_number());
        if (is_intlike(v)) {
          const int64_t x = int_of(v);
          if (neg && x == INT64_MIN) fail("integer overflow");
          return Value::integer(neg ? -x : x);
        }
        if (v.is_undefined()) fail_undefined(v);
        fail(std::string("bad operand type for unary ") + n.text + ": '" + v.type_name() + "'");
      }
      case NodeKind::kFilter: {
        Value v = eval(*n.a, scope);
        CallArgs args = eval_args(n.items, scope);
        return apply_filter(*this, n.text, v, args);
      }
      case NodeKind::kTest: {
        Value v = eval(*n.a, scope);
        CallArgs args = eval_args(n.items, scope);
        const bool r = apply_test(*this, n.text, v, args);
        return Value::boolean(n.flag ? !r : r);
      }
      case NodeKind::kTernary: {
        if (eval(*n.a, scope).truthy()) return eval(*n.b, scope);
        if (n.c) return eval(*n.c, scope);
        return undefined_named("the inline if expression is false and has no else");
      }
      case NodeKind::kKwarg:
      case NodeKind::kSpread:
      case NodeKind::kKwSpread:
        fail("argument syntax outside a call");
      default:
        fail("statement used as an expression");
    }
  } catch (JinjaError& e) {
    rethrow_at(e, n.offset);
  }
}

Value Interpreter::eval_member(const Node& n, Scope& scope) {
  Value obj = eval(*n.a, scope);
  if (!n.flag) return get_attr(*this, obj, n.text);
  if (n.b->kind == NodeKind::kSlice) {
    const Node& s = *n.b;
    Value start = s.a ? eval(*s.a, scope) : Value::none();
    Value stop = s.b ? eval(*s.b, scope) : Value::none();
    Value stp = s.c ? eval(*s.c, scope) : Value::none();
    return slice_value(*this, obj, start, stop, stp);
  }
  return get_item(*this, obj, eval(*n.b, scope));
}

Value Interpreter::eval_call(const Node& n, Scope& scope) {
  CallArgs args = eval_args(n.items, scope);
  Value fn = eval(*n.a, scope);
  return call(fn, args, scope);
}

Value Interpreter::eval_binary(const Node& n, Scope& scope) {
  const std::string& op = n.text;
  Value l = eval(*n.a, scope);
  if (op == "and") return l.truthy() ? eval(*n.b, scope) : l;
  if (op == "or") return l.truthy() ? l : eval(*n.b, scope);
  Value r = eval(*n.b, scope);
  if (op == "==") return Value::boolean(equals(l, r));
  if (op == "!=") return Value::boolean(!equals(l, r));
  if (op == "~") {
    std::string s = to_str(l);
    s += to_str(r);
    check_string_size(s.size());
    return Value::string(std::move(s));
  }
  if (op == "in" || op == "not in") {
    bool found = false;
    if (r.is_string()) {
      if (!l.is_string()) {
        if (l.is_undefined()) fail_undefined(l);
        fail(std::string("'in <string>' requires string as left operand, not ") + l.type_name());
      }
      found = r.str().find(l.str()) != std::string::npos;
    } else if (r.is_array()) {
      for (const Value& x : r.arr()) {
        if (equals(x, l)) {
          found = true;
          break;
        }
      }
    } else if (r.is_object() || r.kind() == Kind::kNamespace) {
      found = l.is_string() && r.obj().find(l.str()) != nullptr;
    } else if (!r.is_undefined()) {
      fail(std::string("argument of type '") + r.type_name() + "' is not iterable");
    }
    return Value::boolean(op == "in" ? found : !found);
  }
  if (l.is_undefined()) fail_undefined(l);
  if (r.is_undefined()) fail_undefined(r);
  const bool ln = l.is_number() || l.kind() == Kind::kBool;
  const bool rn = r.is_number() || r.kind() == Kind::kBool;
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    const int c = compare(l, r);
    if (op == "<") return Value::boolean(c < 0);
    if (op == ">") return Value::boolean(c > 0);
    if (op == "<=") return Value::boolean(c <= 0);
    return Value::boolean(c >= 0);
  }
  if (ln && rn) {
    const bool ints = is_intlike(l) && is_intlike(r);
    const int64_t a = ints ? int_of(l) : 0, b = ints ? int_of(r) : 0;
    const double x = num_of(l), y = num_of(r);
    int64_t res = 0;
    if (op == "+") {
      return ints ? Value::integer((check_overflow(__builtin_add_overflow(a, b, &res)), res))
                  : Value::floating(x + y);
    }
    if (op == "-") {
      return ints ? Value::integer((check_overflow(__builtin_sub_overflow(a, b, &res)), res))
                  : Value::floating(x - y);
    }
    if (op == "*") {
      return ints ? Value::integer((check_overflow(__builtin_mul_overflow(a, b, &res)), res))
                  : Value::floating(x * y);
    }
    if (op == "/") {
      if (y == 0) fail("division by zero");
      return Value::floating(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0) fail(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
      if (ints) {
        if (a == INT64_MIN && b == -1) fail("integer overflow");
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
          --q;
          m += b;
        }
        return Value::integer(op == "//" ? q : m);
      }
      const double q = std::floor(x / y);
      return Value::floating(op == "//" ? q : x - q * y);
    }
    if (op == "**") {
      if (ints && b >= 0) {
        int64_t acc = 1, base = a, e = b;
        while (e > 0) {
          if (e & 1) acc = (check_overflow(__builtin_mul_overflow(acc, base, &res)), res);
          e >>= 1;
          if (e > 0) base = (check_overflow(__builtin_mul_overflow(base, base, &res)), res);
        }
        return Value::integer(acc);
      }
      if (x == 0 && y < 0) fail("0.0 cannot be raised to a negative power");
      const double p = std::pow(x, y);
      if (!std::isfinite(p)) fail("exponentiation result is not a finite real number");
      return Value::floating(p);
    }
  }
  if (op == "+") {
    if (l.is_string() && r.is_string()) {
      check_string_size(l.str().size() + r.str().size());
      return Value::string(l.str() + r.str());
    }
    if (l.is_array() && r.is_array()) {
      check_list_size(l.arr().size() + r.arr().size());
      Array a = l.arr();
      a.insert(a.end(), r.arr().begin(), r.arr().end());
      return Value::array(std::move(a));
    }
    // @huggingface/jinja concatenates a string with a number; Python would raise.
    if ((l.is_string() && r.is_number()) || (l.is_number() && r.is_string())) {
      std::string s = to_str(l) + to_str(r);
      check_string_size(s.size());
      return Value::string(std::move(s));
    }
  }
  if (op == "*" && (l.is_string() || l.is_array()) && is_intlike(r)) {
    const int64_t k = std::max<int64_t>(0, int_of(r));
    if (l.is_string()) {
      if (!l.str().empty() && static_cast<uint64_t>(k) > limits_.max_output_bytes)
        check_string_size(SIZE_MAX);
      check_string_size(l.str().size() * static_cast<size_t>(k));
      std::string s;
      for (int64_t i = 0; i < k; ++i) s += l.str();
      return Value::string(std::move(s));
    }
    if (!l.arr().empty() && static_cast<uint64_t>(k) > limits_.max_list_items)
      check_list_size(SIZE_MAX);
    check_list_size(l.arr().size() * static_cast<size_t>(k));
    Array a;
    for (int64_t i = 0; i < k; ++i) a.insert(a.end(), l.arr().begin(), l.arr().end());
    return Value::array(std::move(a));
  }
  fail("unsupported operand type(s) for " + op + ": '" + l.type_name() + "' and '" + r.type_name() +
       "'");
}

}  // namespace moe::text::jinja
