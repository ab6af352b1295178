// Unicode tables for NFC (generated data in unicode_nfc_data.cc; see
// tests/text/oracle/gen_unicode_nfc.py). Sorted for binary search. Immutable.
#pragma once

#include <cstddef>
#include <cstdint>

namespace moe::text::nfc_data {

struct CccRange {
  uint32_t first, last, ccc;  // code points first..last have canonical combining class ccc
};
struct Decomposition {
  uint32_t cp, a, b;  // cp -> a b (b = 0 for a singleton); sorted by cp; Hangul is algorithmic
};
struct Composition {
  uint32_t a, b, composite;  // primary composites, sorted by (a, b)
};

extern const char kUnicodeVersion[];
extern const CccRange kCccRanges[];
extern const size_t kCccRangesSize;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionsSize;
extern const Composition kCompositions[];
extern const size_t kCompositionsSize;
extern const uint32_t kCompositionSeconds[];  // sorted, unique second elements of kCompositions
extern const size_t kCompositionSecondsSize;

}  // namespace moe::text::nfc_data
