// Device helpers shared by the kernels: loads of any weight dtype as f32, warp and block
// reductions. Weight dtype codes (WType) are the runtime switch the launchers map DType onto.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

__device__ __forceinline__ float load_w(const void* p, int wt, int64_t i) {
  if (wt == kWBF16)
    return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16);
  if (wt == kWF16) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

template <typename W>
__device__ __forceinline__ float to_f32(W v);
template <>
__device__ __forceinline__ float to_f32<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <>
__device__ __forceinline__ float to_f32<__half>(__half v) {
  return __half2float(v);
}

template <typename V>
__device__ __forceinline__ V warp_sum(V v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename V>
__device__ __forceinline__ V warp_max(V v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the result.
// `red` is shared scratch of 32 entries; the function synchronises the block.
template <typename V>
__device__ V block_sum(V v, V* red) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  V r = lane < nw ? red[lane] : V(0);
  return warp_sum(r);
}

template <typename V>
__device__ V block_max(V v, V* red, V lowest) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  V r = lane < nw ? red[lane] : lowest;
  return warp_max(r);
}

// Page-table lookup: element offset of (sequence s, position p) in a [pages, P, W] cache, or -1
// if the position is outside the page table or the page id is out of range.
__device__ __forceinline__ int64_t cache_offset(const LayoutParams& b, int64_t s, int64_t p,
                                                int64_t width) {
  const int64_t page_idx = p / b.page_size;
  if (p < 0 || page_idx >= b.max_pages) return -1;
  const int32_t page = b.page_table[s * b.max_pages + page_idx];
  if (page < 0 || page >= b.num_pages) return -1;
  return (static_cast<int64_t>(page) * b.page_size + p % b.page_size) * width;
}

}  // namespace moe::cuda
