// UTF-8 decoding/repair and NFC (canonical decomposition, canonical ordering, canonical
// composition per UAX #15) on the generated tables of unicode_nfc_data.cc.
#include "text/unicode.h"

#include <algorithm>
#include <vector>

#include "text/unicode_nfc_data.h"

namespace moe::text {
namespace {

// Hangul syllable constants (Unicode §3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
              kSCount = kLCount * kNCount;

uint32_t ccc_of(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* begin = nfc_data::kCccRanges;
  const auto* end = begin + nfc_data::kCccRangesSize;
  auto it = std::upper_bound(begin, end, cp,
                             [](char32_t c, const nfc_data::CccRange& r) { return c < r.first; });
  if (it == begin) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

const nfc_data::Decomposition* find_decomposition(char32_t cp) {
  const auto* begin = nfc_data::kDecompositions;
  const auto* end = begin + nfc_data::kDecompositionsSize;
  auto it = std::lower_bound(begin, end, cp,
                             [](const nfc_data::Decomposition& d, char32_t c) { return d.cp < c; });
  return (it != end && it->cp == cp) ? it : nullptr;
}

char32_t find_composition(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const auto* begin = nfc_data::kCompositions;
  const auto* end = begin + nfc_data::kCompositionsSize;
  auto it = std::lower_bound(begin, end, std::make_pair(a, b),
                             [](const nfc_data::Composition& c, std::pair<char32_t, char32_t> k) {
                               return c.a < k.first || (c.a == k.first && c.b < k.second);
                             });
  return (it != end && it->a == a && it->b == b) ? it->composite : 0;
}

bool is_composition_second(char32_t cp) {
  if (cp >= kVBase && cp < kVBase + kVCount) return true;
  if (cp > kTBase && cp < kTBase + kTCount) return true;
  return std::binary_search(nfc_data::kCompositionSeconds,
                            nfc_data::kCompositionSeconds + nfc_data::kCompositionSecondsSize,
                            static_cast<uint32_t>(cp));
}

void decompose(char32_t cp, std::vector<char32_t>* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out->push_back(kTBase + s % kTCount);
    return;
  }
  const nfc_data::Decomposition* d = cp >= 0xC0 ? find_decomposition(cp) : nullptr;
  if (d == nullptr) {
    out->push_back(cp);
    return;
  }
  decompose(d->a, out);
  if (d->b) decompose(d->b, out);
}

// True if cp might change under NFC (conservative; false means "NFC_QC=Yes with ccc 0").
bool may_change(char32_t cp) {
  if (cp < 0x300) return false;
  if (cp >= 0x4E00 && cp <= 0x9FFF) return false;  // CJK unified ideographs: stable
  if (ccc_of(cp) != 0) return true;
  if (cp >= kSBase && cp < kSBase + kSCount) return false;  // precomposed syllables are NFC
  if (find_decomposition(cp) != nullptr) return true;
  if (cp >= 0x1100 && cp < 0x1200) return true;  // conjoining jamo
  // Characters that can combine with a preceding starter (e.g. U+0CD5, U+0B3E).
  return is_composition_second(cp);
}

}  // namespace

void append_utf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// Number of bytes of s[i..] that form a valid prefix of a sequence (Unicode Table 3-7), and the
// total length the lead byte announces. Returns {valid_prefix_len, needed_len}; needed 0 = bad
// lead.
std::pair<int, int> utf8_prefix(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  int need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 < 0x80) return {1, 1};
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {0, 0};
  }
  int len = 1;
  for (; len < need && i + len < s.size(); ++len) {
    const auto b = static_cast<unsigned char>(s[i + len]);
    if (len == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
  }
  return {len, need};
}

}  // namespace

