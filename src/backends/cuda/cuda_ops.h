// CudaOps: the CUDA implementation of the Ops contract. F32 activations, BF16/F16/F32 weights
// as stored in the checkpoint; every op is a launch on the backend's stream, validated on the
// host and never synchronising, so a whole forward can be captured in a CUDA graph
// (see CudaGraph). Op-internal temporaries come from a device scratch arena that grows only
// on the first call of a larger size (run a step eagerly before capturing one).
// Not thread-safe: one forward at a time per CudaOps.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda/device_arena.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/kernels/kernel_types.h"
#include "ops/ops.h"

namespace moe::cuda {

class MoeTuneCache;     // backends/cuda/moe_config/moe_config.h
class CublasLtGemm;     // backends/cuda/cublaslt_gemm.h
struct LinearParams;    // backends/cuda/kernels/linear/linear.h
struct GroupedExperts;  // backends/cuda/kernels/moe_grouped/moe_grouped_experts.h

class CudaOps final : public ops::Ops {
 public:
  using TraceSink = std::function<void(ConstTensorView, std::string_view, int)>;
  // Creates a non-blocking stream on device `info.ordinal`.
  explicit CudaOps(const DeviceInfo& info);
  ~CudaOps() override;
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  const DeviceInfo& device() const { return info_; }
  Stream stream() const { return stream_; }
  // Waits for all work on the stream.
  void synchronize();
  // Debug: named intermediates (device views) go to `sink`, which may copy_to_host them.
  void set_trace_sink(TraceSink sink) { trace_ = std::move(sink); }
  // MoE launch configurations measured by `moengine tune-moe`: the grouped experts take
  // cache->select(device, shape) (entries missing or not fitting this device: the heuristic).
  // Null (the default): moe_heuristic_config only. Set between steps: a captured graph keeps
  // the configurations it was captured with. The cache is immutable and may be shared.
  void set_moe_tune_cache(std::shared_ptr<const MoeTuneCache> cache) {
    moe_tune_ = std::move(cache);
  }
  // FP8 block-128 experts on the warpgroup-MMA GEMM take E4M3 activations per (row, 128 k)
  // (GroupedLaunch::fp8_act, faster prefill; the default) or F16 ones (false: closer to the f32
  // reference); so do NVFP4 experts on the warpgroup-MMA launch, their weights then rounded to
  // E4M3 too (GroupedLaunch::nvfp4_f8; false: F16 weights and activations). Set between steps,
  // like the tune cache.
  void set_moe_fp8_activations(bool on) { moe_fp8_act_ = on; }
  // Reads a tune cache for device `d` (host only, no GPU needed). Errors (missing file, not
  // JSON, a version other than 1, bad fields) say what to do; `warnings` gets a line per entry
  // for `d` that does not fit it and one if no entry is for `d` (those shapes use the heuristic).
  static Result<std::shared_ptr<const MoeTuneCache>> load_moe_tune_cache(
      const std::string& path, const DeviceInfo& d, std::vector<std::string>* warnings);
  // The small-M linear limit from MOE_LINEAR_GEMV_MAX_M's value (`value` null: unset): an integer
  // 0..kLinearGemvMaxM; unset or anything else gives kDefaultLinearGemvMaxM, and for anything
  // else `warning` gets a line naming the variable, the value, the range and the default. Pure
  // (no GPU); the constructor reads the variable once and prints the warning to stderr.
  static constexpr int64_t kDefaultLinearGemvMaxM = 4;
  static int64_t parse_linear_gemv_max_m(const char* value, std::string* warning);
  // Bytes of host staging held for captured graphs' host-to-device copies; release when no
  // captured graph that used them will be replayed again.
  size_t capture_staging_used() const { return staging_used_; }
  void release_capture_staging() { staging_used_ = 0; }
  // A host-to-device copy made while the stream was captured: the graph's memcpy node reads
  // `staging` (pinned, owned by this CudaOps) into `dst`. Rewriting the staging bytes before a
  // replay makes the replay copy new data (DecodeGraphRunner).
  struct CapturedCopy {
    void* dst = nullptr;
    void* staging = nullptr;
    size_t bytes = 0;
  };
  // Between begin_copy_record() and end_copy_record(), captured copy_from_host calls are listed.
  void begin_copy_record() {
    recorded_.clear();
    recording_ = true;
  }
  std::vector<CapturedCopy> end_copy_record() {
    recording_ = false;
    return std::move(recorded_);
  }
  // cudaMallocs made by the op scratch arena; a growth invalidates graphs captured before it.
  int scratch_growths() const { return scratch_.growths(); }
  // linear calls that went through cuBLASLt (dense BF16/F16, K % 128 == 0); tests check the path.
  int64_t linear_cublaslt_calls() const { return linear_cublaslt_calls_; }
  // Between steps, before a capture: merges the scratch arena's blocks into one now (a merge
  // cannot happen while capturing, and a later one would free memory a graph uses).
  void settle_scratch() { scratch_.reset(); }

