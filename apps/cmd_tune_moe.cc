// `moengine tune-moe --model-path DIR [--cache FILE] [--tokens 1,8,64,256] [--fmt bf16,fp8,nvfp4]
//                    [--iters 20]`: measures every candidate launch configuration of the grouped
// MoE kernels for the model's MoE shape (hidden_size, moe_intermediate_size, n_routed_experts,
// num_experts_per_tok from DIR/config.json; with n_shared_experts 1 the shared expert rides along
// as one more expert and slot, as in CudaOps::moe_experts) on GPU 0, with synthetic weights of
// each format and
// uniform random routing, and stores the fastest per (GPU, shape, T bucket, format) in the JSON
// tune cache (default DIR/moe_tune.json). Time = median of CUDA-graph replays with a 256 MiB
// L2 flush before each. `moengine generate --device cuda` loads DIR/moe_tune.json when present
// (or --moe-tune-cache FILE); shapes without an entry use moe_heuristic_config.
#include <cstdio>

#if defined(MOE_HAVE_CUDA) && MOE_HAVE_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_experts.h"
#include "backends/cuda/moe_config/moe_config.h"

namespace moe::apps {
namespace {

using cuda::GroupedFmt;

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "tune-moe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) out.push_back(t);
  return out;
}

struct Buffers {
  std::vector<void*> p;
  ~Buffers() {
    for (void* q : p) cudaFree(q);
  }
  void* get(size_t n, int byte) {
    void* q = nullptr;
    if (!ok(cudaMalloc(&q, n), "cudaMalloc")) return nullptr;
    cudaMemset(q, byte, n);  // 0x3C: bf16 ~0.011, fp8 1.5, e2m1 codes 1.5/-2: no NaN, not zero
    p.push_back(q);
    return q;
  }
};

ConstTensorView view(void* p, Shape s, DType dt) {
  return ConstTensorView(p, dt, std::move(s), Device::kCuda);
}

ops::Weight weight(Buffers& b, GroupedFmt f, int64_t N, int64_t K) {
  ops::Weight w;
  if (f == GroupedFmt::kBf16) {
    w.data = view(b.get(N * K * 2, 0x3C), {N, K}, DType::kBF16);
  } else if (f == GroupedFmt::kFp8Block) {
    w.format = ops::WeightFormat::kFp8Block;
    w.data = view(b.get(N * K, 0x3C), {N, K}, DType::kF8E4M3);
    w.scale = view(b.get(((N + 127) / 128) * ((K + 127) / 128) * 4, 0x3C),
                   {(N + 127) / 128, (K + 127) / 128}, DType::kF32);
  } else {
    w.format = ops::WeightFormat::kNvfp4;
    w.data = view(b.get(N * K / 2, 0x3C), {N, K / 2}, DType::kU8);
    w.scale = view(b.get(N * K / 16, 0x30), {N, K / 16}, DType::kF8E4M3);
    w.global_scale = 0.01f;
  }
  w.layout = ops::WeightLayout::kPacked;  // as CudaOps::prepare_experts leaves them
  return w;
}

}  // namespace

