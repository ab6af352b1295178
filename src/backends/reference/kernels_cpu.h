// Small scalar helpers shared by the reference ops: element loads of any float dtype,
// dot products with double accumulation, and paged-cache addressing.
#pragma once

#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "ops/ops.h"

namespace moe::reference {

// Loads element i of a contiguous run of `dt` values as f32.
inline float load_f32(const void* p, DType dt, int64_t i) {
  switch (dt) {
    case DType::kF32:
      return static_cast<const float*>(p)[i];
    case DType::kBF16:
      return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::kF16:
      return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default:
      MOE_CHECK(false) << "unsupported float dtype " << dtype_name(dt);
  }
  return 0.f;
}

// sum_k x[k] * w[k] with w a contiguous row of dtype dt.
inline double dot_row(const float* x, const void* w, DType dt, int64_t n) {
  double acc = 0.0;
  switch (dt) {
    case DType::kF32: {
      const float* p = static_cast<const float*>(w);
      for (int64_t k = 0; k < n; ++k) acc += static_cast<double>(x[k]) * p[k];
      break;
    }
    case DType::kBF16: {
      const uint16_t* p = static_cast<const uint16_t*>(w);
      for (int64_t k = 0; k < n; ++k) acc += static_cast<double>(x[k]) * bf16_to_f32(p[k]);
      break;
    }
    case DType::kF16: {
      const uint16_t* p = static_cast<const uint16_t*>(w);
      for (int64_t k = 0; k < n; ++k) acc += static_cast<double>(x[k]) * f16_to_f32(p[k]);
      break;
    }
    default:
      MOE_CHECK(false) << "unsupported weight dtype " << dtype_name(dt);
  }
  return acc;
}

inline double dot_f32(const float* a, const float* b, int64_t n) {
  double acc = 0.0;
  for (int64_t k = 0; k < n; ++k) acc += static_cast<double>(a[k]) * b[k];
  return acc;
}

// Row n of a weight in any format, dequantized to f32 (out has w.cols() entries).
void weight_row_f32(const ops::Weight& w, int64_t n, float* out);

// A contiguous 2-D weight converted to f32 ([rows, cols]).
std::vector<float> to_f32(ConstTensorView w);

// Pointer to the cached vector of (sequence s, position p).
inline float* cache_slot(const ops::PagedCacheView& c, const ops::BatchLayout& b, int64_t s,
                         int64_t p) {
  const int32_t* pt = b.page_table.data<int32_t>();
  int64_t max_pages = b.page_table.dim(1);
  int64_t page_idx = p / b.page_size;
  MOE_CHECK(page_idx < max_pages) << "position " << p << " beyond the page table";
  int32_t page = pt[s * max_pages + page_idx];
  MOE_CHECK(page >= 0 && page < c.data.dim(0)) << "bad page id " << page;
  return c.data.data<float>() + (page * b.page_size + p % b.page_size) * c.data.dim(2);
}

// Checks a view is F32 with the given rank and a contiguous innermost dimension.
void check_f32(ConstTensorView v, int rank, const char* what);

}  // namespace moe::reference
