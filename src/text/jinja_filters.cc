// Filters (`x | name(args)`) and tests (`x is name(args)`) of the Jinja engine. Behaviour follows
// Jinja2 3.1 as transformers configures it; tojson is transformers' json.dumps(ensure_ascii=False).
#include <algorithm>
#include <cmath>

#include "text/jinja_interpreter.h"
#include "text/jinja_unicode.h"

namespace moe::text::jinja {
namespace {

bool flag_arg(const Value* v, bool dflt) { return v == nullptr ? dflt : v->truthy(); }

const std::string& str_arg(const Value* v, const char* what) {
  if (v == nullptr || !v->is_string()) fail(std::string(what) + " must be a string");
  return v->str();
}

// String view of an operand for string filters: undefined -> "", else str().
std::string as_text(const Value& v) { return v.is_undefined() ? std::string() : to_str(v); }

Array to_list(const Value& v, const char* filter) {
  switch (v.kind()) {
    case Kind::kArray:
      return v.arr();
    case Kind::kUndefined:
      return {};
    case Kind::kObject: {
      Array out;
      for (const auto& kv : v.obj().items) out.push_back(Value::string(kv.first));
      return out;
    }
    case Kind::kString: {
      Array out;
      const std::vector<size_t> offs = code_point_offsets(v.str());
      for (size_t i = 0; i + 1 < offs.size(); ++i) {
        out.push_back(Value::string(v.str().substr(offs[i], offs[i + 1] - offs[i])));
      }
      return out;
    }
    default:
      fail(std::string("filter '") + filter + "' needs a sequence, got " + v.type_name());
  }
}

// Jinja2 attribute paths: "a.b.0".
Value attribute_path(Interpreter& in, const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (cur.is_undefined()) return cur;
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos &&
        cur.is_array()) {
      cur = get_item(in, cur, Value::integer(std::stoll(part)));
    } else {
      cur = get_item(in, cur, Value::string(part));
    }
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Value tojson(const Value& v, CallArgs& a) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  JsonOptions opt;
  opt.ensure_ascii = flag_arg(a.get(0, "ensure_ascii"), false);
  const Value* indent = a.get(1, "indent");
  if (indent != nullptr && !indent->is_none()) {
    if (indent->kind() != Kind::kInt) fail("tojson indent must be an integer");
    opt.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), -1, 64));
    if (opt.indent > 0) opt.item_sep = ",";
  }
  const Value* seps = a.get(2, "separators");
  if (seps != nullptr && !seps->is_none()) {
    if (!seps->is_array() || seps->arr().size() != 2 || !seps->arr()[0].is_string() ||
        !seps->arr()[1].is_string()) {
      fail("tojson separators must be a pair of strings");
    }
    opt.item_sep = seps->arr()[0].str();
    opt.key_sep = seps->arr()[1].str();
  }
  opt.sort_keys = flag_arg(a.get(3, "sort_keys"), false);
  return Value::string(to_json(v, opt));
}

Value indent_filter(const Value& v, CallArgs& a) {
  const Value* w = a.get(0, "width");
  std::string pad(4, ' ');
  if (w != nullptr && w->is_string()) {
    pad = w->str();
  } else if (w != nullptr) {
    if (w->kind() != Kind::kInt) fail("indent width must be an integer or string");
    pad.assign(static_cast<size_t>(std::clamp<int64_t>(w->as_int(), 0, 256)), ' ');
  }
  const bool first = flag_arg(a.get(1, "first"), false);
  const bool blank = flag_arg(a.get(2, "blank"), false);
  const std::string s = as_text(v);
  std::string out;
  size_t start = 0;
  for (size_t line = 0;; ++line) {
    const size_t nl = s.find('\n', start);
    const std::string_view l(s.data() + start, (nl == std::string::npos ? s.size() : nl) - start);
    if ((line > 0 || first) && (blank || !l.empty())) out += pad;
    out += l;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return Value::string(std::move(out));
}

std::vector<Value> sorted(Interpreter& in, Array items, bool reverse, bool case_sensitive,
                          const Value* attribute) {
  auto key = [&](const Value& x) {
    if (attribute == nullptr || attribute->is_none()) return x;
    return attribute_path(in, x, to_str(*attribute));
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const int c = compare(key(x), key(y), case_sensitive);
    return reverse ? c > 0 : c < 0;
  });
  return items;
}

