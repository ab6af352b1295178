// Counter-based random numbers for sampling: u = f(seed, step) in [0, 1), identical on every
// backend (splitmix64 finaliser over seed and step).
#pragma once

#include <cstdint>

namespace moe::ops {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline double sampling_uniform(uint64_t seed, uint64_t step) {
  uint64_t r = splitmix64(splitmix64(seed) ^ (step * 0xd1b54a32d192ed03ull));
  return static_cast<double>(r >> 11) * 0x1.0p-53;
}

}  // namespace moe::ops
