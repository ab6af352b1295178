// Attribute and item access, slicing, the methods of str/dict/list that templates call, and the
// global functions (range, namespace, dict, raise_exception, strftime_now). Mutating methods
// (list.append, dict.update, ...) are refused as transformers' ImmutableSandboxedEnvironment does.
#include <cmath>
#include <ctime>
#include <optional>

#include "text/jinja_interpreter.h"
#include "text/jinja_unicode.h"

namespace moe::text::jinja {
namespace {

const std::string& want_str(const Value* v, const char* what) {
  if (v == nullptr || !v->is_string()) {
    fail(std::string(what) + " must be a string" +
         (v ? std::string(", got ") + v->type_name() : std::string()));
  }
  return v->str();
}

int64_t want_int(const Value* v, const char* what, int64_t dflt) {
  if (v == nullptr || v->is_none()) return dflt;
  if (v->kind() == Kind::kInt) return v->as_int();
  if (v->kind() == Kind::kBool) return v->as_bool() ? 1 : 0;
  fail(std::string(what) + " must be an integer, got " + v->type_name());
}

Value split(Interpreter& in, const std::string& s, const Value* sep_v, int64_t maxsplit,
            bool right) {
  std::vector<std::string> parts;
  if (sep_v == nullptr || sep_v->is_none()) {
    // Runs of whitespace separate; no empty strings at the ends.
    const std::vector<size_t> offs = code_point_offsets(s);
    const size_t n = offs.size() - 1;
    std::vector<std::pair<size_t, size_t>> words;  // code point ranges
    size_t i = 0;
    size_t len = 1;
    while (i < n) {
      while (i < n && is_space(decode_utf8(s, offs[i], &len))) ++i;
      if (i >= n) break;
      size_t j = i;
      while (j < n && !is_space(decode_utf8(s, offs[j], &len))) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
      if (!right) {
        for (int64_t k = 0; k < maxsplit; ++k) {
          parts.push_back(
              s.substr(offs[words[k].first], offs[words[k].second] - offs[words[k].first]));
        }
        std::string rest = s.substr(offs[words[maxsplit].first]);
        parts.push_back(std::move(rest));
      } else {
        const size_t first_kept = words.size() - maxsplit;
        parts.push_back(s.substr(0, offs[words[first_kept - 1].second]));
        for (size_t k = first_kept; k < words.size(); ++k) {
          parts.push_back(
              s.substr(offs[words[k].first], offs[words[k].second] - offs[words[k].first]));
        }
      }
    } else {
      for (auto [a, b] : words) parts.push_back(s.substr(offs[a], offs[b] - offs[a]));
    }
  } else {
    const std::string& sep = want_str(sep_v, "sep");
    if (sep.empty()) fail("empty separator");
    std::vector<size_t> hits;
    size_t p = s.find(sep);
    while (p != std::string::npos) {
      hits.push_back(p);
      p = s.find(sep, p + sep.size());
    }
    if (maxsplit >= 0 && static_cast<int64_t>(hits.size()) > maxsplit) {
      if (right) {
        hits.erase(hits.begin(), hits.end() - maxsplit);
      } else {
        hits.resize(maxsplit);
      }
    }
    size_t start = 0;
    for (size_t h : hits) {
      parts.push_back(s.substr(start, h - start));
      start = h + sep.size();
    }
    parts.push_back(s.substr(start));
  }
  in.check_list_size(parts.size());
  Array out;
  out.reserve(parts.size());
  for (auto& x : parts) out.push_back(Value::string(std::move(x)));
  return Value::array(std::move(out));
}

std::string replace(Interpreter& in, const std::string& s, const std::string& from,
                    const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between code points (and at both ends)
    const std::vector<size_t> offs = code_point_offsets(s);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < offs.size() || i == 0; ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i + 1 < offs.size()) out.append(s, offs[i], offs[i + 1] - offs[i]);
      in.check_string_size(out.size());
      if (i + 1 >= offs.size()) break;
    }
    if (offs.size() > 1 && (count < 0 || done < count)) out += to;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  size_t p = s.find(from);
  while (p != std::string::npos && (count < 0 || done < count)) {
    out.append(s, start, p - start);
    out += to;
    in.check_string_size(out.size());
    start = p + from.size();
    ++done;
    p = s.find(from, start);
  }
  out.append(s, start, std::string::npos);
  in.check_string_size(out.size());
  return out;
}

bool affix_match(const std::string& s, const Value* arg, bool prefix) {
  auto one = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0
                  : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (arg != nullptr && arg->is_array()) {
    for (const Value& v : arg->arr()) {
      if (one(want_str(&v, prefix ? "startswith() tuple items" : "endswith() tuple items")))
        return true;
    }
    return false;
  }
  return one(want_str(arg, prefix ? "startswith() argument" : "endswith() argument"));
}

