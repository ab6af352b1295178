#include "backends/cuda/decode_graph_runner.h"

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"

namespace moe::cuda {
namespace {

// True when a sample call's draw depends on its step counter (a row with a temperature and
// top_k != 1; CudaOps samples the others by argmax). CudaOps::sample passes the counters in
// the kernel parameters, so a captured launch would replay the capture's counter: such calls
// are kept out of the graph and launched after each replay (SampleCall).
bool step_dependent(std::span<const ops::SamplingParams> params) {
  for (const auto& p : params)
    if (!(p.temperature <= 0.f || p.top_k == 1)) return true;  // the kernel's greedy test
  return false;
}

// A sample call kept out of the graph, with copies of its per-row arguments.
struct SampleCall {
  TensorView out;
  ConstTensorView logits;
  std::vector<ops::SamplingParams> params;
  std::vector<uint64_t> steps;

  static SampleCall of(TensorView out, ConstTensorView logits,
                       std::span<const ops::SamplingParams> params,
                       std::span<const uint64_t> steps) {
    return {out, logits, {params.begin(), params.end()}, {steps.begin(), steps.end()}};
  }
  void run(CudaOps& ops) const { ops.sample(out, logits, params, steps); }
};

// The host side of a captured step: copy_from_host writes into the captured staging in order
// (checked against the captured destination and size); every other op does nothing.
class RefreshOps final : public ops::Ops {
 public:
  explicit RefreshOps(const std::vector<CudaOps::CapturedCopy>& copies) : copies_(copies) {}
  size_t copies_made() const { return next_; }

  std::string_view name() const override { return "cuda-graph-refresh"; }
  Tensor allocate(Shape, DType, bool) override {
    MOE_CHECK(false) << "a captured decode step must not allocate (allocate called on refresh)";
    return Tensor();
  }
  Tensor upload(const Tensor&) override {
    MOE_CHECK(false) << "a captured decode step must not upload (upload called on refresh)";
    return Tensor();
  }
  void copy_from_host(TensorView dst, const void* src) override {
    const size_t n = dst.nbytes();
    if (n == 0) return;
    MOE_CHECK(next_ < copies_.size())
        << "graph refresh: the step makes more host-to-device copies than the captured one ("
        << copies_.size() << "); keep the step's shapes fixed for a key";
    const CudaOps::CapturedCopy& c = copies_[next_];
    MOE_CHECK(c.dst == dst.raw() && c.bytes == n)
        << "graph refresh: copy #" << next_ << " goes to " << dst.raw() << " (" << n
        << " bytes) but the captured step copied " << c.bytes << " bytes to " << c.dst
        << "; keep the step's shapes (page-table width, token count) fixed for a key";
    std::memcpy(c.staging, src, n);
    ++next_;
  }
  void copy_to_host(void*, ConstTensorView) override {
    MOE_CHECK(false) << "a captured decode step must not read device memory on the host";
  }
  void embed(TensorView, ConstTensorView, ConstTensorView) override {}
  void linear(TensorView, ConstTensorView, const ops::Weight&) override {}
  void rms_norm(TensorView, ConstTensorView, ConstTensorView, float) override {}
  void layer_norm(TensorView, ConstTensorView, ConstTensorView, ConstTensorView, float) override {}
  void add_inplace(TensorView, ConstTensorView) override {}
  void scale_inplace(TensorView, float) override {}
  void rope(TensorView, ConstTensorView, const ops::RopeParams&) override {}
  void silu_mul(TensorView, ConstTensorView, ConstTensorView) override {}
  void cache_write(ops::PagedCacheView, ConstTensorView, const ops::BatchLayout&) override {}
  void dsa_index_topk(TensorView, ConstTensorView, ConstTensorView, ops::PagedCacheView,
                      const ops::BatchLayout&) override {}
  void mla_attention(TensorView, ConstTensorView, ops::PagedCacheView, ConstTensorView,
                     ConstTensorView, const ops::BatchLayout&, const ops::MlaParams&) override {}
  void moe_route(TensorView, TensorView, ConstTensorView, ConstTensorView,
                 const ops::MoeRouteParams&) override {}
  void moe_experts(TensorView, ConstTensorView, ConstTensorView, ConstTensorView,
                   std::span<const ops::ExpertWeights>, const ops::ExpertWeights*) override {}
  // Sample call number `deferred_index` was kept out of the graph at capture: it is returned
  // by deferred() to be launched after the replay. The others are in the graph, valid only
  // while they stay independent of the step counter.
  void sample(TensorView out, ConstTensorView logits, std::span<const ops::SamplingParams> params,
              std::span<const uint64_t> steps) override {
    if (samples_++ == deferred_index_) {
      deferred_.push_back(SampleCall::of(out, logits, params, steps));
      return;
    }
    MOE_CHECK(!step_dependent(params))
        << "graph refresh: the step samples with a temperature where the captured step sampled "
           "greedily; use another key for another sampling mode";
  }
  void set_deferred_index(int i) { deferred_index_ = i; }
  const std::vector<SampleCall>& deferred() const { return deferred_; }

