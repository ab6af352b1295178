// Runtime values of the Jinja engine (see jinja_value.h).
#include "text/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "text/jinja_unicode.h"

namespace moe::text::jinja {

void fail(const std::string& msg) { throw JinjaError(msg); }

const Value* CallArgs::get(size_t i, std::string_view name) const {
  if (i < args.size()) return &args[i];
  for (const auto& [k, v] : kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
Value Value::floating(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = std::move(s);
  return v;
}
Value Value::array(Array a, bool tuple) {
  Value v;
  v.kind_ = Kind::kArray;
  v.tuple_ = tuple;
  v.a_ = std::make_shared<Array>(std::move(a));
  return v;
}
Value Value::object(Object o) {
  Value v;
  v.kind_ = Kind::kObject;
  v.o_ = std::make_shared<Object>(std::move(o));
  return v;
}
Value Value::ns(Object o) {
  Value v = object(std::move(o));
  v.kind_ = Kind::kNamespace;
  return v;
}
Value Value::function(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.fn_ = std::make_shared<Function>(Function{std::move(name), std::move(fn)});
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0;
    case Kind::kString:
      return !s_.empty();
    case Kind::kArray:
      return !a_->empty();
    case Kind::kObject:
      return !o_->items.empty();
    case Kind::kNamespace:
    case Kind::kFunction:
      return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kArray:
      return tuple_ ? "tuple" : "list";
    case Kind::kObject:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kFunction:
      return "function";
  }
  return "?";
}

const Value* Object::find(std::string_view key) const {
  for (const auto& kv : items) {
    if (kv.first == key) return &kv.second;
  }
  return nullptr;
}
Value* Object::find(std::string_view key) {
  for (auto& kv : items) {
    if (kv.first == key) return &kv.second;
  }
  return nullptr;
}
void Object::set(std::string key, Value v) {
  if (Value* old = find(key)) {
    *old = std::move(v);
  } else {
    items.emplace_back(std::move(key), std::move(v));
  }
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (f == 0) return std::signbit(f) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // e.g. "-1.2345e+03"
  const size_t epos = sci.find('e');
  const int exp = std::stoi(sci.substr(epos + 1));
  std::string mant = sci.substr(0, epos);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char e[16];
  std::snprintf(e, sizeof(e), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + e;
}

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[16];
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    if (!ensure_ascii || c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t len = 1;
    uint32_t cp = decode_utf8(s, i, &len);
    i += len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
    } else {
      std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
    }
    out += buf;
  }
  out += '"';
}

namespace {

void check_depth(int depth) {
  if (depth > kMaxValueDepth) fail("value nested deeper than 256 levels (recursive structure?)");
}

std::string json_number(const Value& v) {
  if (v.kind() == Kind::kInt) return std::to_string(v.as_int());
  const double f = v.as_number();
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
  return float_repr(f);
}

// `undefined_null`: tojson writes undefined as null; printing a container writes "undefined"
// (what @huggingface/jinja prints).
void write_json(std::string& out, const Value& v, const JsonOptions& opt, int depth,
                bool undefined_null) {
  check_depth(depth);
  switch (v.kind()) {
    case Kind::kUndefined:
      out += undefined_null ? "null" : "undefined";
      return;
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Kind::kInt:
    case Kind::kFloat:
      out += json_number(v);
      return;
    case Kind::kString:
      append_json_string(out, v.str(), opt.ensure_ascii);
      return;
    case Kind::kFunction:
      fail("Object of type function is not JSON serializable");
    case Kind::kArray:
    case Kind::kObject:
    case Kind::kNamespace:
      break;
  }
  const bool indent = opt.indent > 0;
  const std::string base = "\n" + std::string(indent ? opt.indent * depth : 0, ' ');
  const std::string child = base + std::string(indent ? opt.indent : 0, ' ');
  if (v.is_array()) {
    const Array& a = v.arr();
    out += '[';
    for (size_t i = 0; i < a.size(); ++i) {
      if (i > 0) out += opt.item_sep;
      if (indent) out += child;
      write_json(out, a[i], opt, depth + 1, undefined_null);
    }
    if (indent && !a.empty()) out += base;
    out += ']';
    return;
  }
  std::vector<const std::pair<std::string, Value>*> items;
  for (const auto& kv : v.obj().items) items.push_back(&kv);
  if (opt.sort_keys) {
    std::stable_sort(items.begin(), items.end(),
                     [](const auto* a, const auto* b) { return a->first < b->first; });
  }
  out += '{';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += opt.item_sep;
    if (indent) out += child;
    append_json_string(out, items[i]->first, opt.ensure_ascii);
    out += opt.key_sep;
    write_json(out, items[i]->second, opt, depth + 1, undefined_null);
  }
  if (indent && !items.empty()) out += base;
  out += '}';
}

Value from_json_depth(const nlohmann::ordered_json& j, int depth) {
  check_depth(depth);
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::floating(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::floating(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      a.reserve(j.size());
      for (const auto& e : j) a.push_back(from_json_depth(e, depth + 1));
      return Value::array(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      o.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        o.items.emplace_back(it.key(), from_json_depth(it.value(), depth + 1));
      }
      return Value::object(std::move(o));
    }
    default:
      return Value::none();  // binary / discarded: not produced by the JSON parser
  }
}

bool equals_depth(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  const bool an = a.is_number() || a.kind() == Kind::kBool;
  const bool bn = b.is_number() || b.kind() == Kind::kBool;
  if (an && bn) {
    auto num = [](const Value& v) {
      return v.kind() == Kind::kBool ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
    };
    if (a.kind() == Kind::kInt && b.kind() == Kind::kInt) return a.as_int() == b.as_int();
    return num(a) == num(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kArray: {
      if (a.arr().size() != b.arr().size()) return false;
      for (size_t i = 0; i < a.arr().size(); ++i) {
        if (!equals_depth(a.arr()[i], b.arr()[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kObject: {
      if (a.obj().items.size() != b.obj().items.size()) return false;
      for (const auto& [k, v] : a.obj().items) {
        const Value* o = b.obj().find(k);
        if (o == nullptr || !equals_depth(v, *o, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kNamespace:
      return &a.obj() == &b.obj();
    case Kind::kFunction:
      return &a.fn() == &b.fn();
    default:
      return false;
  }
}

}  // namespace

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Kind::kInt:
      return std::to_string(v.as_int());
    case Kind::kFloat:
      return float_repr(v.as_number());
    case Kind::kString:
      return v.str();
    case Kind::kFunction:
      return "<function " + v.fn().name + ">";
    default: {
      std::string out;
      write_json(out, v, JsonOptions{}, 0, /*undefined_null=*/false);
      return out;
    }
  }
}

std::string to_json(const Value& v, const JsonOptions& opt) {
  std::string out;
  write_json(out, v, opt, 0, /*undefined_null=*/true);
  return out;
}

Value from_json(const nlohmann::ordered_json& j) { return from_json_depth(j, 0); }

bool equals(const Value& a, const Value& b) { return equals_depth(a, b, 0); }

int compare(const Value& a, const Value& b, bool case_sensitive) {
  const bool an = a.is_number() || a.kind() == Kind::kBool;
  const bool bn = b.is_number() || b.kind() == Kind::kBool;
  if (an && bn) {
    if (a.kind() == Kind::kInt && b.kind() == Kind::kInt) {
      return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
    auto num = [](const Value& v) {
      return v.kind() == Kind::kBool ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
    };
    const double x = num(a), y = num(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    if (case_sensitive) return a.str() < b.str() ? -1 : a.str() > b.str() ? 1 : 0;
    const std::string x = to_lower(a.str()), y = to_lower(b.str());
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_array() && b.is_array()) {
    const Array &x = a.arr(), &y = b.arr();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      const int c = compare(x[i], y[i], case_sensitive);
      if (c != 0) return c;
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  if (a.is_none() && b.is_none()) return 0;
  fail(std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
       b.type_name() + "'");
}

}  // namespace moe::text::jinja
