// CudaOps entries: noaux_tc router, routed experts, sampling.
// Routed experts take the grouped path (kernels/moe_grouped: tokens grouped by expert on the
// device, each touched expert's weights streamed once per token tile) for BF16, FP8 block-128
// and NVFP4 weights; F32/F16 weights and shapes it does not take use the token-major kernels.
// Their launch configuration comes from the MoE tune cache when one is set, else the heuristic.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <cuda_runtime.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernels/moe_experts/moe_experts.h"
#include "backends/cuda/kernels/moe_grouped/dequant_bits.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_experts.h"
#include "backends/cuda/kernels/moe_route/moe_route.h"
#include "backends/cuda/kernels/sample/sample.h"
#include "backends/cuda/moe_config/moe_config.h"
#include "backends/cuda/op_checks.h"

namespace moe::cuda {

Result<std::shared_ptr<const MoeTuneCache>> CudaOps::load_moe_tune_cache(
    const std::string& path, const DeviceInfo& d, std::vector<std::string>* warnings) {
  // MoeTuneCache::load takes a missing file for an empty cache; a file named here must exist.
  if (!std::ifstream(path))
    return not_found("MoE tune cache " + path +
                     " cannot be read; write it with `moengine tune-moe --model-path DIR`");
  auto cache = MoeTuneCache::load(path);  // format errors: version, entries, fields
  if (!cache.ok()) return cache.status();
  // Entries for this device (key prefix "<name>|sm_XY|"; the format is the key's last field)
  // that its limits no longer allow are ignored by select(): say so once here.
  const std::string prefix =
      d.name + "|sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + "|";
  const MoeDeviceLimits lim = moe_limits(d);
  size_t mine = 0;
  for (const std::string& key : cache->keys()) {
    if (key.rfind(prefix, 0) != 0) continue;
    ++mine;
    const std::string fmt_name = key.substr(key.rfind('|') + 1);
    std::optional<GroupedFmt> fmt;
    for (GroupedFmt f : {GroupedFmt::kBf16, GroupedFmt::kFp8Block, GroupedFmt::kNvfp4})
      if (fmt_name == moe_fmt_name(f)) fmt = f;
    const std::optional<MoeKernelConfig> c = cache->find(key);
    if (!fmt || !c || !moe_config_fits(*c, *fmt, lim)) {
      if (warnings)
        warnings->push_back("MoE tune cache " + path + ": entry '" + key + "' does not fit " +
                            describe(d) + (fmt ? "" : " (unknown format)") +
                            "; the heuristic is used for that shape");
    }
  }
  if (mine == 0 && warnings)
    warnings->push_back("MoE tune cache " + path + " has no entry for " + d.name + " sm_" +
                        std::to_string(d.cc_major) + std::to_string(d.cc_minor) + " (" +
                        std::to_string(cache->size()) +
                        " for other GPUs); the heuristic is used; run `moengine tune-moe` on "
                        "this GPU");
  return std::make_shared<const MoeTuneCache>(std::move(cache).value());
}

void CudaOps::moe_route(TensorView ids, TensorView weights, ConstTensorView logits,
                        ConstTensorView bias, const ops::MoeRouteParams& rp) {
  check_f32(logits, 2, "moe_route.logits");
  check_i32(ids, 2, "moe_route.ids");
  check_f32(weights, 2, "moe_route.weights");
  const int64_t T = logits.dim(0), E = logits.dim(1), K = rp.top_k, G = rp.n_group;
  MOE_CHECK(ids.dim(0) == T && ids.dim(1) == K && weights.dim(0) == T && weights.dim(1) == K)
      << "moe_route: ids " << ids.shape().to_string() << " weights " << weights.shape().to_string()
      << " for T " << T << ", K " << K;
  MOE_CHECK(bias.numel() == E && bias.is_contiguous() && G >= 1 && E % G == 0 &&
            rp.topk_group >= 1 && rp.topk_group <= G && K >= 1 && K <= E)
      << "moe_route: E " << E << ", bias " << bias.shape().to_string() << ", n_group " << G
      << ", topk_group " << rp.topk_group << ", top_k " << K;
  begin_op();
  MoeRouteKernelParams p;
  p.ids = ids.data<int32_t>();
  p.ids_stride = ids.stride(0);
  p.weights = weights.data<float>();
  p.weights_stride = weights.stride(0);
  p.logits = logits.data<float>();
  p.logits_stride = logits.stride(0);
  p.bias = bias.raw();
  p.bias_wt = weight_type(bias.dtype(), "moe_route.bias");
  p.T = T;
  p.E = E;
  p.K = K;
  p.n_group = G;
  p.topk_group = rp.topk_group;
  p.norm_topk_prob = rp.norm_topk_prob;
  p.routed_scaling_factor = rp.routed_scaling_factor;
  launch_moe_route(p, stream_);
}

void CudaOps::prepare_experts(std::span<ops::ExpertWeights> experts, ops::ExpertWeights* shared,
                              int64_t D) {
  GroupedExperts ge;
  std::string why;
  if (experts.empty() || !resolve_grouped_experts(experts, D, &ge, &why) || ge.gate_up.packed)
    return;  // not the grouped path, or already prepared
  MOE_CHECK(!capturing()) << "prepare_experts while the stream is captured (load time only)";
  // The shared expert too if the grouped kernels take it (moe_experts runs it with the routed
  // ones or alone there); otherwise linear reads it, row-major.
  std::vector<ops::ExpertWeights*> all;
  for (ops::ExpertWeights& ew : experts) all.push_back(&ew);
  GroupedExperts gs;
  if (shared && resolve_grouped_shared_alone(*shared, D, &gs, &why)) all.push_back(shared);
  const bool nvfp4 = ge.fmt == GroupedFmt::kNvfp4;
  auto row_bytes = [&](const ops::Weight& w) {
    return grouped::grouped_row_bytes(ge.fmt, w.cols());
  };
  for (const ops::ExpertWeights* ew : all)
    for (const ops::Weight* w : {&ew->gate, &ew->up, &ew->down})
      MOE_CHECK(w->data.device() == Device::kCuda && (!nvfp4 || w->scale.device() == Device::kCuda))
          << "prepare_experts: expert weight " << w->data.shape().to_string()
          << " is not in this backend's memory (upload it first)";
  // Matrices shared between experts (tests reuse one) are rearranged once.
  std::unordered_set<const void*> done;
  int64_t largest = 0;  // bytes of the largest matrix (a shared expert may be wider)
  for (const ops::ExpertWeights* ew : all)
    for (const ops::Weight* w : {&ew->gate, &ew->up, &ew->down})
      largest = std::max(largest, w->rows() * row_bytes(*w));
  Tensor tmp = allocate({largest}, DType::kU8, false);  // one matrix
  // The backend owns this memory (upload) and no forward has read it yet; nullptr: done before.
  auto first = [&](const ConstTensorView& t) -> uint8_t* {
    return done.insert(t.raw()).second ? static_cast<uint8_t*>(const_cast<void*>(t.raw()))
                                       : nullptr;
  };
  auto copy_back = [&](uint8_t* p, int64_t n) {
    MOE_CUDA_CHECK(cudaMemcpyAsync(p, tmp.data<uint8_t>(), static_cast<size_t>(n),
                                   cudaMemcpyDeviceToDevice, stream_),
                   "prepare_experts");
  };
  for (ops::ExpertWeights* ew : all)
    for (ops::Weight* w : {&ew->gate, &ew->up, &ew->down}) {
      const int64_t N = w->rows(), rb = row_bytes(*w);
      if (uint8_t* p = first(w->data)) {
        launch_pack_data(tmp.data<uint8_t>(), p, N, rb, stream_);
        copy_back(p, N * rb);
      }
      if (uint8_t* p = nvfp4 ? first(w->scale) : nullptr) {
        launch_nvfp4_pack_scales(tmp.data<uint8_t>(), p, N, w->cols(), stream_);
        copy_back(p, N * w->cols() / 16);
      }
      w->layout = ops::WeightLayout::kPacked;
    }
  // FP8: tensor maps of the packed weights for the warpgroup-MMA GEMM (routed table; shared
  // expert alone), replacing maps of an earlier table with the same key.
  auto add_tmaps = [&](const GroupedExperts& g) {
    Tensor d;
    std::string no;
    if (!upload_grouped_tmaps(
            g,
            [&](size_t n) {
              d = allocate({static_cast<int64_t>(n)}, DType::kU8, false);
              return static_cast<void*>(d.data<uint8_t>());
            },
            &no))
      return;
    std::vector<uintptr_t> key = grouped_tmap_key(g);
    std::erase_if(expert_tmaps_, [&](const ExpertTmaps& t) { return t.key == key; });
    expert_tmaps_.push_back({std::move(key), std::move(d)});
  };
  GroupedExperts packed, shared_packed;
  if (resolve_grouped_experts(experts, D, &packed, &why)) add_tmaps(packed);
  if (shared && resolve_grouped_shared_alone(*shared, D, &shared_packed, &why))
    add_tmaps(shared_packed);
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_), "prepare_experts");
}