 private:
  const std::vector<CudaOps::CapturedCopy>& copies_;
  size_t next_ = 0;
  int samples_ = 0, deferred_index_ = -1;
  std::vector<SampleCall> deferred_;
};

// The step while it is captured: every op goes to the CudaOps (and into the graph), except a
// step-dependent sample call, which is kept for run() to launch after the replay. No op may
// follow such a call (the graph would read an id that is not sampled yet).
class CaptureOps final : public ops::Ops {
 public:
  explicit CaptureOps(CudaOps& base) : b_(base) {}
  const std::vector<SampleCall>& deferred() const { return deferred_; }
  int deferred_index() const { return deferred_index_; }  // -1: none

  std::string_view name() const override { return b_.name(); }
  Tensor allocate(Shape s, DType d, bool z) override { return b_.allocate(s, d, z); }
  Tensor upload(const Tensor& h) override { return b_.upload(h); }
  void copy_from_host(TensorView dst, const void* src) override {
    no_sample_yet();
    b_.copy_from_host(dst, src);
  }
  void copy_to_host(void* dst, ConstTensorView src) override { b_.copy_to_host(dst, src); }
  void embed(TensorView y, ConstTensorView ids, ConstTensorView table) override {
    no_sample_yet();
    b_.embed(y, ids, table);
  }
  void linear(TensorView y, ConstTensorView x, const ops::Weight& w) override {
    no_sample_yet();
    b_.linear(y, x, w);
  }
  void rms_norm(TensorView y, ConstTensorView x, ConstTensorView g, float eps) override {
    no_sample_yet();
    b_.rms_norm(y, x, g, eps);
  }
  void layer_norm(TensorView y, ConstTensorView x, ConstTensorView g, ConstTensorView beta,
                  float eps) override {
    no_sample_yet();
    b_.layer_norm(y, x, g, beta, eps);
  }
  void add_inplace(TensorView y, ConstTensorView x) override {
    no_sample_yet();
    b_.add_inplace(y, x);
  }
  void scale_inplace(TensorView y, float s) override {
    no_sample_yet();
    b_.scale_inplace(y, s);
  }
  void rope(TensorView x, ConstTensorView pos, const ops::RopeParams& p) override {
    no_sample_yet();
    b_.rope(x, pos, p);
  }
  void silu_mul(TensorView y, ConstTensorView g, ConstTensorView u) override {
    no_sample_yet();
    b_.silu_mul(y, g, u);
  }
  void cache_write(ops::PagedCacheView c, ConstTensorView src, const ops::BatchLayout& l) override {
    no_sample_yet();
    b_.cache_write(c, src, l);
  }
  void dsa_index_topk(TensorView out, ConstTensorView q, ConstTensorView w, ops::PagedCacheView k,
                      const ops::BatchLayout& l) override {
    no_sample_yet();
    b_.dsa_index_topk(out, q, w, k, l);
  }
  void mla_attention(TensorView out, ConstTensorView q, ops::PagedCacheView c, ConstTensorView kv_b,
                     ConstTensorView sel, const ops::BatchLayout& l,
                     const ops::MlaParams& p) override {
    no_sample_yet();
    b_.mla_attention(out, q, c, kv_b, sel, l, p);
  }
  void moe_route(TensorView ids, TensorView w, ConstTensorView logits, ConstTensorView bias,
                 const ops::MoeRouteParams& p) override {
    no_sample_yet();
    b_.moe_route(ids, w, logits, bias, p);
  }
  void moe_experts(TensorView y, ConstTensorView x, ConstTensorView ids, ConstTensorView w,
                   std::span<const ops::ExpertWeights> e,
                   const ops::ExpertWeights* shared) override {
    no_sample_yet();
    b_.moe_experts(y, x, ids, w, e, shared);
  }
  void sample(TensorView out, ConstTensorView logits, std::span<const ops::SamplingParams> params,
              std::span<const uint64_t> steps) override {
    no_sample_yet();
    if (step_dependent(params)) {
      deferred_.push_back(SampleCall::of(out, logits, params, steps));
      deferred_index_ = samples_;
    } else {
      b_.sample(out, logits, params, steps);
    }
    ++samples_;
  }
  void trace(ConstTensorView t, std::string_view name, int layer) override {
    b_.trace(t, name, layer);
  }

