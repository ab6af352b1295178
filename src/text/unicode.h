// UTF-8 helpers for the tokenizer: decoding, encoding, repair of invalid input and NFC.
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace moe::text {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Appends the UTF-8 encoding of `cp` (must be a Unicode scalar value) to `out`.
void append_utf8(char32_t cp, std::string* out);

// Decodes one well-formed UTF-8 sequence at s[i]; returns its length in bytes (1-4), or 0 if
// the bytes at s[i] do not start a well-formed sequence. On success stores the code point.
int decode_utf8(std::string_view s, size_t i, char32_t* cp);

// Length of the longest prefix of s[i..] that is a *prefix* of some well-formed sequence but is
// not complete (0 if s[i] starts a complete sequence or is invalid). Used by the streaming
// detokenizer to hold back bytes that may still be completed.
int incomplete_utf8_tail(std::string_view s);

// True if `s` is well-formed UTF-8.
bool is_valid_utf8(std::string_view s);

// Copies `s` to `out`, replacing every maximal subpart of an ill-formed subsequence with U+FFFD
// (Unicode §3.9 "U+FFFD substitution of maximal subparts"; what WHATWG TextDecoder and Rust's
// String::from_utf8_lossy do). HF tokenizers take &str, so callers in JS/Python reach it with
// exactly this replacement already applied.
void repair_utf8(std::string_view s, std::string* out);

// Unicode White_Space property (the meaning of \s in Oniguruma, the regex engine HF uses).
bool is_white_space(char32_t cp);

// Canonical composition (NFC). Returns false and leaves `out` untouched when `s` is already in
// NFC by a quick check (the common case: no code point at or above U+0300 that could change).
// `s` must be valid UTF-8.
bool nfc_if_changed(std::string_view s, std::string* out);
std::string nfc(std::string_view s);

}  // namespace moe::text
