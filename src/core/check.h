// MOE_CHECK: broken internal invariants (programming errors). Fatal: prints the expression,
// location and message, then aborts. Never use it for anything a user's input can trigger.
#pragma once

#include <sstream>

namespace moe::detail {

class CheckFailure {
 public:
  CheckFailure(const char* expr, const char* file, int line);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    msg_ << v;
    return *this;
  }

 private:
  std::ostringstream msg_;
};

}  // namespace moe::detail

#define MOE_CHECK(cond) \
  if (cond) {           \
  } else                \
    ::moe::detail::CheckFailure(#cond, __FILE__, __LINE__)

#define MOE_CHECK_EQ(a, b) MOE_CHECK((a) == (b)) << (a) << " vs " << (b) << " "