 private:
  void no_sample_yet() const {
    MOE_CHECK(deferred_.empty()) << "a captured decode step runs an op after a sample with a "
                                    "temperature; sampling must be the step's last op";
  }
  CudaOps& b_;
  std::vector<SampleCall> deferred_;
  int samples_ = 0, deferred_index_ = -1;
};

}  // namespace

DecodeGraphRunner::DecodeGraphRunner(CudaOps& ops, DeviceArena& ws) : ops_(ops), ws_(ws) {
  cudaEvent_t ev = nullptr;
  MOE_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "DecodeGraphRunner");
  replay_done_ = ev;
}

DecodeGraphRunner::~DecodeGraphRunner() {
  ops_.synchronize();
  entries_.clear();
  ops_.release_capture_staging();
  cudaEventDestroy(static_cast<cudaEvent_t>(replay_done_));
}

bool DecodeGraphRunner::captured(int64_t key) const {
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.graph != nullptr;
}

void DecodeGraphRunner::reset() {
  ops_.synchronize();
  entries_.clear();
  ops_.release_capture_staging();
  replay_recorded_ = false;
}

void DecodeGraphRunner::drop_graphs_if_arenas_grew() {
  if (ws_.growths() == ws_growths_ && ops_.scratch_growths() == scratch_growths_) return;
  ops_.synchronize();
  for (auto& [key, e] : entries_) {
    e.graph.reset();
    e.copies.clear();
  }
  ops_.release_capture_staging();
  replay_recorded_ = false;
}

void DecodeGraphRunner::launch(Entry& e) {
  e.graph->replay(ops_);
  MOE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(replay_done_), ops_.stream()),
                 "graph replay");
  replay_recorded_ = true;
}

void DecodeGraphRunner::replay(int64_t key) {
  auto it = entries_.find(key);
  MOE_CHECK(it != entries_.end() && it->second.graph) << "no graph captured for key " << key;
  launch(it->second);
}

Status DecodeGraphRunner::run(int64_t key, const StepFn& step) {
  drop_graphs_if_arenas_grew();
  Entry& e = entries_[key];
  if (!e.warmed) {  // eager: sizes the arenas for this shape
    last_mode_ = Mode::kEager;
    Status st = step(ops_);
    if (st.ok()) e.warmed = true;
    return st;
  }
  if (!e.graph) {  // capture (no kernel runs), then replay the captured step
    ws_.reset();   // merge the arenas' blocks now: a reset while capturing cannot
    ops_.settle_scratch();
    auto graph = std::make_unique<CudaGraph>();
    graph->begin_capture(ops_);
    ops_.begin_copy_record();
    CaptureOps capture(ops_);
    Status st = step(capture);
    std::vector<CudaOps::CapturedCopy> copies = ops_.end_copy_record();
    graph->end_capture(ops_);
    if (!st.ok()) return st;
    e.graph = std::move(graph);
    e.copies = std::move(copies);
    e.deferred_sample = capture.deferred_index();
    ws_growths_ = ws_.growths();
    scratch_growths_ = ops_.scratch_growths();
    last_mode_ = Mode::kCaptured;
    launch(e);
    for (const SampleCall& c : capture.deferred()) c.run(ops_);
    return Status();
  }
  // Refresh: the previous replay must have consumed the staging before it is rewritten.
  if (replay_recorded_)
    MOE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(replay_done_)), "graph refresh");
  RefreshOps refresh(e.copies);
  refresh.set_deferred_index(e.deferred_sample);
  Status st = step(refresh);
  if (!st.ok()) return st;
  MOE_CHECK(refresh.copies_made() == e.copies.size())
      << "graph refresh: the step made " << refresh.copies_made()
      << " host-to-device copies, the captured one " << e.copies.size();
  MOE_CHECK(refresh.deferred().size() == (e.deferred_sample >= 0 ? 1u : 0u))
      << "graph refresh: the step's sample calls differ from the captured step's";
  last_mode_ = Mode::kReplayed;
  launch(e);
  for (const SampleCall& c : refresh.deferred()) c.run(ops_);
  return Status();
}

}  // namespace moe::cuda