const void* CudaOps::expert_tmaps(const GroupedExperts& ge) const {
  if (expert_tmaps_.empty() || (ge.fmt != GroupedFmt::kFp8Block && ge.fmt != GroupedFmt::kBf16))
    return nullptr;
  const std::vector<uintptr_t> key = grouped_tmap_key(ge);
  for (const ExpertTmaps& t : expert_tmaps_)
    if (t.key == key) return t.maps.cview().raw();
  return nullptr;
}

void CudaOps::shared_expert_add(TensorView y, ConstTensorView x, const ops::ExpertWeights& s) {
  const int64_t T = x.dim(0), D = x.dim(1), I = s.gate.rows();
  MOE_CHECK(s.gate.cols() == D && s.up.rows() == I && s.up.cols() == D && s.down.rows() == D &&
            s.down.cols() == I)
      << "moe_experts: shared expert gate [" << s.gate.rows() << ", " << s.gate.cols() << "] up ["
      << s.up.rows() << ", " << s.up.cols() << "] down [" << s.down.rows() << ", " << s.down.cols()
      << "] for D " << D;
  TensorView g = scratch({T, I}, DType::kF32), u = scratch({T, I}, DType::kF32),
             o = scratch({T, D}, DType::kF32);
  in_composite_ = true;
  struct Done {
    bool* f;
    ~Done() { *f = false; }
  } done{&in_composite_};
  linear(g, x, s.gate);
  linear(u, x, s.up);
  silu_mul(g, g, u);
  linear(o, g, s.down);
  add_inplace(y, o);
}

