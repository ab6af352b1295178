// OpTimerOps: an ops::Ops that forwards every op to a CudaOps and brackets it with CUDA events,
// so an eager step yields the device time of each op (grouped by a label: the op name, and for
// linear the weight format, lm_head apart). Bench-only; the events add a little overhead.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_ops.h"

namespace moe::bench {

class OpTimerOps final : public ops::Ops {
 public:
  OpTimerOps(cuda::CudaOps& ops, int64_t vocab) : ops_(ops), vocab_(vocab) {}
  ~OpTimerOps() override {
    for (auto& r : records_) {
      cudaEventDestroy(r.begin);
      cudaEventDestroy(r.end);
    }
  }
  // Device milliseconds per label, summed over the ops recorded so far (synchronises).
  std::map<std::string, double> totals() {
    ops_.synchronize();
    std::map<std::string, double> t;
    for (auto& r : records_) {
      float ms = 0;
      MOE_CUDA_CHECK(cudaEventElapsedTime(&ms, r.begin, r.end), "op timer");
      t[r.label] += ms;
    }
    return t;
  }

  std::string_view name() const override { return "cuda-op-timer"; }
  Tensor allocate(Shape s, DType dt, bool zero) override { return ops_.allocate(s, dt, zero); }
  Tensor upload(const Tensor& h) override { return ops_.upload(h); }
  void copy_from_host(TensorView dst, const void* src) override {
    Timed t(*this, "copy_from_host");
    ops_.copy_from_host(dst, src);
  }
  void copy_to_host(void* dst, ConstTensorView src) override { ops_.copy_to_host(dst, src); }
  void embed(TensorView y, ConstTensorView ids, ConstTensorView table) override {
    Timed t(*this, "embed");
    ops_.embed(y, ids, table);
  }
  void linear(TensorView y, ConstTensorView x, const ops::Weight& w) override {
    const char* fmt = w.format == ops::WeightFormat::kNvfp4      ? "linear nvfp4"
                      : w.format == ops::WeightFormat::kFp8Block ? "linear fp8"
                                                                 : "linear bf16";
    Timed t(*this, w.rows() == vocab_ ? "linear lm_head" : fmt);
    ops_.linear(y, x, w);
  }
  void rms_norm(TensorView y, ConstTensorView x, ConstTensorView g, float eps) override {
    Timed t(*this, "rms_norm");
    ops_.rms_norm(y, x, g, eps);
  }
  void layer_norm(TensorView y, ConstTensorView x, ConstTensorView g, ConstTensorView b,
                  float eps) override {
    Timed t(*this, "layer_norm");
    ops_.layer_norm(y, x, g, b, eps);
  }
  void add_inplace(TensorView y, ConstTensorView x) override {
    Timed t(*this, "add/scale/silu_mul");
    ops_.add_inplace(y, x);
  }
  void scale_inplace(TensorView y, float s) override {
    Timed t(*this, "add/scale/silu_mul");
    ops_.scale_inplace(y, s);
  }
  void rope(TensorView x, ConstTensorView pos, const ops::RopeParams& p) override {
    Timed t(*this, "rope");
    ops_.rope(x, pos, p);
  }
  void silu_mul(TensorView y, ConstTensorView g, ConstTensorView u) override {
    Timed t(*this, "add/scale/silu_mul");
    ops_.silu_mul(y, g, u);
  }
  void cache_write(ops::PagedCacheView c, ConstTensorView s, const ops::BatchLayout& b) override {
    Timed t(*this, "cache_write");
    ops_.cache_write(c, s, b);
  }
  void dsa_index_topk(TensorView out, ConstTensorView q, ConstTensorView w, ops::PagedCacheView k,
                      const ops::BatchLayout& b) override {
    Timed t(*this, "dsa_index_topk");
    ops_.dsa_index_topk(out, q, w, k, b);
  }
  void mla_attention(TensorView out, ConstTensorView q, ops::PagedCacheView c, ConstTensorView kvb,
                     ConstTensorView sel, const ops::BatchLayout& b,
                     const ops::MlaParams& p) override {
    Timed t(*this, "mla_attention");
    ops_.mla_attention(out, q, c, kvb, sel, b, p);
  }
  void moe_route(TensorView ids, TensorView w, ConstTensorView l, ConstTensorView bias,
                 const ops::MoeRouteParams& p) override {
    Timed t(*this, "moe_route");
    ops_.moe_route(ids, w, l, bias, p);
  }
  void moe_experts(TensorView y, ConstTensorView x, ConstTensorView ids, ConstTensorView w,
                   std::span<const ops::ExpertWeights> e,
                   const ops::ExpertWeights* shared) override {
    Timed t(*this, "moe_experts");
    ops_.moe_experts(y, x, ids, w, e, shared);
  }
  void sample(TensorView out, ConstTensorView l, std::span<const ops::SamplingParams> p,
              std::span<const uint64_t> s) override {
    Timed t(*this, "sample");
    ops_.sample(out, l, p, s);
  }

 private:
  struct Record {
    std::string label;
    cudaEvent_t begin, end;
  };
  struct Timed {
    Timed(OpTimerOps& o, std::string label) : o_(o) {
      Record r{std::move(label), nullptr, nullptr};
      MOE_CUDA_CHECK(cudaEventCreate(&r.begin), "op timer");
      MOE_CUDA_CHECK(cudaEventCreate(&r.end), "op timer");
      MOE_CUDA_CHECK(cudaEventRecord(r.begin, o_.ops_.stream()), "op timer");
      o_.records_.push_back(std::move(r));
      idx_ = o_.records_.size() - 1;
    }
    ~Timed() {
      MOE_CUDA_CHECK(cudaEventRecord(o_.records_[idx_].end, o_.ops_.stream()), "op timer");
    }
    OpTimerOps& o_;
    size_t idx_;
  };
  cuda::CudaOps& ops_;
  int64_t vocab_;
  std::vector<Record> records_;
};

}  // namespace moe::bench
