// bench/copy: what the ring benchmarks (ring_bench, cta_ring_bench) share: the read-back of a
// landed stage, synthetic integer work standing in for the dequantization, and the parsing of
// comma-separated flag values.
// Synthetic work: the NVFP4 ring kernel issues ~390 instructions per lane and k-step (16 HMMA,
// the rest integer and f16 work on the lane's 16 words of weights, with 16 independent words in
// flight); `step_work` reads one k-step of a lane's gate and up data (2 x 2
// 16-byte pieces) and a scale word from shared memory and runs `n` rounds of IMAD, SHF, LOP3 on
// each of the 16 words, interleaved: ~48 n + 8 instructions with the kernel's parallelism.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace moe::bench {

// gate, up: shared addresses of the step's two 1024-byte blocks; scale: of the lane's scale word.
__device__ __forceinline__ uint32_t step_work(uint32_t gate, uint32_t up, uint32_t scale, int n,
                                              int lane) {
  uint32_t v[16];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint32_t a = (q < 2 ? gate : up) + (q & 1) * 512 + lane * 16;
    asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v[4 * q]), "=r"(v[4 * q + 1]), "=r"(v[4 * q + 2]), "=r"(v[4 * q + 3])
                 : "r"(a));
  }
  uint32_t s;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(s) : "r"(scale));
  for (int i = 0; i < n; ++i)
#pragma unroll
    for (int w = 0; w < 16; ++w) {
      v[w] = v[w] * 0x9E3779B1u + s;
      v[w] ^= v[w] >> 13;
    }
  uint32_t x = 0;
#pragma unroll
  for (int w = 0; w < 16; ++w) x ^= v[w];
  return x;
}

// Every byte of a landed stage read back by lane `lane`: stream t holds mult x chunk[t] bytes
// (chunk[t] per k-step); 16-byte pieces of streams of >= 512 bytes per step (or the same bytes in
// 4-byte loads with `u32`), 4-byte words of the smaller (scale) ones. Returns their XOR.
template <int kMaxStreams>
__device__ __forceinline__ uint32_t read_back(uint32_t stage, const int (&chunk)[kMaxStreams],
                                              int n, int mult, int lane, bool u32) {
  uint32_t x = 0, o = 0;
#pragma unroll
  for (int t = 0; t < kMaxStreams; ++t) {
    if (t >= n) break;
    const int c = chunk[t] * mult;
    if (chunk[t] >= 512) {
      for (int b = lane * 16; b < c; b += 512) {
        if (u32) {
#pragma unroll
          for (int w4 = 0; w4 < 4; ++w4) {
            uint32_t v;
            asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(stage + o + b + 4 * w4));
            x ^= v;
          }
        } else {
          uint32_t v0, v1, v2, v3;
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                       : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                       : "r"(stage + o + b));
          x ^= v0 ^ v1 ^ v2 ^ v3;
        }
      }
    } else {
      for (int b = lane * 4; b < c; b += 128) {
        uint32_t v;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(stage + o + b));
        x ^= v;
      }
    }
    o += c;
  }
  return x;
}

// Appends the comma-separated numbers of `list` (flag `flag` of program `prog`) to out; false,
// with a message, when one is not a number in [lo, hi].
inline bool parse_list(const char* prog, const char* flag, const std::string& list,
                       std::vector<double>& out, double lo, double hi) {
  for (size_t pos = 0; pos < list.size();) {
    const size_t comma = list.find(',', pos);
    const std::string item = list.substr(pos, comma - pos);
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || v < lo || v > hi) {
      std::fprintf(stderr, "%s: %s takes numbers in [%g, %g], got '%s'\n", prog, flag, lo, hi,
                   item.c_str());
      return false;
    }
    out.push_back(v);
    pos = comma == std::string::npos ? list.size() : comma + 1;
  }
  return true;
}

}  // namespace moe::bench
