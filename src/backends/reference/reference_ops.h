// ReferenceOps: the scalar CPU implementation of the Ops contract, the oracle every other
// backend is tested against. Obvious code, fp32 activations, double accumulation in dot
// products, threads over rows/heads/tokens. Scratch memory is allocated per call: this backend
// is for tiny models and tests, not for serving.
#pragma once

#include <functional>
#include <string_view>

#include "core/thread_pool.h"
#include "ops/ops.h"

namespace moe::reference {

class ReferenceOps : public ops::Ops {  // not final: tests record calls through a subclass
 public:
  using TraceSink = std::function<void(ConstTensorView, std::string_view, int)>;
  // `pool` must outlive this object. Not thread-safe: one forward at a time.
  explicit ReferenceOps(ThreadPool& pool) : pool_(pool) {}
  void set_trace_sink(TraceSink sink) { trace_ = std::move(sink); }

  std::string_view name() const override { return "reference"; }
  Tensor allocate(Shape shape, DType dtype, bool zero) override {
    return zero ? Tensor::zeros(shape, dtype) : Tensor::empty(shape, dtype);
  }
  Tensor upload(const Tensor& host) override { return host; }
  void copy_from_host(TensorView dst, const void* src) override;
  void copy_to_host(void* dst, ConstTensorView src) override;
  void embed(TensorView y, ConstTensorView ids, ConstTensorView table) override;
  void linear(TensorView y, ConstTensorView x, const ops::Weight& w) override;
  void rms_norm(TensorView y, ConstTensorView x, ConstTensorView gamma, float eps) override;
  void layer_norm(TensorView y, ConstTensorView x, ConstTensorView gamma, ConstTensorView beta,
                  float eps) override;
  void add_inplace(TensorView y, ConstTensorView x) override;
  void scale_inplace(TensorView y, float s) override;
  void rope(TensorView x, ConstTensorView positions, const ops::RopeParams& p) override;
  void silu_mul(TensorView y, ConstTensorView gate, ConstTensorView up) override;
  void cache_write(ops::PagedCacheView cache, ConstTensorView src,
                   const ops::BatchLayout& b) override;
  void dsa_index_topk(TensorView out, ConstTensorView q, ConstTensorView w,
                      ops::PagedCacheView k_cache, const ops::BatchLayout& b) override;
  void mla_attention(TensorView out, ConstTensorView q, ops::PagedCacheView latent_cache,
                     ConstTensorView kv_b, ConstTensorView selected, const ops::BatchLayout& b,
                     const ops::MlaParams& p) override;
  void moe_route(TensorView ids, TensorView weights, ConstTensorView logits, ConstTensorView bias,
                 const ops::MoeRouteParams& p) override;
  void moe_experts(TensorView y, ConstTensorView x, ConstTensorView ids, ConstTensorView weights,
                   std::span<const ops::ExpertWeights> experts,
                   const ops::ExpertWeights* shared) override;
  void sample(TensorView out, ConstTensorView logits, std::span<const ops::SamplingParams> params,
              std::span<const uint64_t> steps) override;
  void trace(ConstTensorView t, std::string_view name, int layer) override {
    if (trace_) trace_(t, name, layer);
  }

 private:
  ThreadPool& pool_;
  TraceSink trace_;
};

}  // namespace moe::reference
