// Shared by the CUDA benchmarks (bench/linear, bench/moe, bench/copy): a CUDA error check that
// exits, a device fill of synthetic weight bytes (no host upload of gigabytes), and the median
// CUDA-event time of repeated launches.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

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

// Device 0's properties into *prop if it is sm_90 or later (bulk copies, mbarriers); else false
// after saying so on stderr for `prog`.
inline bool sm90_device(const char* prog, cudaDeviceProp* prop) {
  CK(cudaGetDeviceProperties(prop, 0));
  if (prop->major >= 9) return true;
  std::fprintf(stderr, "%s: needs compute capability 9.0 or later; %s is %d.%d\n", prog, prop->name,
               prop->major, prop->minor);
  return false;
}

inline void fill(void* p, size_t n, uint32_t seed, int kind, cudaStream_t s = nullptr) {
  fill_kernel<<<2048, 256, 0, s>>>(static_cast<uint8_t*>(p), n, seed, kind);
  CK(cudaGetLastError());
}

// Median over `reps` timings (CUDA events on the default stream) of `launches` back-to-back calls
// of launch(i), in ms per call.
template <typename Launch>
float median_ms_per_launch(int reps, int launches, Launch&& launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int rep = 0; rep < reps; ++rep) {
    CK(cudaEventRecord(a));
    for (int i = 0; i < launches; ++i) launch(i);
    CK(cudaGetLastError());
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float t = 0;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t / launches);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace moe::bench
