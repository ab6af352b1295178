#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace moe::detail {

CheckFailure::CheckFailure(const char* expr, const char* file, int line) {
  msg_ << file << ":" << line << ": MOE_CHECK(" << expr << ") failed: ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", msg_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace moe::detail