// Python str.format with {} / {0} / {name} fields (no format specs).
std::string format(const std::string& f, CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t close = f.find('}', i);
      if (close == std::string::npos) fail("Single '{' encountered in format string");
      const std::string field = f.substr(i + 1, close - i - 1);
      const Value* v = nullptr;
      if (field.empty()) {
        v = auto_index < a.args.size() ? &a.args[auto_index] : nullptr;
        ++auto_index;
      } else if (field.find_first_not_of("0123456789") == std::string::npos) {
        const size_t k = std::stoul(field);
        v = k < a.args.size() ? &a.args[k] : nullptr;
      } else {
        v = a.get(SIZE_MAX, field);
      }
      if (v == nullptr) fail("format(): no argument for field {" + field + "}");
      out += to_str(*v);
      i = close;
    } else if (c == '}') {
      fail("Single '}' encountered in format string");
    } else {
      out += c;
    }
  }
  return out;
}

Value string_method(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  const Value* a0 = a.get(0, "");
  auto chars_arg = [&]() -> const std::string* {
    if (a0 == nullptr || a0->is_none()) return nullptr;
    return &want_str(a0, "strip chars");
  };
  if (name == "upper") return Value::string(to_upper(s));
  if (name == "lower") return Value::string(to_lower(s));
  if (name == "title") return Value::string(title_case(s));
  if (name == "capitalize") return Value::string(capitalize(s));
  if (name == "strip") return Value::string(strip(s, chars_arg(), true, true));
  if (name == "lstrip") return Value::string(strip(s, chars_arg(), true, false));
  if (name == "rstrip") return Value::string(strip(s, chars_arg(), false, true));
  if (name == "startswith") return Value::boolean(affix_match(s, a0, true));
  if (name == "endswith") return Value::boolean(affix_match(s, a0, false));
  if (name == "split" || name == "rsplit") {
    return split(in, s, a.get(0, "sep"), want_int(a.get(1, "maxsplit"), "maxsplit", -1),
                 name == "rsplit");
  }
  if (name == "splitlines") {
    Array out;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\n' || s[i] == '\r') {
        out.push_back(Value::string(s.substr(start, i - start)));
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < s.size()) out.push_back(Value::string(s.substr(start)));
    return Value::array(std::move(out));
  }
  if (name == "replace") {
    return Value::string(replace(in, s, want_str(a.get(0, "old"), "replace() old"),
                                 want_str(a.get(1, "new"), "replace() new"),
                                 want_int(a.get(2, "count"), "count", -1)));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const std::string& sub = want_str(a0, "substring");
    const size_t p = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (p == std::string::npos) {
      if (name == "index" || name == "rindex") fail("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, p))));
  }
  if (name == "count") {
    const std::string& sub = want_str(a0, "substring");
    if (sub.empty()) return Value::integer(static_cast<int64_t>(code_point_count(s) + 1));
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Value::integer(n);
  }
  if (name == "join") {
    if (a0 == nullptr || !a0->is_array()) fail("join() needs a list of strings");
    std::string out;
    for (size_t i = 0; i < a0->arr().size(); ++i) {
      if (i > 0) out += s;
      out += want_str(&a0->arr()[i], "join() item");
      in.check_string_size(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string& x = want_str(a0, "affix");
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0)
      return Value::string(s.substr(x.size()));
    if (name == "removesuffix" && x.size() <= s.size() &&
        s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return Value::string(s.substr(0, s.size() - x.size()));
    }
    return Value::string(s);
  }
  if (name == "format") {
    std::string r = format(s, a);
    in.check_string_size(r.size());
    return Value::string(std::move(r));
  }
  auto all_cps = [&](auto pred) {
    if (s.empty()) return false;
    size_t i = 0, len = 1;
    while (i < s.size()) {
      if (!pred(decode_utf8(s, i, &len))) return false;
      i += len;
    }
    return true;
  };
  if (name == "isdigit")
    return Value::boolean(all_cps([](uint32_t c) { return c >= '0' && c <= '9'; }));
  if (name == "isspace") return Value::boolean(all_cps(is_space));
  if (name == "isalpha") {
    return Value::boolean(
        all_cps([](uint32_t c) { return is_alnum_cp(c) && !(c >= '0' && c <= '9'); }));
  }
  if (name == "isalnum") return Value::boolean(all_cps(is_alnum_cp));
  if (name == "islower") return Value::boolean(to_lower(s) == s && to_upper(s) != s);
  if (name == "isupper") return Value::boolean(to_upper(s) == s && to_lower(s) != s);
  fail("'str' object has no attribute '" + name + "'");
}

bool is_string_method(const std::string& n) {
  static const char* const kNames[] = {
      "upper",   "lower",        "title",        "capitalize", "strip",   "lstrip",
      "rstrip",  "startswith",   "endswith",     "split",      "rsplit",  "splitlines",
      "replace", "find",         "rfind",        "index",      "rindex",  "count",
      "join",    "removeprefix", "removesuffix", "format",     "isdigit", "isspace",
      "isalpha", "isalnum",      "islower",      "isupper"};
  for (const char* k : kNames) {
    if (n == k) return true;
  }
  return false;
}

bool is_unsafe_method(const Value& obj, const std::string& n) {
  if (obj.is_array()) {
    return n == "append" || n == "pop" || n == "insert" || n == "extend" || n == "remove" ||
           n == "clear" || n == "sort" || n == "reverse";
  }
  return n == "update" || n == "pop" || n == "popitem" || n == "setdefault" || n == "clear";
}

Value unsafe_method(const Value& obj, const std::string& name) {
  const std::string msg = "access to attribute '" + name + "' of '" + obj.type_name() +
                          "' object is unsafe (templates are rendered read-only)";
  return Value::function(name, [msg](Interpreter&, CallArgs&) -> Value { fail(msg); });
}

Value dict_method(const Value& obj, const std::string& name) {
  return Value::function(name, [obj, name](Interpreter&, CallArgs& a) {
    const Object& o = obj.obj();
    if (name == "get") {
      const Value* k = a.get(0, "key");
      if (k == nullptr) fail("get() takes at least 1 argument");
      const Value* v = k->is_string() ? o.find(k->str()) : nullptr;
      if (v != nullptr) return *v;
      const Value* d = a.get(1, "default");
      return d ? *d : Value::none();
    }
    Array out;
    out.reserve(o.items.size());
    for (const auto& [k, v] : o.items) {
      if (name == "keys") {
        out.push_back(Value::string(k));
      } else if (name == "values") {
        out.push_back(v);
      } else {
        out.push_back(Value::array({Value::string(k), v}, /*tuple=*/true));
      }
    }
    return Value::array(std::move(out));
  });
}

}  // namespace

Value get_attr(Interpreter& in, const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      fail_undefined(obj);
    case Kind::kObject: {
      // Jinja2 looks up attributes (dict methods) before keys for `d.name`.
      if (name == "items" || name == "keys" || name == "values" || name == "get") {
        return dict_method(obj, name);
      }
      if (const Value* v = obj.obj().find(name)) return *v;
      if (is_unsafe_method(obj, name)) return unsafe_method(obj, name);
      return undefined_named("'dict object' has no attribute '" + name + "'");
    }
    case Kind::kNamespace: {
      if (const Value* v = obj.obj().find(name)) return *v;
      return undefined_named("'Namespace' object has no attribute '" + name + "'");
    }
    case Kind::kString:
      if (is_string_method(name)) {
        const std::string s = obj.str();
        return Value::function(
            name, [s, name](Interpreter& i, CallArgs& a) { return string_method(i, s, name, a); });
      }
      break;
    case Kind::kArray:
      if (name == "count" || name == "index") {
        return Value::function(name, [obj, name](Interpreter&, CallArgs& a) {
          const Value* x = a.get(0, "value");
          if (x == nullptr) fail(name + "() takes exactly one argument");
          int64_t n = 0;
          for (size_t i = 0; i < obj.arr().size(); ++i) {
            if (equals(obj.arr()[i], *x)) {
              if (name == "index") return Value::integer(static_cast<int64_t>(i));
              ++n;
            }
          }
          if (name == "index") fail("value is not in list");
          return Value::integer(n);
        });
      }
      if (is_unsafe_method(obj, name)) return unsafe_method(obj, name);
      break;
    default:
      break;
  }
  (void)in;
  return undefined_named("'" + std::string(obj.type_name()) + " object' has no attribute '" + name +
                         "'");
}