void CudaOps::moe_experts(TensorView y, ConstTensorView x, ConstTensorView ids,
                          ConstTensorView weights, std::span<const ops::ExpertWeights> experts,
                          const ops::ExpertWeights* shared) {
  check_f32(y, 2, "moe_experts.y");
  check_f32(x, 2, "moe_experts.x");
  check_i32(ids, 2, "moe_experts.ids");
  check_f32(weights, 2, "moe_experts.weights");
  const int64_t T = x.dim(0), D = x.dim(1), K = ids.dim(1),
                E = static_cast<int64_t>(experts.size());
  MOE_CHECK(y.shape() == x.shape() && ids.dim(0) == T && weights.dim(0) == T && weights.dim(1) == K)
      << "moe_experts: x " << x.shape().to_string() << " y " << y.shape().to_string() << " ids "
      << ids.shape().to_string() << " weights " << weights.shape().to_string();
  MOE_CHECK(E >= 1 && E <= kMaxExperts)
      << "moe_experts: " << E << " experts (supported: 1.." << kMaxExperts << ")";
  auto ge = std::make_unique<GroupedExperts>();
  std::string why;
  if (resolve_grouped_experts(experts, D, ge.get(), &why)) {
    begin_op();
    const MoeDeviceLimits lim = moe_limits(info_);
    // The shared expert as one more expert on one more slot per token, for calls of at most
    // moe_shared_fold_max_tokens tokens and when it has the routed experts' shape and format.
    const bool fold = shared && T <= moe_shared_fold_max_tokens(ge->fmt) &&
                      add_grouped_shared_expert(*shared, ge.get(), &why);
    ge->tmaps = expert_tmaps(*ge);  // FP8 prepared by prepare_experts: weight tiles by TMA
    // One grouped call: scratch for its slots, then the four launches.
    auto run = [&](const GroupedExperts& g, GroupedLaunch l, int64_t k, bool accumulate) {
      if (!moe_fp8_act_) l.fp8_act = false;
      const int64_t TK = std::max<int64_t>(T * g.slots(k), 1);
      GroupedScratch s;
      s.xa = scratch({std::max<int64_t>(T, 1), D}, DType::kBF16).raw();
      s.sorted_slot = scratch({TK}, DType::kI32).data<int32_t>();
      s.tiles = scratch({grouped_max_tiles(T, g.slots(k), g.E, 8 * l.nb), 4}, DType::kI32)
                    .data<int32_t>();
      s.num_tiles = scratch({3}, DType::kI32).data<int32_t>();  // streaming, big, 128-token big
      s.h = scratch({TK, g.I}, DType::kBF16).raw();
      s.out = scratch({TK, D}, DType::kF32).data<float>();
      s.slot_w = scratch({TK}, DType::kF32).data<float>();
      if (const int64_t qb = grouped_fp8_act_bytes(l, g.fmt, T, D, g.I, g.slots(k)); qb > 0)
        s.q = scratch({qb}, DType::kU8).data<uint8_t>();
      const GroupedSkSizes sk = grouped_sk_sizes(l);
      if (sk.warps > 0) {
        s.sk_counters = scratch({sk.counters()}, DType::kI32).data<int32_t>();
        s.sk_partials = scratch({sk.partial_floats}, DType::kF32).data<float>();
      }
      run_grouped_experts(g, y.data<float>(), y.stride(0), x.data<float>(), x.stride(0),
                          ids.data<int32_t>(), ids.stride(0), weights.data<float>(),
                          weights.stride(0), T, k, s, l, stream_, accumulate);
    };
    // The tune cache and the heuristic see the folded shape (E + 1 experts, K + 1 per token).
    const MoeShape shape{T, D, ge->I, ge->E, ge->slots(K), ge->fmt};
    const MoeKernelConfig cfg =
        moe_tune_ ? moe_tune_->select(info_, shape) : moe_heuristic_config(shape, lim);
    run(*ge, moe_launch(cfg, lim, ge->fmt, T, ge->E, ge->I), K, false);
    if (shared && !fold) {
      // Apart: alone in the grouped kernels (y += S(x); packed weights need them), else linear.
      GroupedExperts gs;
      if (resolve_grouped_shared_alone(*shared, D, &gs, &why)) {
        gs.tmaps = expert_tmaps(gs);
        run(gs, moe_shared_alone_launch(T, D, gs.I, gs.fmt, lim), 0, true);
      } else
        shared_expert_add(y, x, *shared);
    }
    return;
  }
  // Token-major fallback: dense experts, and quantized ones the grouped path refused (`why`).
  const int64_t I = experts[0].gate.rows();
  begin_op();
  MoeExpertsParams p;
  for (int64_t e = 0; e < E; ++e) {
    const WeightArgs g = weight_args(experts[e].gate, {"moe_experts expert", e, "gate"}),
                     u = weight_args(experts[e].up, {"moe_experts expert", e, "up"}),
                     d = weight_args(experts[e].down, {"moe_experts expert", e, "down"});
    MOE_CHECK(g.N == I && g.K == D && u.N == I && u.K == D && d.N == D && d.K == I)
        << "moe_experts: expert " << e << " gate [" << g.N << ", " << g.K << "] up [" << u.N << ", "
        << u.K << "] down [" << d.N << ", " << d.K << "], expected I " << I << ", D " << D;
    if (e == 0) {
      p.wt = g.wt;
      p.block = g.block;
    }
    MOE_CHECK(g.wt == p.wt && u.wt == p.wt && d.wt == p.wt && g.block == p.block &&
              u.block == p.block && d.block == p.block)
        << "moe_experts: expert " << e << " weights must all have expert 0's format"
        << (why.empty() ? "" : " (grouped path: " + why + ")");
    p.gate[e] = g.data;
    p.up[e] = u.data;
    p.down[e] = d.data;
    p.gate_scale[e] = g.scale;
    p.up_scale[e] = u.scale;
    p.down_scale[e] = d.scale;
    p.gate_gs[e] = g.global_scale;
    p.up_gs[e] = u.global_scale;
    p.down_gs[e] = d.global_scale;
  }
  p.y = y.data<float>();
  p.y_stride = y.stride(0);
  p.x = x.data<float>();
  p.x_stride = x.stride(0);
  p.ids = ids.data<int32_t>();
  p.ids_stride = ids.stride(0);
  p.weights = weights.data<float>();
  p.weights_stride = weights.stride(0);
  p.T = T;
  p.D = D;
  p.K = K;
  p.I = I;
  p.E = E;
  p.h = scratch({std::max<int64_t>(T * K, 1), I}, DType::kF32).data<float>();
  launch_moe_experts(p, stream_);
  if (shared) shared_expert_add(y, x, *shared);
}

