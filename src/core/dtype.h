// Element types of checkpoints and tensors, with the safetensors spellings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace moe {

enum class DType : uint8_t {
  kBF16,
  kF16,
  kF32,
  kF8E4M3,  // float8_e4m3fn: no infinities, 0x7F/0xFF are NaN, max 448
  kU8,
  kI8,
  kI32,
  kI64,
  kBool,
};

// Bytes per element.
size_t dtype_size(DType t);
// The safetensors spelling: "BF16", "F8_E4M3", ...
std::string_view dtype_name(DType t);
// Parses a safetensors dtype string; nullopt for anything not in the list above.
std::optional<DType> parse_dtype(std::string_view s);
// Comma-separated list of all supported safetensors spellings (for error messages).
std::string_view supported_dtype_names();

}  // namespace moe
