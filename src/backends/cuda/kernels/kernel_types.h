// Plain C++ types shared by kernel launchers and CudaOps: weight dtype codes, the device batch
// layout, and the opaque stream type (no CUDA headers needed to include this).
#pragma once

#include <cstdint>

struct CUstream_st;

namespace moe::cuda {

using Stream = CUstream_st*;  // == cudaStream_t

// Weight element types: dense dtypes, then the block-quantized formats of ops/weight.h
// (kernels that take them dequantize through QuantWeight, kernels/quant_weight.cuh).
enum WType : int { kWF32 = 0, kWBF16 = 1, kWF16 = 2, kWFp8Block = 3, kWNvfp4 = 4 };

// ops::BatchLayout as raw device pointers plus the page pool size.
struct LayoutParams {
  const int32_t* token_seq = nullptr;   // [T]
  const int32_t* positions = nullptr;   // [T]
  const int32_t* seq_lens = nullptr;    // [S]
  const int32_t* page_table = nullptr;  // [S, max_pages]
  int64_t num_tokens = 0;
  int64_t max_pages = 0;
  int64_t page_size = 0;
  int64_t num_pages = 0;  // pages of the cache the op reads or writes
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace moe::cuda