// select / reject / selectattr / rejectattr / map(filter).
Value filter_items(Interpreter& in, const std::string& name, const Value& v, CallArgs& a) {
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep_if = name == "select" || name == "selectattr";
  size_t argi = 0;
  std::string attr;
  if (by_attr) attr = str_arg(a.get(argi++, "attribute"), (name + " attribute").c_str());
  const Value* test = a.get(argi++, "");
  CallArgs test_args;
  for (size_t i = argi; i < a.args.size(); ++i) test_args.args.push_back(a.args[i]);
  Array out;
  for (const Value& item : to_list(v, name.c_str())) {
    in.count_iterations(1);
    const Value x = by_attr ? attribute_path(in, item, attr) : item;
    bool r;
    if (test == nullptr) {
      r = x.truthy();
    } else {
      CallArgs ta = test_args;
      r = apply_test(in, str_arg(test, "test name"), x, ta);
    }
    if (r == keep_if) out.push_back(item);
  }
  return Value::array(std::move(out));
}

}  // namespace

Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& a) {
  if (name == "safe" || name == "forceescape" || name == "e" || name == "escape") {
    if (name == "safe") return v;
    return Value::string(html_escape(as_text(v)));
  }
  if (name == "tojson") return tojson(v, a);
  if (name == "default" || name == "d") {
    const Value* d = a.get(0, "default_value");
    const bool boolean = flag_arg(a.get(1, "boolean"), false);
    if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value::string("");
    return v;
  }
  if (name == "length" || name == "count") {
    switch (v.kind()) {
      case Kind::kString:
        return Value::integer(static_cast<int64_t>(code_point_count(v.str())));
      case Kind::kArray:
        return Value::integer(static_cast<int64_t>(v.arr().size()));
      case Kind::kObject:
      case Kind::kNamespace:
        return Value::integer(static_cast<int64_t>(v.obj().items.size()));
      case Kind::kUndefined:
        return Value::integer(0);
      default:
        fail(std::string("object of type '") + v.type_name() + "' has no len()");
    }
  }
  if (name == "string") return Value::string(as_text(v));
  if (name == "list") return Value::array(to_list(v, "list"));
  if (name == "first" || name == "last") {
    Array l = to_list(v, name.c_str());
    if (l.empty()) return undefined_named("no first/last item of an empty sequence");
    return name == "first" ? l.front() : l.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      Array l = to_list(v, "reverse");
      std::string out;
      for (auto it = l.rbegin(); it != l.rend(); ++it) out += it->str();
      return Value::string(std::move(out));
    }
    Array l = to_list(v, "reverse");
    std::reverse(l.begin(), l.end());
    return Value::array(std::move(l));
  }
  if (name == "join") {
    const Value* sep = a.get(0, "d");
    const Value* attr = a.get(1, "attribute");
    std::string out;
    bool firstv = true;
    for (const Value& x : to_list(v, "join")) {
      if (!firstv) out += sep ? as_text(*sep) : "";
      firstv = false;
      out += as_text(attr && !attr->is_none() ? attribute_path(in, x, to_str(*attr)) : x);
      in.check_string_size(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "upper") return Value::string(to_upper(as_text(v)));
  if (name == "lower") return Value::string(to_lower(as_text(v)));
  if (name == "title") return Value::string(title_case(as_text(v)));
  if (name == "capitalize") return Value::string(capitalize(as_text(v)));
  if (name == "trim") {
    const Value* chars = a.get(0, "chars");
    const std::string* c = chars && !chars->is_none() ? &str_arg(chars, "trim chars") : nullptr;
    return Value::string(strip(as_text(v), c, true, true));
  }
  if (name == "replace") {
    CallArgs ma = a;
    return get_attr(in, Value::string(as_text(v)), "replace").fn().fn(in, ma);
  }
  if (name == "indent") return indent_filter(v, a);
  if (name == "int") {
    const Value* d = a.get(0, "default");
    const Value dflt = d ? *d : Value::integer(0);
    if (v.kind() == Kind::kInt) return v;
    if (v.kind() == Kind::kBool) return Value::integer(v.as_bool() ? 1 : 0);
    if (v.kind() == Kind::kFloat) {
      const double f = v.as_number();
      if (!std::isfinite(f) || std::fabs(f) > 9.2e18) return dflt;
      return Value::integer(static_cast<int64_t>(f));
    }
    if (v.is_string()) {
      const std::string s = strip(v.str(), nullptr, true, true);
      char* end = nullptr;
      errno = 0;
      const long long x = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return Value::integer(x);
      const double f = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(f) && std::fabs(f) < 9.2e18) {
        return Value::integer(static_cast<int64_t>(f));
      }
    }
    return dflt;
  }
  if (name == "float") {
    const Value* d = a.get(0, "default");
    const Value dflt = d ? *d : Value::floating(0.0);
    if (v.is_number()) return Value::floating(v.as_number());
    if (v.kind() == Kind::kBool) return Value::floating(v.as_bool() ? 1.0 : 0.0);
    if (v.is_string()) {
      const std::string s = strip(v.str(), nullptr, true, true);
      char* end = nullptr;
      const double f = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size()) return Value::floating(f);
    }
    return dflt;
  }
  if (name == "bool") return Value::boolean(v.truthy());
  if (name == "abs") {
    if (v.kind() == Kind::kInt) {
      if (v.as_int() == INT64_MIN) fail("integer overflow");
      return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.kind() == Kind::kFloat) return Value::floating(std::fabs(v.as_number()));
    fail(std::string("bad operand type for abs(): '") + v.type_name() + "'");
  }
  if (name == "round") {
    if (!v.is_number()) fail("round needs a number");
    const Value* p = a.get(0, "precision");
    const int64_t prec =
        p ? std::clamp<int64_t>(p->kind() == Kind::kInt ? p->as_int() : 0, -20, 20) : 0;
    const std::string method = a.get(1, "method") ? as_text(*a.get(1, "method")) : "common";
    const double m = std::pow(10.0, static_cast<double>(prec));
    const double x = v.as_number() * m;
    double r = method == "floor" ? std::floor(x) : method == "ceil" ? std::ceil(x) : std::round(x);
    return Value::floating(r / m);
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::array();
    if (!v.is_object()) fail(std::string("filter 'items' needs a mapping, got ") + v.type_name());
    Array out;
    for (const auto& [k, x] : v.obj().items)
      out.push_back(Value::array({Value::string(k), x}, true));
    return Value::array(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_object())
      fail(std::string("filter 'dictsort' needs a mapping, got ") + v.type_name());
    const bool cs = flag_arg(a.get(0, "case_sensitive"), false);
    const Value* by = a.get(1, "by");
    const bool by_value = by != nullptr && as_text(*by) == "value";
    const bool rev = flag_arg(a.get(2, "reverse"), false);
    Array pairs;
    for (const auto& [k, x] : v.obj().items)
      pairs.push_back(Value::array({Value::string(k), x}, true));
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& p, const Value& q) {
      const int c = compare(p.arr()[by_value ? 1 : 0], q.arr()[by_value ? 1 : 0], cs);
      return rev ? c > 0 : c < 0;
    });
    return Value::array(std::move(pairs));
  }
  if (name == "sort") {
    return Value::array(sorted(in, to_list(v, "sort"), flag_arg(a.get(0, "reverse"), false),
                               flag_arg(a.get(1, "case_sensitive"), false), a.get(2, "attribute")));
  }
  if (name == "unique") {
    const bool cs = flag_arg(a.get(0, "case_sensitive"), false);
    const Value* attr = a.get(1, "attribute");
    Array out, keys;
    for (const Value& x : to_list(v, "unique")) {
      Value k = attr && !attr->is_none() ? attribute_path(in, x, to_str(*attr)) : x;
      if (!cs && k.is_string()) k = Value::string(to_lower(k.str()));
      bool seen = false;
      for (const Value& s : keys) {
        if (equals(s, k)) {
          seen = true;
          break;
        }
      }
      in.count_iterations(1);
      if (!seen) {
        keys.push_back(k);
        out.push_back(x);
      }
    }
    return Value::array(std::move(out));
  }
  if (name == "map") {
    Array out;
    const Value* attr = nullptr;
    for (const auto& [k, x] : a.kwargs) {
      if (k == "attribute") attr = &x;
    }
    const Value* dflt = nullptr;
    for (const auto& [k, x] : a.kwargs) {
      if (k == "default") dflt = &x;
    }
    for (const Value& item : to_list(v, "map")) {
      in.count_iterations(1);
      if (attr != nullptr) {
        Value r = attribute_path(in, item, to_str(*attr));
        out.push_back(r.is_undefined() && dflt ? *dflt : r);
      } else {
        if (a.args.empty()) fail("map needs a filter name or attribute=");
        CallArgs fa;
        fa.args.assign(a.args.begin() + 1, a.args.end());
        out.push_back(apply_filter(in, str_arg(&a.args[0], "map filter name"), item, fa));
      }
    }
    return Value::array(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    return filter_items(in, name, v, a);
  }
  if (name == "attr") return get_attr(in, v, str_arg(a.get(0, "name"), "attr name"));
  if (name == "sum") {
    const Value* attr = a.get(0, "attribute");
    const Value* start = a.get(1, "start");
    bool is_float = start && start->kind() == Kind::kFloat;
    double f = start ? start->as_number() : 0;
    int64_t i = start && start->kind() == Kind::kInt ? start->as_int() : 0;
    for (const Value& x0 : to_list(v, "sum")) {
      const Value x = attr && !attr->is_none() ? attribute_path(in, x0, to_str(*attr)) : x0;
      if (!x.is_number()) fail(std::string("unsupported operand type for sum: ") + x.type_name());
      if (x.kind() == Kind::kFloat) is_float = true;
      f += x.as_number();
      if (x.kind() == Kind::kInt && __builtin_add_overflow(i, x.as_int(), &i))
        fail("integer overflow");
    }
    return is_float ? Value::floating(f) : Value::integer(i);
  }
  if (name == "min" || name == "max") {
    Array l = sorted(in, to_list(v, name.c_str()), false,
                     flag_arg(a.get(0, "case_sensitive"), false), a.get(1, "attribute"));
    if (l.empty()) return undefined_named("no " + name + " item of an empty sequence");
    return name == "min" ? l.front() : l.back();
  }
  if (name == "wordcount") {
    Value parts = get_attr(in, Value::string(as_text(v)), "split");
    CallArgs none;
    return Value::integer(static_cast<int64_t>(parts.fn().fn(in, none).arr().size()));
  }
  fail("unknown filter '" + name + "'");
}

bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& a) {
  (void)in;
  const Value* arg = a.get(0, "value");
  auto need_arg = [&]() -> const Value& {
    if (arg == nullptr) fail("test '" + name + "' needs an argument");
    return *arg;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind() == Kind::kBool;
  if (name == "true") return v.kind() == Kind::kBool && v.as_bool();
  if (name == "false") return v.kind() == Kind::kBool && !v.as_bool();
  if (name == "integer") return v.kind() == Kind::kInt;
  if (name == "float") return v.kind() == Kind::kFloat;
  if (name == "number") return v.is_number() || v.kind() == Kind::kBool;
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_object();
  if (name == "iterable") {
    return v.is_array() || v.is_string() || v.is_object() || v.is_undefined();
  }
  if (name == "sequence") {
    return v.is_array() || v.is_string() || v.is_object() || v.is_undefined();
  }
  if (name == "callable") return v.kind() == Kind::kFunction;
  if (name == "escaped") return false;
  if (name == "lower") return v.is_string() && to_lower(v.str()) == v.str();
  if (name == "upper") return v.is_string() && to_upper(v.str()) == v.str();
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (v.is_undefined()) fail_undefined(v);
    if (v.kind() != Kind::kInt && v.kind() != Kind::kBool) {
      fail("test '" + name + "' needs an integer, got " + v.type_name());
    }
    const int64_t x = v.kind() == Kind::kBool ? v.as_bool() : v.as_int();
    if (name == "odd") return x % 2 != 0;
    if (name == "even") return x % 2 == 0;
    const Value& d = need_arg();
    if (d.kind() != Kind::kInt || d.as_int() == 0) fail("divisibleby needs a non-zero integer");
    if (d.as_int() == -1) return true;
    return x % d.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, need_arg());
  if (name == "ne" || name == "!=") return !equals(v, need_arg());
  if (name == "lt" || name == "lessthan" || name == "<") return compare(v, need_arg()) < 0;
  if (name == "le" || name == "<=") return compare(v, need_arg()) <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(v, need_arg()) > 0;
  if (name == "ge" || name == ">=") return compare(v, need_arg()) >= 0;
  if (name == "sameas") {
    const Value& o = need_arg();
    if (v.kind() != o.kind()) return false;
    if (v.is_array()) return &v.arr() == &o.arr();
    if (v.is_object() || v.kind() == Kind::kNamespace) return &v.obj() == &o.obj();
    return equals(v, o);
  }
  if (name == "in") {
    const Value& seq = need_arg();
    if (seq.is_string()) return v.is_string() && seq.str().find(v.str()) != std::string::npos;
    if (seq.is_object()) return v.is_string() && seq.obj().find(v.str()) != nullptr;
    for (const Value& x : to_list(seq, "in")) {
      if (equals(x, v)) return true;
    }
    return false;
  }
  fail("unknown test '" + name + "'");
}

}  // namespace moe::text::jinja
