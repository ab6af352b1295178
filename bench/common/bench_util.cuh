// Shared by the CUDA benchmarks (bench/linear, bench/moe): a CUDA error check that exits, and a
// device fill of synthetic weight bytes (no host upload of gigabytes).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

namespace moe::bench {

// Hashed bytes of one kind: 0 any byte (NVFP4 codes); 1 FP8 E4M3 with |v| < 2, never NaN;
// 2 E4M3 scale in [0.5, 1); 3 BF16 with values ~ +-0.01..0.03 (high bytes).
__global__ void __launch_bounds__(256) fill_kernel(uint8_t* p, size_t n, uint32_t seed, int kind) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    uint8_t b = static_cast<uint8_t>(h);
    if (kind == 1) b &= 0xBF;
    if (kind == 2) b = 0x30 | (b & 0x07);
    if (kind == 3) b = (i & 1) ? (0x3C | (b & 0x80)) : b;
    p[i] = b;
  }
}

inline void fill(void* p, size_t n, uint32_t seed, int kind, cudaStream_t s = nullptr) {
  fill_kernel<<<2048, 256, 0, s>>>(static_cast<uint8_t*>(p), n, seed, kind);
  CK(cudaGetLastError());
}

}  // namespace moe::bench
