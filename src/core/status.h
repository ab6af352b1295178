// Status and Result<T>: errors a user can cause (files, configs, flags, requests).
// A Status carries a message that says what is wrong, where, and what to do next.
// Broken internal invariants use MOE_CHECK (core/check.h) instead.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace moe {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad flag, bad config value, malformed file content
  kNotFound,         // missing file or tensor
  kDataLoss,         // truncated or corrupt file
  kOutOfRange,       // value outside what is supported
  kUnimplemented,    // a valid request we do not support yet
  kResourceExhausted,
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>"
  std::string to_string() const;
  // Returns a copy whose message is "<prefix>: <message>".
  Status with_context(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status data_loss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status resource_exhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace moe

#define MOE_CONCAT_INNER(a, b) a##b
#define MOE_CONCAT(a, b) MOE_CONCAT_INNER(a, b)

#define MOE_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::moe::Status moe_status_ = (expr);        \
    if (!moe_status_.ok()) return moe_status_; \
  } while (0)

#define MOE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#define MOE_ASSIGN_OR_RETURN(lhs, expr) \
  MOE_ASSIGN_OR_RETURN_IMPL(MOE_CONCAT(moe_result_, __LINE__), lhs, expr)