int decode_utf8(std::string_view s, size_t i, char32_t* cp) {
  const auto [len, need] = utf8_prefix(s, i);
  if (need == 0 || len != need) return 0;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + i);
  switch (need) {
    case 1:
      *cp = p[0];
      break;
    case 2:
      *cp = ((p[0] & 0x1F) << 6) | (p[1] & 0x3F);
      break;
    case 3:
      *cp = ((p[0] & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F);
      break;
    default:
      *cp = ((p[0] & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F);
  }
  return need;
}

int incomplete_utf8_tail(std::string_view s) {
  // A complete or invalid sequence can only start within the last 3 bytes to be incomplete.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const size_t i = s.size() - back;
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: look further back
    const auto [len, need] = utf8_prefix(s, i);
    return (need > 1 && len == static_cast<int>(back) && len < need) ? len : 0;
  }
  return 0;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const auto [len, need] = utf8_prefix(s, i);
    if (need == 0 || len != need) return false;
    i += need;
  }
  return true;
}

void repair_utf8(std::string_view s, std::string* out) {
  out->reserve(out->size() + s.size() + 8);
  size_t i = 0;
  while (i < s.size()) {
    const auto [len, need] = utf8_prefix(s, i);
    if (need != 0 && len == need) {
      out->append(s.data() + i, len);
      i += len;
    } else {
      append_utf8(kReplacementChar, out);
      i += std::max(len, 1);  // a maximal subpart is the valid prefix, or one byte
    }
  }
}

bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool nfc_if_changed(std::string_view s, std::string* out) {
  // Quick check: find the first code point that might change; the text before the starter that
  // precedes it is unaffected.
  size_t i = 0, first = s.size();
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0xCC) {  // every code point below U+0300 starts with a byte < 0xCC
      i += b < 0x80 ? 1 : 2;
      continue;
    }
    char32_t cp;
    const int len = decode_utf8(s, i, &cp);
    if (len == 0) return false;  // precondition violated: leave as is
    if (may_change(cp)) {
      first = i;
      break;
    }
    i += len;
  }
  if (first == s.size()) return false;
  // Back up to the previous starter (ccc 0) so composition with it happens.
  size_t start = first;
  while (start > 0) {
    size_t p = start - 1;
    while (p > 0 && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
    char32_t cp;
    if (decode_utf8(s, p, &cp) == 0) break;
    start = p;
    if (ccc_of(cp) == 0) break;
  }
  std::vector<char32_t> cps;
  cps.reserve(s.size() - start);
  for (size_t j = start; j < s.size();) {
    char32_t cp;
    const int len = decode_utf8(s, j, &cp);
    if (len == 0) return false;
    decompose(cp, &cps);
    j += len;
  }
  // Canonical ordering: stable sort runs of non-starters by ccc.
  for (size_t j = 0; j < cps.size();) {
    if (ccc_of(cps[j]) == 0) {
      ++j;
      continue;
    }
    size_t k = j;
    while (k < cps.size() && ccc_of(cps[k]) != 0) ++k;
    std::stable_sort(cps.begin() + j, cps.begin() + k,
                     [](char32_t a, char32_t b) { return ccc_of(a) < ccc_of(b); });
    j = k;
  }
  // Canonical composition (the sample algorithm of UAX #15): a character composes with the last
  // starter unless blocked by a retained character of class 0 or of class >= its own.
  std::vector<char32_t> res;
  res.reserve(cps.size());
  size_t starter = SIZE_MAX;
  int last_ccc = 0;
  for (char32_t cp : cps) {
    const int ccc = static_cast<int>(ccc_of(cp));
    if (starter != SIZE_MAX && (last_ccc < ccc || last_ccc == 0)) {
      const char32_t comp = find_composition(res[starter], cp);
      if (comp != 0) {
        res[starter] = comp;
        continue;
      }
    }
    if (ccc == 0) starter = res.size();
    last_ccc = ccc;
    res.push_back(cp);
  }
  out->assign(s.data(), start);
  for (char32_t cp : res) append_utf8(cp, out);
  return true;
}

std::string nfc(std::string_view s) {
  std::string out;
  if (!nfc_if_changed(s, &out)) return std::string(s);
  return out;
}

}  // namespace moe::text
