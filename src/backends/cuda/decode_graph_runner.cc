#include "backends/cuda/decode_graph_runner.h"

#include <cstring>
#include <string>

#include "backends/cuda/cuda_check.h"

namespace moe::cuda {
namespace {

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
                   std::span<const ops::ExpertWeights>) override {}
  void sample(TensorView, ConstTensorView, std::span<const ops::SamplingParams>,
              std::span<const uint64_t>) override {}

 private:
  const std::vector<CudaOps::CapturedCopy>& copies_;
  size_t next_ = 0;
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
    Status st = step(ops_);
    std::vector<CudaOps::CapturedCopy> copies = ops_.end_copy_record();
    graph->end_capture(ops_);
    if (!st.ok()) return st;
    e.graph = std::move(graph);
    e.copies = std::move(copies);
    ws_growths_ = ws_.growths();
    scratch_growths_ = ops_.scratch_growths();
    last_mode_ = Mode::kCaptured;
    launch(e);
    return Status();
  }
  // Refresh: the previous replay must have consumed the staging before it is rewritten.
  if (replay_recorded_)
    MOE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(replay_done_)), "graph refresh");
  RefreshOps refresh(e.copies);
  Status st = step(refresh);
  if (!st.ok()) return st;
  MOE_CHECK(refresh.copies_made() == e.copies.size())
      << "graph refresh: the step made " << refresh.copies_made()
      << " host-to-device copies, the captured one " << e.copies.size();
  last_mode_ = Mode::kReplayed;
  launch(e);
  return Status();
}

}  // namespace moe::cuda
