// Host-side validation shared by the CudaOps entries (boundary checks with the tensor's name
// and expected vs actual values) and conversions from views to kernel parameters.
#pragma once

#include <cstdint>
#include <ostream>

#include "backends/cuda/kernels/kernel_types.h"
#include "core/check.h"
#include "ops/ops.h"

namespace moe::cuda {

// The name a check message gives a tensor, formatted only when the check fails: `what`
// ("linear.w"), or for one of many "<what> <index> <part>" ({"moe_experts expert", 3, "gate"}),
// so loops over experts build no strings. Holds pointers only: pass string literals.
struct CheckName {
  CheckName(const char* name) : what(name) {}  // NOLINT(google-explicit-constructor)
  CheckName(const char* name, int64_t i, const char* p) : what(name), index(i), part(p) {}
  const char* what;
  int64_t index = -1;  // < 0: no index
  const char* part = nullptr;
};
inline std::ostream& operator<<(std::ostream& o, const CheckName& n) {
  o << n.what;
  if (n.index >= 0) o << ' ' << n.index;
  if (n.part != nullptr) o << ' ' << n.part;
  return o;
}

inline int weight_type(DType dt, const CheckName& what) {
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

// A weight in any ops::WeightFormat as kernel arguments (kernels/quant_weight.cuh), validated:
// dense [N, K] F32/BF16/F16; FP8 block [N, K] F8_E4M3 + scale [ceil(N/b), ceil(K/b)] F32;
// NVFP4 [N, K/2] U8 + scale [N, K/16] F8_E4M3 (K a multiple of 16).
struct WeightArgs {
  const void* data = nullptr;
  const void* scale = nullptr;
  int wt = kWF32;
  int64_t N = 0, K = 0;
  int64_t block = 128;
  float global_scale = 1.f;
};

inline WeightArgs weight_args(const ops::Weight& w, const CheckName& what) {
  MOE_CHECK(w.data.rank() == 2 && w.data.is_contiguous())
      << what << ": expected a contiguous 2-D matrix, got " << w.data.shape().to_string();
  MOE_CHECK(w.layout == ops::WeightLayout::kRowMajor)
      << what << ": the weight is in the grouped MoE kernels' packed layout (set by "
      << "prepare_experts); only moe_experts on the grouped path reads such weights";
  WeightArgs a;
  a.data = w.data.raw();
  a.N = w.rows();
  a.K = w.cols();
  switch (w.format) {
    case ops::WeightFormat::kDense:
      a.wt = weight_type(w.data.dtype(), what);
      return a;
    case ops::WeightFormat::kFp8Block: {
      MOE_CHECK(w.data.dtype() == DType::kF8E4M3)
          << what << ": FP8 block codes must be F8_E4M3, got " << dtype_name(w.data.dtype());
      MOE_CHECK(w.block > 0) << what << ": FP8 block edge " << w.block;
      const int64_t rows = ceil_div(a.N, w.block), cols = ceil_div(a.K, w.block);
      MOE_CHECK(w.scale.dtype() == DType::kF32 && w.scale.rank() == 2 && w.scale.is_contiguous() &&
                w.scale.dim(0) == rows && w.scale.dim(1) == cols)
          << what << ": FP8 block scale must be contiguous F32 [" << rows << ", " << cols
          << "] for " << w.data.shape().to_string() << " and block " << w.block << ", got "
          << dtype_name(w.scale.dtype()) << " " << w.scale.shape().to_string();
      a.wt = kWFp8Block;
      a.scale = w.scale.raw();
      a.block = w.block;
      return a;
    }
    case ops::WeightFormat::kNvfp4:
      MOE_CHECK(w.data.dtype() == DType::kU8)
          << what << ": NVFP4 packed codes must be U8, got " << dtype_name(w.data.dtype());
      MOE_CHECK(a.K % 16 == 0) << what << ": NVFP4 K = " << a.K << " is not a multiple of 16";
      MOE_CHECK(w.scale.dtype() == DType::kF8E4M3 && w.scale.rank() == 2 &&
                w.scale.is_contiguous() && w.scale.dim(0) == a.N && w.scale.dim(1) == a.K / 16)
          << what << ": NVFP4 scale must be contiguous F8_E4M3 [" << a.N << ", " << a.K / 16
          << "], got " << dtype_name(w.scale.dtype()) << " " << w.scale.shape().to_string();
      a.wt = kWNvfp4;
      a.scale = w.scale.raw();
      a.global_scale = w.global_scale;
      return a;
  }
  MOE_CHECK(false) << what << ": unknown weight format " << static_cast<int>(w.format);
  return a;
}

// The dense matrix of a weight (ops that take only dense weights).
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