Value get_item(Interpreter& in, const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if ((obj.is_array() || obj.is_string()) &&
      (key.kind() == Kind::kInt || key.kind() == Kind::kBool)) {
    int64_t i = key.kind() == Kind::kBool ? (key.as_bool() ? 1 : 0) : key.as_int();
    if (obj.is_array()) {
      const auto n = static_cast<int64_t>(obj.arr().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return undefined_named("list index out of range");
      return obj.arr()[static_cast<size_t>(i)];
    }
    const std::vector<size_t> offs = code_point_offsets(obj.str());
    const auto n = static_cast<int64_t>(offs.size() - 1);
    if (i < 0) i += n;
    if (i < 0 || i >= n) return undefined_named("string index out of range");
    return Value::string(obj.str().substr(offs[i], offs[i + 1] - offs[i]));
  }
  if (obj.is_object() || obj.kind() == Kind::kNamespace) {
    if (key.is_string()) {
      if (const Value* v = obj.obj().find(key.str())) return *v;
      if (obj.is_object()) return get_attr(in, obj, key.str());
    }
    return undefined_named("'dict object' has no attribute '" + to_str(key) + "'");
  }
  if (key.is_string()) return get_attr(in, obj, key.str());
  return undefined_named("'" + std::string(obj.type_name()) + " object' has no item '" +
                         to_str(key) + "'");
}

Value slice_value(Interpreter& in, const Value& obj, const Value& start_v, const Value& stop_v,
                  const Value& step_v) {
  if (!obj.is_array() && !obj.is_string()) {
    if (obj.is_undefined()) fail_undefined(obj);
    fail(std::string("'") + obj.type_name() + "' object is not subscriptable");
  }
  auto opt = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (v.kind() == Kind::kInt) return v.as_int();
    if (v.kind() == Kind::kBool) return v.as_bool() ? 1 : 0;
    fail(std::string("slice ") + what + " must be an integer or None");
  };
  const std::optional<int64_t> start = opt(start_v, "start"), stop = opt(stop_v, "stop");
  const int64_t step = opt(step_v, "step").value_or(1);
  if (step == 0) fail("slice step cannot be zero");
  std::vector<size_t> offs;
  int64_t n = 0;
  if (obj.is_array()) {
    n = static_cast<int64_t>(obj.arr().size());
  } else {
    offs = code_point_offsets(obj.str());
    n = static_cast<int64_t>(offs.size() - 1);
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t b = adjust(start, step < 0 ? n - 1 : 0);
  const int64_t e = adjust(stop, step < 0 ? -1 : n);
  std::vector<int64_t> idx;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) idx.push_back(i);
  if (obj.is_array()) {
    Array out;
    out.reserve(idx.size());
    for (int64_t i : idx) out.push_back(obj.arr()[static_cast<size_t>(i)]);
    return Value::array(std::move(out));
  }
  std::string out;
  for (int64_t i : idx) out.append(obj.str(), offs[i], offs[i + 1] - offs[i]);
  return Value::string(std::move(out));
}

