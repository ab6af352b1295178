#include "cli_args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace moe::apps {
namespace {
std::string list_flags(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string s;
  for (const auto& f : a) s += (s.empty() ? "" : ", ") + f;
  for (const auto& f : b) s += (s.empty() ? "" : ", ") + f;
  return s;
}
}  // namespace

Result<CliArgs> CliArgs::parse(int argc, char** argv, int first,
                               const std::set<std::string>& flags_with_value,
                               const std::set<std::string>& switches) {
  CliArgs args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    bool has_inline = false;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_inline = true;
    }
    if (flags_with_value.count(a)) {
      if (!has_inline) {
        if (i + 1 >= argc) return invalid_argument("flag " + a + " needs a value");
        value = argv[++i];
      }
      if (args.values_.count(a)) return invalid_argument("flag " + a + " given twice");
      args.values_[a] = value;
    } else if (switches.count(a) && !has_inline) {
      args.switches_.insert(a);
    } else {
      return invalid_argument("unknown argument '" + a +
                              "'; accepted: " + list_flags(flags_with_value, switches));
    }
  }
  return args;
}

Result<std::string> CliArgs::required(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return invalid_argument("missing required flag " + flag);
  return it->second;
}

std::optional<std::string> CliArgs::optional(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

Result<int64_t> CliArgs::get_int(const std::string& flag, int64_t default_value, int64_t min_value,
                                 int64_t max_value) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return default_value;
  const std::string& s = it->second;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    return invalid_argument(flag + " expects an integer, got '" + s + "'");
  if (v < min_value || v > max_value)
    return invalid_argument(flag + " must be in [" + std::to_string(min_value) + ", " +
                            std::to_string(max_value) + "], got " + s);
  return static_cast<int64_t>(v);
}

Result<double> CliArgs::get_double(const std::string& flag, double default_value, double min_value,
                                   double max_value) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return default_value;
  const std::string& s = it->second;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    return invalid_argument(flag + " expects a number, got '" + s + "'");
  if (v < min_value || v > max_value)
    return invalid_argument(flag + " must be in [" + std::to_string(min_value) + ", " +
                            std::to_string(max_value) + "], got " + s);
  return v;
}

Result<std::vector<int64_t>> CliArgs::get_int_list(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return invalid_argument("missing required flag " + flag);
  std::vector<int64_t> out;
  const std::string& s = it->second;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string tok = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0' || errno == ERANGE)
      return invalid_argument(flag + " expects comma-separated integers, got '" + s + "'");
    out.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

int fail(const std::string& command, const Status& status) {
  // One line: multi-line reports (e.g. every problem of a checkpoint) are joined with "; ".
  std::string msg;
  for (char c : status.message()) {
    if (c == '\n') {
      while (!msg.empty() && msg.back() == ' ') msg.pop_back();
      msg += "; ";
    } else if (!(c == ' ' && !msg.empty() && msg.back() == ' ')) {
      msg += c;
    }
  }
  while (!msg.empty() && (msg.back() == ' ' || msg.back() == ';')) msg.pop_back();
  std::fprintf(stderr, "moengine %s: %s\n", command.c_str(), msg.c_str());
  return 2;
}

}  // namespace moe::apps
