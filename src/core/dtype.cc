#include "core/dtype.h"

namespace moe {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kBF16, "BF16", 2},      {DType::kF16, "F16", 2}, {DType::kF32, "F32", 4},
    {DType::kF8E4M3, "F8_E4M3", 1}, {DType::kU8, "U8", 1},   {DType::kI8, "I8", 1},
    {DType::kI32, "I32", 4},        {DType::kI64, "I64", 8}, {DType::kBool, "BOOL", 1},
};
}  // namespace

size_t dtype_size(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.size;
  return 0;
}

std::string_view dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.name;
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (const auto& d : kDTypes)
    if (d.name == s) return d.type;
  return std::nullopt;
}

std::string_view supported_dtype_names() {
  return "BF16, F16, F32, F8_E4M3, U8, I8, I32, I64, BOOL";
}

}  // namespace moe
