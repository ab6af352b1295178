// Byte-level alphabet tables (see byte_level.h).
#include "text/byte_level.h"

#include "text/unicode.h"

namespace moe::text {
namespace {

constexpr std::array<int, 324> make_char_to_byte() {
  std::array<int, 324> t{};
  for (auto& v : t) v = -1;
  for (int b = 0; b < 256; ++b) t[byte_to_char(static_cast<unsigned char>(b))] = b;
  return t;
}
constexpr std::array<int, 324> kCharToByte = make_char_to_byte();

}  // namespace

int char_to_byte(char32_t cp) { return cp < kCharToByte.size() ? kCharToByte[cp] : -1; }

std::optional<std::string> byte_level_decode(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    char32_t cp;
    const int len = decode_utf8(token, i, &cp);
    if (len == 0) return std::nullopt;
    const int b = char_to_byte(cp);
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
    i += len;
  }
  return out;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(byte_to_char(b), &out);
  return out;
}

}  // namespace moe::text
