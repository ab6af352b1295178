// Runtime values of the Jinja engine: Python-like undefined/None/bool/int/float/str/list/dict plus
// namespace and callable. Lists and dicts have reference semantics (shared), like Python objects.
// Errors inside the engine are thrown as JinjaError and become a Status at Template::render.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace moe::text::jinja {

class Interpreter;
class Value;
struct Object;
using Array = std::vector<Value>;

// An engine error: a message and, once known, the template line/column it happened at.
class JinjaError : public std::runtime_error {
 public:
  explicit JinjaError(const std::string& msg) : std::runtime_error(msg) {}
  bool has_offset = false;
  uint32_t offset = 0;  // byte offset in the template source, once known
};
[[noreturn]] void fail(const std::string& msg);

// Arguments of a call: positional values then keyword values in call order.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
  // The positional argument `i`, else the keyword `name`, else nullptr.
  const Value* get(size_t i, std::string_view name) const;
};

using NativeFunction = std::function<Value(Interpreter&, CallArgs&)>;
struct Function {
  std::string name;
  NativeFunction fn;
};

enum class Kind {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kArray,
  kObject,
  kNamespace,
  kFunction
};

class Value {
 public:
  Value() = default;  // undefined
  // Undefined remembering what was missing ("'x' is undefined"), for error messages.
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double f);
  static Value string(std::string s);
  static Value array(Array a = {}, bool tuple = false);
  static Value object(Object o);
  static Value ns(Object o);  // namespace(): attribute-assignable
  static Value function(std::string name, NativeFunction fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_tuple() const { return tuple_; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_number() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string& str() const { return s_; }  // string value, or an undefined's hint
  Array& arr() const { return *a_; }
  Object& obj() const { return *o_; }  // kObject and kNamespace
  const Function& fn() const { return *fn_; }

  bool truthy() const;
  // Python type name for messages: 'str', 'int', 'list', 'dict', 'NoneType', 'undefined'...
  const char* type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool tuple_ = false;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<Array> a_;
  std::shared_ptr<Object> o_;
  std::shared_ptr<Function> fn_;
};

// Insertion-ordered string-keyed map (dict order as in Python and JSON input).
struct Object {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value v);
};

// Python repr() of a float: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string float_repr(double f);

// What `{{ v }}` prints: strings as-is, undefined as "", None/True/False Python-style, numbers
// as Python prints them; lists and dicts as @huggingface/jinja prints them (JSON with ", "/": ").
std::string to_str(const Value& v);

struct JsonOptions {
  int indent = -1;  // < 0: one line; else newline + indent spaces per level
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_sep = ", ";  // Python json.dumps defaults (", " and ","  when indenting)
  std::string key_sep = ": ";
};
// Python json.dumps as transformers' tojson calls it (ensure_ascii=False by default).
std::string to_json(const Value& v, const JsonOptions& opt);
void append_json_string(std::string& out, std::string_view s, bool ensure_ascii);

// JSON input (template context) -> values. Depth beyond kMaxValueDepth fails.
Value from_json(const nlohmann::ordered_json& j);

// Python ==; deep for lists and dicts.
bool equals(const Value& a, const Value& b);
// Ordering for <, sort and dictsort: numbers (and bools) with numbers, strings with strings
// (optionally case-folded), lists element-wise; anything else fails.
int compare(const Value& a, const Value& b, bool case_sensitive = true);

constexpr int kMaxValueDepth = 256;

}  // namespace moe::text::jinja
