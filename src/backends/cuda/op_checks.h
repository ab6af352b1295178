// Host-side validation shared by the CudaOps entries (boundary checks with the tensor's name
// and expected vs actual values) and conversions from views to kernel parameters.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"
#include "core/check.h"
#include "ops/ops.h"

namespace moe::cuda {

inline int weight_type(DType dt, const char* what) {
  switch (dt) {
    case DType::kF32:
      return kWF32;
    case DType::kBF16:
      return kWBF16;
    case DType::kF16:
      return kWF16;
    default:
      MOE_CHECK(false) << what << ": unsupported dtype " << dtype_name(dt)
                       << " (supported: F32, BF16, F16)";
  }
  return kWF32;
}

// The dense matrix of a weight; block-quantized formats (FP8 block, NVFP4) come with the
// quantized-weights issue.
inline ConstTensorView dense_weight(const ops::Weight& w, const char* what) {
  MOE_CHECK(w.format == ops::WeightFormat::kDense)
      << what << ": weight format " << static_cast<int>(w.format)
      << " is not supported by the cuda backend yet (supported: dense BF16/F16/F32)";
  MOE_CHECK(w.data.rank() == 2 && w.data.is_contiguous())
      << what << ": expected a contiguous 2-D matrix, got " << w.data.shape().to_string();
  return w.data;
}

inline void check_f32(ConstTensorView v, int rank, const char* what) {
  MOE_CHECK(!v.empty()) << what << ": empty view";
  MOE_CHECK(v.dtype() == DType::kF32) << what << ": expected F32, got " << dtype_name(v.dtype());
  MOE_CHECK(v.rank() == rank) << what << ": expected rank " << rank << ", got "
                              << v.shape().to_string();
  MOE_CHECK(v.stride(-1) == 1 || v.dim(-1) == 1)
      << what << ": innermost dimension must be contiguous";
}

inline void check_i32(ConstTensorView v, int rank, const char* what) {
  MOE_CHECK(v.dtype() == DType::kI32) << what << ": expected I32, got " << dtype_name(v.dtype());
  MOE_CHECK(v.rank() == rank) << what << ": expected rank " << rank << ", got "
                              << v.shape().to_string();
  MOE_CHECK(v.stride(-1) == 1 || v.dim(-1) == 1)
      << what << ": innermost dimension must be contiguous";
}

inline LayoutParams layout_params(const ops::BatchLayout& b, ConstTensorView cache) {
  MOE_CHECK(b.page_size > 0 && b.page_table.rank() == 2 && b.page_table.is_contiguous())
      << "batch layout: page_table " << b.page_table.shape().to_string() << ", page size "
      << b.page_size;
  MOE_CHECK(b.token_seq.numel() == b.num_tokens && b.positions.numel() == b.num_tokens)
      << "batch layout: " << b.num_tokens << " tokens but token_seq "
      << b.token_seq.shape().to_string() << ", positions " << b.positions.shape().to_string();
  MOE_CHECK(cache.rank() == 3 && cache.dim(1) == b.page_size && cache.is_contiguous())
      << "paged cache " << cache.shape().to_string() << " with page size " << b.page_size;
  LayoutParams p;
  p.token_seq = b.token_seq.data<int32_t>();
  p.positions = b.positions.data<int32_t>();
  p.seq_lens = b.seq_lens.empty() ? nullptr : b.seq_lens.data<int32_t>();
  p.page_table = b.page_table.data<int32_t>();
  p.num_tokens = b.num_tokens;
  p.max_pages = b.page_table.dim(1);
  p.page_size = b.page_size;
  p.num_pages = cache.dim(0);
  return p;
}

inline int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace moe::cuda
