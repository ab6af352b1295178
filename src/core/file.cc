#include "core/file.h"

#include <fstream>
#include <sstream>
#include <system_error>

namespace moe {

Result<std::string> read_small_file(const std::filesystem::path& p, uintmax_t limit) {
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) return not_found(p.string() + ": not found");
  if (std::filesystem::is_directory(p, ec)) {
    return invalid_argument(p.string() + ": is a directory, expected a file");
  }
  const uintmax_t size = std::filesystem::file_size(p, ec);
  if (ec) return invalid_argument(p.string() + ": cannot read: " + ec.message());
  if (size > limit) {
    return invalid_argument(p.string() + ": " + std::to_string(size) + " bytes exceeds the " +
                            std::to_string(limit) + "-byte limit for this file");
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) return invalid_argument(p.string() + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return invalid_argument(p.string() + ": read error");
  return ss.str();
}

}  // namespace moe
