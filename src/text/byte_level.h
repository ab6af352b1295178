// GPT-2 byte-level alphabet: every byte 0..255 maps to one printable code point, so BPE can work
// on bytes while vocabularies are stored as text ("Ġ" = byte 0x20, "Ċ" = byte 0x0A).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace moe::text {

// The code point that represents byte b (bytes_to_unicode() of GPT-2).
constexpr char32_t byte_to_char(unsigned char b) {
  if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
  // The remaining 68 bytes get 256, 257, ... in increasing byte order.
  int n = 0;
  for (int x = 0; x < b; ++x) {
    if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) ++n;
  }
  return 256 + n;
}

// Inverse of byte_to_char; -1 if cp is not in the alphabet.
int char_to_byte(char32_t cp);

// Decodes a byte-level token string ("Ġhello") to the raw bytes it stands for (" hello").
// Returns nullopt if some character is not in the byte-level alphabet (e.g. an added token).
std::optional<std::string> byte_level_decode(std::string_view token);

// Encodes raw bytes to the byte-level alphabet (the inverse of byte_level_decode).
std::string byte_level_encode(std::string_view bytes);

}  // namespace moe::text
