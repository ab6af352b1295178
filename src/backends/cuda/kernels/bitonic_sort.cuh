// Block-wide bitonic sort of (key, index) pairs in global memory, n a power of two: descending
// key, ascending index on equal keys (a stable descending order when indices are positions).
// O(n log^2 n) per block; exact and deterministic, used where the contract demands exact order.
#pragma once

#include <cstdint>

namespace moe::cuda {

template <typename K>
__device__ __forceinline__ bool sorts_before(K ka, int32_t ia, K kb, int32_t ib) {
  return ka > kb || (ka == kb && ia < ib);
}

// Synchronises the block; all threads must call it.
template <typename K>
__device__ void block_bitonic_sort_desc(K* key, int32_t* idx, int64_t n) {
  __syncthreads();
  for (int64_t k = 2; k <= n; k <<= 1) {
    for (int64_t j = k >> 1; j > 0; j >>= 1) {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const int64_t ixj = i ^ j;
        if (ixj <= i) continue;
        const bool up = (i & k) == 0;
        const K ki = key[i], kj = key[ixj];
        const int32_t ii = idx[i], ij = idx[ixj];
        const bool swap = up ? sorts_before(kj, ij, ki, ii) : sorts_before(ki, ii, kj, ij);
        if (swap) {
          key[i] = kj;
          key[ixj] = ki;
          idx[i] = ij;
          idx[ixj] = ii;
        }
      }
      __syncthreads();
    }
  }
}

}  // namespace moe::cuda
