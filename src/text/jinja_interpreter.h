// Tree-walking Jinja interpreter. Sandboxed: it can only read the values it is given; no file,
// process or environment access; loop iterations, evaluation steps, call depth, string/list sizes
// and output bytes are bounded (RenderLimits) and exceeding them is an error, never a hang.
// Not thread-safe: one Interpreter per render.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/jinja_ast.h"
#include "text/jinja_value.h"

namespace moe::text::jinja {

struct RenderLimits {
  size_t max_output_bytes = 64u << 20;       // also the largest string value
  size_t max_list_items = 1u << 20;          // largest list built by +, *, range, split...
  uint64_t max_loop_iterations = 1'000'000;  // total over the render
  uint64_t max_steps = 10'000'000;           // evaluated nodes (bounds macro fan-out); ~1 s
  int max_call_depth = 100;                  // nested macro calls
};

// Variables of one scope; lookups walk to the parent (the caller's scope for macros, like
// @huggingface/jinja).
class Scope {
 public:
  explicit Scope(Scope* parent = nullptr) : parent_(parent) {}
  const Value* lookup(std::string_view name) const;
  void set(std::string_view name, Value v);

 private:
  Scope* parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}

  // Renders `body` into `out`. Throws JinjaError (with line/column offset set) on failure.
  void render(const NodeList& body, Scope& globals, std::string& out);

  Value eval(const Node& n, Scope& scope);
  // Calls a function value; the callee sees `scope` as its caller's scope.
  Value call(const Value& fn, CallArgs& args, Scope& scope);
  Scope& current_scope() { return *current_scope_; }

  // Limits, for builtins.
  const RenderLimits& limits() const { return limits_; }
  void check_string_size(size_t bytes) const;
  void check_list_size(size_t items) const;
  void count_iterations(uint64_t n);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Flow exec_block(const NodeList& body, Scope& scope, std::string& out);
  Flow exec(const Node& n, Scope& scope, std::string& out);
  Flow exec_for(const Node& n, Scope& scope, std::string& out);
  void exec_set(const Node& n, Scope& scope);
  Value make_macro(const Node& n);
  void bind_macro_args(const NodeList& params, CallArgs& args, Scope& scope);
  Value eval_binary(const Node& n, Scope& scope);
  Value eval_member(const Node& n, Scope& scope);
  Value eval_call(const Node& n, Scope& scope);
  CallArgs eval_args(const NodeList& items, Scope& scope);
  void append(std::string& out, std::string_view s) const;
  void step();

  RenderLimits limits_;
  uint64_t steps_ = 0;
  uint64_t iterations_ = 0;
  int depth_ = 0;
  int call_depth_ = 0;
  Scope* current_scope_ = nullptr;
};

// Builtins (jinja_filters.cc, jinja_methods.cc).
Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args);
// `obj.name`: dict keys and safe methods, namespace attributes, string methods.
Value get_attr(Interpreter& in, const Value& obj, const std::string& name);
// `obj[key]`: list/string index, dict key (then attribute), namespace attribute.
Value get_item(Interpreter& in, const Value& obj, const Value& key);
Value slice_value(Interpreter& in, const Value& obj, const Value& start, const Value& stop,
                  const Value& step);
void install_globals(Scope& globals);
// The Python-ish undefined value, remembering what was missing for error messages.
Value undefined_named(std::string hint);
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace moe::text::jinja
