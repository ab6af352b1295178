// UTF-8 helpers for the Jinja engine: code-point iteration, Python/JS whitespace classes and
// simple case mapping. Strings stay UTF-8 bytes everywhere; invalid bytes count as one code point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moe::text::jinja {

// Decodes the code point at s[i]; sets *len to its byte length (1 for an invalid byte, which
// decodes as 0xFFFD). Requires i < s.size().
uint32_t decode_utf8(std::string_view s, size_t i, size_t* len);
void append_utf8(std::string& out, uint32_t cp);

// Byte offsets of each code point start, plus s.size() at the end.
std::vector<size_t> code_point_offsets(std::string_view s);
size_t code_point_count(std::string_view s);

// Whitespace as Python's str.isspace() / str.strip() sees it (also JS \s minus U+FEFF).
bool is_space(uint32_t cp);

// Python str.strip/lstrip/rstrip: `chars` null means whitespace, else the set of its code points.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);

// Case mapping: ASCII, Latin-1, Greek and Cyrillic basic ranges (enough for chat templates).
uint32_t to_upper_cp(uint32_t cp);
uint32_t to_lower_cp(uint32_t cp);
bool is_alnum_cp(uint32_t cp);
std::string to_upper(std::string_view s);
std::string to_lower(std::string_view s);
std::string title_case(std::string_view s);  // Python str.title()
std::string capitalize(std::string_view s);  // Python str.capitalize()

}  // namespace moe::text::jinja
