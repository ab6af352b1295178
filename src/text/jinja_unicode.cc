// UTF-8 helpers for the Jinja engine (see jinja_unicode.h).
#include "text/jinja_unicode.h"

namespace moe::text::jinja {

uint32_t decode_utf8(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *len = 1;
    return b0;
  }
  int n = 0;
  uint32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 1;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 2;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 3;
    cp = b0 & 0x07;
  } else {
    *len = 1;
    return 0xFFFD;
  }
  if (i + n >= s.size()) {
    *len = 1;
    return 0xFFFD;
  }
  for (int k = 1; k <= n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      *len = 1;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  *len = n + 1;
  return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offs;
  offs.reserve(s.size() + 1);
  size_t i = 0;
  while (i < s.size()) {
    offs.push_back(i);
    size_t len = 1;
    decode_utf8(s, i, &len);
    i += len;
  }
  offs.push_back(s.size());
  return offs;
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_space(uint32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars != nullptr) {
    size_t i = 0;
    while (i < chars->size()) {
      size_t len = 1;
      set.push_back(decode_utf8(*chars, i, &len));
      i += len;
    }
  }
  auto strippable = [&](uint32_t cp) {
    if (chars == nullptr) return is_space(cp);
    for (uint32_t c : set) {
      if (c == cp) return true;
    }
    return false;
  };
  const std::vector<size_t> offs = code_point_offsets(s);
  size_t n = offs.size() - 1;
  size_t b = 0, e = n;
  size_t len = 1;
  if (left) {
    while (b < e && strippable(decode_utf8(s, offs[b], &len))) ++b;
  }
  if (right) {
    while (e > b && strippable(decode_utf8(s, offs[e - 1], &len))) --e;
  }
  return std::string(s.substr(offs[b], offs[e] - offs[b]));
}

uint32_t to_upper_cp(uint32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if (cp < 0x80) return cp;
  if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 32;
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;  // Greek
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;                 // Cyrillic
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

uint32_t to_lower_cp(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0x80) return cp;
  if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7)) return cp + 32;
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

bool is_alnum_cp(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  }
  return to_upper_cp(cp) != cp || to_lower_cp(cp) != cp || cp >= 0x4E00;
}

namespace {
template <typename F>
std::string map_cps(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 1;
    uint32_t cp = decode_utf8(s, i, &len);
    if (cp == 0xFFFD && len == 1) {
      out += s[i];
    } else {
      append_utf8(out, f(cp));
    }
    i += len;
  }
  return out;
}
}  // namespace

std::string to_upper(std::string_view s) { return map_cps(s, to_upper_cp); }
std::string to_lower(std::string_view s) { return map_cps(s, to_lower_cp); }

std::string title_case(std::string_view s) {
  bool prev_cased = false;
  return map_cps(s, [&](uint32_t cp) {
    const bool cased = to_upper_cp(cp) != cp || to_lower_cp(cp) != cp;
    uint32_t r = cased ? (prev_cased ? to_lower_cp(cp) : to_upper_cp(cp)) : cp;
    prev_cased = cased;
    return r;
  });
}

std::string capitalize(std::string_view s) {
  bool first = true;
  return map_cps(s, [&](uint32_t cp) {
    uint32_t r = first ? to_upper_cp(cp) : to_lower_cp(cp);
    first = false;
    return r;
  });
}

}  // namespace moe::text::jinja
