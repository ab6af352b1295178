// Strict, non-throwing JSON parsing: depth pre-scan, duplicate-key detection, error messages.
#include "io/strict_json.h"

#include <set>
#include <string>
#include <vector>

namespace moe::io {
namespace {

// Maximum nesting depth of `text`, counting brackets outside string literals. Stops early once
// `limit` is exceeded. O(n), no allocation: runs before the parser builds anything.
int max_nesting(std::string_view text, int limit) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) max_depth = depth;
      if (max_depth > limit) return max_depth;
    } else if (c == '}' || c == ']') {
      --depth;  // unbalanced input is the parser's job to report
    }
  }
  return max_depth;
}

}  // namespace

std::string describe_json(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      std::string shown = s.size() > 40 ? s.substr(0, 40) + "..." : s;
      return "string \"" + shown + "\"";
    }
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "number " + v.dump();
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::object:
      return "an object";
    default:
      return "a JSON value of another kind";
  }
}

Result<nlohmann::json> parse_json_strict(std::string_view text, std::string_view source,
                                         int max_depth) {
  const std::string src(source);
  if (max_nesting(text, max_depth) > max_depth) {
    return invalid_argument(src + ": JSON nests deeper than " + std::to_string(max_depth) +
                            " levels; refusing to parse it");
  }
  // keys_at[d]: keys seen so far in the object whose keys are reported at callback depth d.
  // An object opened at depth d reports its keys at depth d + 1, so clearing that slot when the
  // object opens resets it for each sibling object without relying on end events.
  std::vector<std::set<std::string>> keys_at(static_cast<size_t>(max_depth) + 2);
  std::string duplicate;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth < 0 || depth + 1 >= static_cast<int>(keys_at.size())) return true;
    if (event == nlohmann::json::parse_event_t::object_start) {
      keys_at[static_cast<size_t>(depth) + 1].clear();
    } else if (event == nlohmann::json::parse_event_t::key && parsed.is_string()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!keys_at[static_cast<size_t>(depth)].insert(k).second && duplicate.empty()) {
        duplicate = k;
      }
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                              /*ignore_comments=*/false);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(src + ": invalid JSON: " + e.what());
  }
  if (!duplicate.empty()) {
    std::string shown = duplicate.size() > 80 ? duplicate.substr(0, 80) + "..." : duplicate;
    return invalid_argument(src + ": key '" + shown +
                            "' appears twice in one JSON object; duplicate keys are not allowed");
  }
  return j;
}

}  // namespace moe::io
