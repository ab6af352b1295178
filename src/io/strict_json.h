// Strict JSON parsing for files a user gives us (safetensors headers, index.json, config.json):
// never throws, bounds nesting depth before building anything, and rejects duplicate object
// keys (which nlohmann::json would otherwise resolve silently by keeping the last one).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace moe::io {

// Default nesting limit: our files need at most 4 levels; 64 leaves room for unknown fields.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON value. Errors (InvalidArgument) start with `source` and say what is
// wrong and where: syntax errors with the nlohmann message (byte position), nesting deeper than
// `max_depth`, or a key repeated inside one object. Thread-safe; no global state.
Result<nlohmann::json> parse_json_strict(std::string_view text, std::string_view source,
                                         int max_depth = kMaxJsonDepth);

// "string \"abc\"", "number 3.5", "array", ... for error messages (strings truncated to 40 chars).
std::string describe_json(const nlohmann::json& v);

}  // namespace moe::io
