// bench/copy: synthetic integer work standing in for the dequantization in the ring benchmarks
// (ring_bench, cta_ring_bench). The NVFP4 ring kernel issues ~390 instructions per lane and
// k-step (16 HMMA, the rest integer and f16 work on the lane's 16 words of weights, with 16
// independent words in flight); `step_work` reads one k-step of a lane's gate and up data (2 x 2
// 16-byte pieces) and a scale word from shared memory and runs `n` rounds of IMAD, SHF, LOP3 on
// each of the 16 words, interleaved: ~48 n + 8 instructions with the kernel's parallelism.
#pragma once

#include <cstdint>

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

}  // namespace moe::bench
