// Helpers for CUDA backend tests: a device + CudaOps + device arena, host<->device tensor
// copies, poisoned outputs, and the relative error the tolerances in docs/cuda-backend.md use.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_arena.h"
#include "backends/cuda/device_info.h"
#include "core/half.h"

namespace moe::cuda::testing {

// The device the tests use, or nullptr (with the reason in *why) when none is usable.
inline std::unique_ptr<CudaOps> make_cuda_ops(std::string* why) {
  auto n = cuda_device_count();
  if (!n.ok() || *n == 0) {
    *why = n.ok() ? "no CUDA device" : n.status().to_string();
    return nullptr;
  }
  auto info = query_device(0);
  if (!info.ok()) {
    *why = info.status().to_string();
    return nullptr;
  }
  return std::make_unique<CudaOps>(*info);
}

inline bool require_gpu() {
  const char* v = std::getenv("MOE_REQUIRE_GPU");
  return v && std::string(v) == "1";
}

#define MOE_GPU_OR_SKIP(ops_ptr)                               \
  do {                                                         \
    std::string why_;                                          \
    ops_ptr = ::moe::cuda::testing::make_cuda_ops(&why_);      \
    if (!ops_ptr) {                                            \
      if (::moe::cuda::testing::require_gpu()) FAIL() << why_; \
      GTEST_SKIP() << why_;                                    \
    }                                                          \
  } while (0)

inline Tensor randn(Shape s, uint32_t seed, float scale = 1.f) {
  Tensor t = Tensor::empty(s, DType::kF32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(rng);
  return t;
}

// f32 -> f16, round to nearest even; normal range only (test data is O(1)).
inline uint16_t to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  uint32_t mant = u & 0x7fffffu;
  if (exp <= 0) return static_cast<uint16_t>(sign);  // flush tiny values
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(h);
}

// f32 values rounded to `dt` and stored as `dt`.
inline Tensor cast(const Tensor& f, DType dt) {
  if (dt == DType::kF32) return f;
  Tensor t = Tensor::empty(f.shape(), dt);
  for (int64_t i = 0; i < f.numel(); ++i) {
    const float v = f.data<float>()[i];
    t.data<uint16_t>()[i] = dt == DType::kBF16 ? f32_to_bf16(v) : to_f16(v);
  }
  return t;
}

inline Tensor i32(const std::vector<int32_t>& v, Shape s) {
  Tensor t = Tensor::empty(s, DType::kI32);
  std::memcpy(t.data<int32_t>(), v.data(), v.size() * 4);
  return t;
}

// Max |a - b| / max |b| over two f32 tensors; +inf if `a` has a NaN where `b` has none.
inline double rel_error(const Tensor& a, const Tensor& b) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isnan(x) && !std::isnan(y)) return INFINITY;
    err = std::max(err, std::fabs(x - y));
    scale = std::max(scale, std::fabs(y));
  }
  return err / std::max(scale, 1e-30);
}

// Device tensors for one test: uploads, poisoned outputs, downloads.
class DeviceTensors {
 public:
  explicit DeviceTensors(CudaOps& ops) : ops_(ops), arena_(ops.device().ordinal, ops.stream()) {}
  // A device copy of a host tensor.
  TensorView to_device(const Tensor& h) {
    keep_.push_back(h);  // the copy is asynchronous: keep the source alive
    TensorView d = arena_.alloc(h.shape(), h.dtype());
    ops_.copy_from_host(d, h.data<std::byte>());
    return d;
  }
  // An output filled with NaN (f32) or 0x7f7f7f7f (i32), so unwritten elements show.
  TensorView poisoned(Shape s, DType dt) {
    Tensor h = Tensor::empty(s, dt);
    std::memset(h.data<std::byte>(), dt == DType::kF32 ? 0xff : 0x7f, h.nbytes());
    return to_device(h);
  }
  Tensor to_host(ConstTensorView d) {
    Tensor h = Tensor::empty(d.shape(), d.dtype());
    ops_.copy_to_host(h.data<std::byte>(), d);
    return h;
  }

 private:
  CudaOps& ops_;
  DeviceArena arena_;
  std::vector<Tensor> keep_;
};

}  // namespace moe::cuda::testing
