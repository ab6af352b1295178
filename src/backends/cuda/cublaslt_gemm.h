// CublasLtGemm: y = x · w^T through cuBLASLt for dense BF16/F16 weights, x already in the weight's
// dtype, f32 output and accumulation (CUBLAS_COMPUTE_32F). One handle and one fixed workspace per
// CudaOps, made at construction, so enqueueing allocates nothing and never synchronises (graph
// capturable). Plain C++ header: no cuBLAS types leak out of this file's .cc.
// Not thread-safe: one instance per CudaOps stream.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

struct LtGemmArgs {
  float* y = nullptr;  // [M, N] f32, row stride y_stride
  int64_t y_stride = 0;
  const void* x = nullptr;  // [M, K] dtype wt, row stride x_stride
  int64_t x_stride = 0;
  const void* w = nullptr;  // [N, K] contiguous, dtype wt
  int wt = kWBF16;          // kWBF16 or kWF16
  int64_t M = 0, N = 0, K = 0;
  float alpha = 1.f;  // y = alpha * x . w^T
};

class CublasLtGemm {
 public:
  // Creates the handle and a `workspace_bytes` device workspace on `device` (current device set).
  CublasLtGemm(int device, size_t workspace_bytes);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Whether cuBLASLt has an algorithm for this problem (shape, dtype, strides, pointer
  // alignment). The first call per problem builds and caches its plan (descriptors, layouts, the
  // heuristic's first algorithm); later calls are a map lookup. Host only, capture-safe.
  bool supports(const LtGemmArgs& a);
  // Enqueues the GEMM on `stream`; `supports(a)` must be true. Uses only the preallocated
  // workspace, so it can be captured in a CUDA graph. Deterministic for a given plan.
  void matmul(const LtGemmArgs& a, Stream stream);
  // Plans cached so far (tests, diagnostics).
  size_t plans() const { return plans_.size(); }

 private:
  struct Plan;
  // (M, N, K, wt, x_stride, y_stride, alignment of x, w, y in bytes)
  using Key = std::array<int64_t, 9>;
  static Key key_of(const LtGemmArgs& a);
  Plan& plan(const LtGemmArgs& a);

  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace moe::cuda