int cmd_tune_moe(int argc, char** argv, int first) {
  std::string model_path, cache_path, fmts = "bf16,fp8,nvfp4", tokens = "1,4,8,32,64,128,256";
  int iters = 20;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "tune-moe: %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--model-path")
      model_path = v;
    else if (a == "--cache")
      cache_path = v;
    else if (a == "--fmt")
      fmts = v;
    else if (a == "--tokens")
      tokens = v;
    else if (a == "--iters")
      iters = std::max(3, std::atoi(v.c_str()));
    else {
      std::fprintf(stderr, "tune-moe: unknown flag %s (see the usage at the top of --help)\n",
                   a.c_str());
      return 2;
    }
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "tune-moe: --model-path DIR is required (a folder with config.json)\n");
    return 2;
  }
  if (cache_path.empty()) cache_path = model_path + "/moe_tune.json";
  nlohmann::json cfg;
  try {
    std::ifstream in(model_path + "/config.json");
    if (!in) throw std::runtime_error("cannot open " + model_path + "/config.json");
    in >> cfg;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune-moe: %s\n", e.what());
    return 2;
  }
  const int64_t D = cfg.value("hidden_size", int64_t{0}),
                I = cfg.value("moe_intermediate_size", int64_t{0}),
                E = cfg.value("n_routed_experts", int64_t{0}),
                K = cfg.value("num_experts_per_tok", int64_t{0}),
                n_shared = cfg.value("n_shared_experts", int64_t{0});
  if (D <= 0 || I <= 0 || E <= 0 || K <= 0 || E > cuda::kMaxGroupedExperts) {
    std::fprintf(stderr,
                 "tune-moe: config.json needs hidden_size, moe_intermediate_size, "
                 "n_routed_experts (<= %d) and num_experts_per_tok\n",
                 cuda::kMaxGroupedExperts);
    return 2;
  }
  auto dev = cuda::query_device(0);
  if (!dev.ok()) {
    std::fprintf(stderr, "tune-moe: %s\n", dev.status().to_string().c_str());
    return 1;
  }
  // An existing cache is extended (entries of other GPUs and shapes are kept); one the engine
  // would refuse (not JSON, another version, malformed entries) stops here with the reason.
  cuda::MoeTuneCache cache;
  if (std::ifstream(cache_path).good()) {
    std::vector<std::string> warnings;  // entries that no longer fit are re-measured below
    auto existing = cuda::CudaOps::load_moe_tune_cache(cache_path, *dev, &warnings);
    if (!existing.ok()) {
      std::fprintf(stderr, "tune-moe: %s\n", existing.status().to_string().c_str());
      return 2;
    }
    cache = **existing;
  }
  const cuda::MoeDeviceLimits lim = cuda::moe_limits(*dev);
  std::printf("tune-moe: %s; D %lld I %lld E %lld K %lld\n", cuda::describe(*dev).c_str(),
              static_cast<long long>(D), static_cast<long long>(I), static_cast<long long>(E),
              static_cast<long long>(K));
  cudaStream_t st;
  if (!ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream")) return 1;
  Buffers common;
  void* flush = common.get(size_t{256} << 20, 0);
  for (const std::string& fname : split(fmts)) {
    const GroupedFmt f = fname == "fp8"     ? GroupedFmt::kFp8Block
                         : fname == "nvfp4" ? GroupedFmt::kNvfp4
                                            : GroupedFmt::kBf16;
    Buffers wb;
    std::vector<ops::ExpertWeights> experts(E);
    for (auto& ew : experts) ew = {weight(wb, f, I, D), weight(wb, f, I, D), weight(wb, f, D, I)};
    auto ge = std::make_unique<cuda::GroupedExperts>();
    std::string why;
    if (!cuda::resolve_grouped_experts(experts, D, ge.get(), &why)) {
      std::fprintf(stderr, "tune-moe: %s: the grouped kernels do not take this shape: %s\n",
                   fname.c_str(), why.c_str());
      continue;
    }
    // A shared expert of the routed shape (n_shared_experts 1) runs as one more expert on one
    // more slot per token up to moe_shared_fold_max_tokens (CudaOps::moe_experts); those entries
    // are keyed by that shape (E + 1, K + 1), the others by the routed one.
    ops::ExpertWeights shared_w;
    auto gf = std::make_unique<cuda::GroupedExperts>(*ge);
    bool folds = false;
    if (n_shared == 1) {
      shared_w = {weight(wb, f, I, D), weight(wb, f, I, D), weight(wb, f, D, I)};
      folds = cuda::add_grouped_shared_expert(shared_w, gf.get(), &why);
      if (!folds)
        std::fprintf(stderr, "tune-moe: %s: the shared expert runs apart: %s\n", fname.c_str(),
                     why.c_str());
    }
    // FP8: tensor maps of each table, as CudaOps::prepare_experts builds them for the engine
    // (the warpgroup-MMA GEMM loads weight tiles by TMA), so the candidates run what it runs.
    auto add_tmaps = [&](cuda::GroupedExperts& g) {
      std::string no;
      g.tmaps = cuda::upload_grouped_tmaps(
          g, [&](size_t n) { return wb.get(n, 0); }, &no);
    };
    add_tmaps(*ge);
    add_tmaps(*gf);
    for (const std::string& ts : split(tokens)) {
      const int64_t T = std::max<int64_t>(1, std::atoll(ts.c_str()));
      const cuda::GroupedExperts& g = folds && T <= cuda::moe_shared_fold_max_tokens(f) ? *gf : *ge;
      const int64_t KS = g.slots(K), ES = g.E, TK = T * KS;
      std::vector<int32_t> ids(T * K), all(E);
      std::mt19937 rng(static_cast<uint32_t>(T));
      for (int64_t t = 0; t < T; ++t) {
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng);
        std::copy(all.begin(), all.begin() + K, ids.begin() + t * K);
      }
      Buffers b;
      auto* x = static_cast<float*>(b.get(T * D * 4, 0x3C));
      auto* y = static_cast<float*>(b.get(T * D * 4, 0));
      auto* w = static_cast<float*>(b.get(T * K * 4, 0x3C));
      auto* idd = static_cast<int32_t*>(b.get(T * K * 4, 0));
      cudaMemcpy(idd, ids.data(), T * K * 4, cudaMemcpyHostToDevice);
      cuda::GroupedScratch s;
      s.xa = b.get(T * D * 2, 0);
      s.sorted_slot = static_cast<int32_t*>(b.get(TK * 4, 0));
      s.tiles = static_cast<int32_t*>(b.get(cuda::grouped_max_tiles(T, KS, ES, 8) * 16, 0));
      s.num_tiles = static_cast<int32_t*>(b.get(8, 0));  // [2]
      s.h = b.get(TK * I * 2, 0);
      s.out = static_cast<float*>(b.get(TK * D * 4, 0));
      s.slot_w = static_cast<float*>(b.get(TK * 4, 0));
      const cuda::MoeShape shape{T, D, I, ES, KS, f};
      const std::vector<cuda::MoeKernelConfig> cands = cuda::moe_candidate_configs(shape, lim);
      const cuda::GroupedSkSizes sk = cuda::moe_sk_sizes(cands, lim, f);
      s.sk_counters = static_cast<int32_t*>(b.get(std::max<int64_t>(sk.counters(), 1) * 4, 0));
      s.sk_partials = static_cast<float*>(b.get(std::max<int64_t>(sk.partial_floats, 1) * 4, 0));
      int64_t qbytes =
          16;  // FP8 activations of the warpgroup-MMA GEMM (the most any candidate needs)
      for (const cuda::MoeKernelConfig& c : cands)
        qbytes = std::max(
            qbytes, cuda::grouped_fp8_act_bytes(cuda::moe_launch(c, lim, f, T), f, T, D, I, KS));
      s.q = static_cast<uint8_t*>(b.get(qbytes, 0));
      double best_us = 1e30;
      cuda::MoeKernelConfig best = cuda::moe_heuristic_config(shape, lim);
      for (const cuda::MoeKernelConfig& c : cands) {
        const cuda::GroupedLaunch l = cuda::moe_launch(c, lim, f, T);
        auto layer = [&] {
          cuda::run_grouped_experts(g, y, D, x, D, idd, K, w, K, T, K, s, l, st);
        };
        layer();
        if (!ok(cudaStreamSynchronize(st), "warm-up")) return 1;
        cudaGraph_t g;
        cudaGraphExec_t ge_exec;
        cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
        layer();
        cudaStreamEndCapture(st, &g);
        if (!ok(cudaGraphInstantiate(&ge_exec, g, 0), "graph")) return 1;
        std::vector<float> ms;
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        for (int it = 0; it < iters; ++it) {
          cudaMemsetAsync(flush, it & 0xff, size_t{256} << 20, st);
          cudaEventRecord(e0, st);
          cudaGraphLaunch(ge_exec, st);
          cudaEventRecord(e1, st);
          if (!ok(cudaEventSynchronize(e1), "replay")) return 1;
          float m = 0;
          cudaEventElapsedTime(&m, e0, e1);
          ms.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        const double us = 1e3 * ms[ms.size() / 2];
        if (us < best_us) best_us = us, best = c;
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        cudaGraphExecDestroy(ge_exec);
        cudaGraphDestroy(g);
      }
      const std::string key = cuda::moe_tune_key(*dev, shape);
      cache.put(key, best, best_us);
      std::printf("  %-60s nb %d warps %d ctas/SM %d pipelined %d tc %d: %.1f us\n", key.c_str(),
                  best.nb, best.warps_per_cta, best.ctas_per_sm, best.pipelined ? 1 : 0,
                  best.tc ? 1 : 0, best_us);
    }
  }
  if (Status st2 = cache.save(cache_path); !st2.ok()) {
    std::fprintf(stderr, "tune-moe: %s\n", st2.to_string().c_str());
    return 1;
  }
  std::printf(
      "tune-moe: %zu entries in %s; `moengine generate --device cuda` reads DIR/moe_tune.json "
      "when present, or --moe-tune-cache FILE\n",
      cache.size(), cache_path.c_str());
  return 0;
}

}  // namespace moe::apps

#else  // built without CUDA

namespace moe::apps {

int cmd_tune_moe(int, char**, int) {
  std::fprintf(stderr,
               "tune-moe: this moengine was built without CUDA; rebuild with the CUDA "
               "toolkit to tune the MoE kernels\n");
  return 2;
}

}  // namespace moe::apps

#endif
