// Command-line flags of one `moengine <subcommand>`: --name value and --switch forms.
// Every accessor reports bad input as a Status (the caller prints one line and exits 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace moe::apps {

class CliArgs {
 public:
  // Parses argv[first..argc). `flags_with_value` and `switches` list every accepted flag
  // (with the leading "--"); anything else is an error naming the flag and the accepted ones.
  static Result<CliArgs> parse(int argc, char** argv, int first,
                               const std::set<std::string>& flags_with_value,
                               const std::set<std::string>& switches);

  bool has(const std::string& flag) const { return values_.count(flag) || switches_.count(flag); }
  Result<std::string> required(const std::string& flag) const;
  std::optional<std::string> optional(const std::string& flag) const;
  // Typed getters: error names the flag and the bad value.
  Result<int64_t> get_int(const std::string& flag, int64_t default_value, int64_t min_value,
                          int64_t max_value) const;
  Result<double> get_double(const std::string& flag, double default_value, double min_value,
                            double max_value) const;
  // Comma-separated integers, e.g. "1,2,3".
  Result<std::vector<int64_t>> get_int_list(const std::string& flag) const;

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
};

// Prints "moengine <command>: <message>" to stderr and returns 2 (the bad-input exit code).
int fail(const std::string& command, const Status& status);

}  // namespace moe::apps