void install_globals(Scope& g) {
  g.set("range", Value::function("range", [](Interpreter& in, CallArgs& a) {
          if (a.args.empty() || a.args.size() > 3) fail("range expected 1 to 3 integer arguments");
          int64_t start = 0, stop = 0, step = 1;
          if (a.args.size() == 1) {
            stop = want_int(&a.args[0], "range() argument", 0);
          } else {
            start = want_int(&a.args[0], "range() argument", 0);
            stop = want_int(&a.args[1], "range() argument", 0);
            if (a.args.size() == 3) step = want_int(&a.args[2], "range() argument", 1);
          }
          if (step == 0) fail("range() arg 3 must not be zero");
          const double count = std::max(0.0, std::ceil((static_cast<double>(stop) - start) / step));
          in.check_list_size(count > 1e18 ? SIZE_MAX : static_cast<size_t>(count));
          Array out;
          for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
            out.push_back(Value::integer(i));
          return Value::array(std::move(out));
        }));
  g.set("namespace", Value::function("namespace", [](Interpreter&, CallArgs& a) {
          Object o;
          if (a.args.size() > 1) fail("namespace expected at most 1 positional argument");
          if (a.args.size() == 1) {
            const Value& src = a.args[0];
            if (src.is_object()) {
              o = src.obj();
            } else if (src.is_array()) {
              for (const Value& pair : src.arr()) {
                if (!pair.is_array() || pair.arr().size() != 2 || !pair.arr()[0].is_string()) {
                  fail("namespace expected a dict or a list of [key, value] pairs");
                }
                o.set(pair.arr()[0].str(), pair.arr()[1]);
              }
            } else {
              fail(std::string("'") + src.type_name() + "' object is not iterable");
            }
          }
          for (auto& [k, v] : a.kwargs) o.set(k, v);
          return Value::ns(std::move(o));
        }));
  g.set("dict", Value::function("dict", [](Interpreter&, CallArgs& a) {
          Object o;
          if (!a.args.empty() && a.args[0].is_object()) o = a.args[0].obj();
          for (auto& [k, v] : a.kwargs) o.set(k, v);
          return Value::object(std::move(o));
        }));
  g.set("raise_exception",
        Value::function("raise_exception", [](Interpreter&, CallArgs& a) -> Value {
          throw JinjaError("template raised an exception: " +
                           (a.args.empty() ? std::string() : to_str(a.args[0])));
        }));
  g.set("strftime_now", Value::function("strftime_now", [](Interpreter&, CallArgs& a) {
          const std::string& f = want_str(a.get(0, "format"), "strftime_now() format");
          const std::time_t now = std::time(nullptr);
          std::tm tm{};
          localtime_r(&now, &tm);
          char buf[512];
          const size_t n = f.size() < 200 ? std::strftime(buf, sizeof(buf), f.c_str(), &tm) : 0;
          return Value::string(std::string(buf, n));
        }));
}

}  // namespace moe::text::jinja