void CudaOps::sample(TensorView out, ConstTensorView logits,
                     std::span<const ops::SamplingParams> params, std::span<const uint64_t> steps) {
  check_f32(logits, 2, "sample.logits");
  const int64_t S = logits.dim(0), V = logits.dim(1);
  MOE_CHECK(out.dtype() == DType::kI32 && out.numel() == S && out.is_contiguous())
      << "sample.out " << out.shape().to_string() << " for " << S << " rows";
  MOE_CHECK(static_cast<int64_t>(params.size()) == S && static_cast<int64_t>(steps.size()) == S)
      << "sample: " << params.size() << " params and " << steps.size() << " steps for " << S
      << " rows";
  begin_op();
  bool any_random = false;
  for (const auto& sp : params) any_random |= sp.temperature > 0.f && sp.top_k != 1;
  const int64_t v_pad = next_pow2(V);
  const int64_t chunk_rows = std::min<int64_t>(S, kMaxSampleRows);
  float* keys = nullptr;
  int32_t* ids = nullptr;
  if (any_random) {
    keys = scratch({chunk_rows, v_pad}, DType::kF32).data<float>();
    ids = scratch({chunk_rows, v_pad}, DType::kI32).data<int32_t>();
  }
  for (int64_t s0 = 0; s0 < S; s0 += kMaxSampleRows) {
    SampleParams p;
    p.S = std::min<int64_t>(kMaxSampleRows, S - s0);
    p.out = out.data<int32_t>() + s0;
    p.logits = logits.data<float>() + s0 * logits.stride(0);
    p.logits_stride = logits.stride(0);
    p.V = V;
    for (int64_t i = 0; i < p.S; ++i) {
      const ops::SamplingParams& sp = params[s0 + i];
      p.rows[i] = {sp.temperature, sp.top_p, sp.top_k, sp.seed, steps[s0 + i]};
    }
    p.keys = keys;
    p.ids = ids;
    p.v_pad = v_pad;
    launch_sample(p, stream_);  // chunks reuse the scratch rows in stream order
  }
}

}  // namespace moe::cuda