  std::string_view name() const override { return "cuda"; }
  Tensor allocate(Shape shape, DType dtype, bool zero) override;
  Tensor upload(const Tensor& host) override;
  void copy_from_host(TensorView dst, const void* src) override;
  void copy_to_host(void* dst, ConstTensorView src) override;
  // Experts the grouped path takes (BF16, FP8 block, NVFP4): data (and NVFP4 scales) rearranged
  // in place into the packed layout (ops::WeightLayout::kPacked,
  // kernels/moe_grouped/dequant_bits.h); others unchanged.
  // Synchronises the stream (load time only).
  // FP8 experts: also the tensor maps of their weights (the warpgroup-MMA GEMM's TMA loads),
  // for the routed table and the shared expert alone (expert_tmaps).
  void prepare_experts(std::span<ops::ExpertWeights> experts, ops::ExpertWeights* shared,
                       int64_t D) override;
  // Device tensor maps prepare_experts built for exactly this expert table (grouped_tmap_key), or
  // null (then the warpgroup-MMA GEMM copies weights by cp.async).
  const void* expert_tmaps(const GroupedExperts& ge) const;
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
  bool capturing() const;
  // linear for FP8 block / NVFP4 weights via BF16 dequantization + cuBLASLt (false: not taken).
  bool linear_quantized_cublaslt(const LinearParams& p);
  // Scratch for one op call: valid until the next op starts (stream order protects reuse).
  TensorView scratch(Shape shape, DType dtype) { return scratch_.alloc(shape, dtype); }
  void begin_op() {
    if (!in_composite_) scratch_.reset();
  }
  // y += S(x) for a shared expert the grouped kernels do not take, through linear / silu_mul /
  // add_inplace, with its temporaries in the scratch of the calling op (moe_experts).
  void shared_expert_add(TensorView y, ConstTensorView x, const ops::ExpertWeights& s);
  // Host bytes -> pinned ring -> async copy on the stream (eager copy_from_host).
  void* stage_h2d(const void* src, size_t n);
  void h2d_sync(void* dst, const void* src, size_t n);

  DeviceInfo info_;
  Stream stream_ = nullptr;
  DeviceArena scratch_;
  // While an op runs other ops (shared_expert_add): their begin_op keeps the caller's scratch.
  bool in_composite_ = false;
  TraceSink trace_;
  std::shared_ptr<const MoeTuneCache> moe_tune_;  // null: heuristic MoE launch configs
  bool moe_fp8_act_ = true;                       // set_moe_fp8_activations
  // prepare_experts' tensor maps per expert table (key: grouped_tmap_key).
  struct ExpertTmaps {
    std::vector<uintptr_t> key;
    Tensor maps;
  };
  std::vector<ExpertTmaps> expert_tmaps_;
  // Pinned host staging for copy_from_host while the stream is being captured.
  void* staging_ = nullptr;
  size_t staging_size_ = 0, staging_used_ = 0;
  bool recording_ = false;
  std::vector<CapturedCopy> recorded_;
  // Eager copies: pageable host memory is never handed to CUDA directly, so copy_from_host is
  // truly asynchronous. H2D goes through a pinned ring of two halves;
  // a half is refilled only after the event recorded when it was left has completed.
  void* ring_ = nullptr;
  size_t ring_half_ = 0, ring_off_ = 0;
  int ring_cur_ = 0;
  void* ring_event_[2] = {nullptr, nullptr};  // cudaEvent_t
  bool ring_event_recorded_[2] = {false, false};
  void* bounce_ = nullptr;  // pinned, for synchronous copies (copy_to_host, upload)
  size_t bounce_size_ = 0;
  // cuBLASLt for linear with dense BF16/F16 weights: handle, fixed workspace, cached plans;
  // made in the constructor, destroyed in the destructor.
  std::unique_ptr<CublasLtGemm> gemm_;
  int64_t linear_cublaslt_calls_ = 0;
  // Largest M the small-M FP8 / NVFP4 kernel takes (above: dequantize + cuBLASLt, or the tile
  // kernel); MOE_LINEAR_GEMV_MAX_M overrides it (docs/env.md).
  int64_t linear_gemv_max_m_ = kDefaultLinearGemvMaxM;
};

}  // namespace moe::cuda
