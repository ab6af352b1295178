// `moengine tune-moe --model-path DIR [--cache FILE] [--tokens 1,2,4,...,256] [--fmt
// bf16,fp8,nvfp4]
//                    [--iters 20]`: measures every candidate launch configuration of the grouped
// MoE kernels for the model's MoE shape (hidden_size, moe_intermediate_size, n_routed_experts,
// num_experts_per_tok from DIR/config.json; with n_shared_experts 1 the shared expert rides along
// as one more expert and slot, as in CudaOps::moe_experts) on GPU 0, with synthetic weights of
// each format and uniform random routing, and stores the fastest per (GPU, shape, T bucket,
// format) in the JSON tune cache (default DIR/moe_tune.json). A T bucket is the power of two at or
// above T (moe_t_bucket): a call of T tokens uses the entry measured at its bucket's count, so the
// default counts are every bucket up to 256; two counts of one bucket are refused (the second
// would overwrite the first). Time = median of CUDA-graph replays with a 256 MiB L2 flush before
// each. `moengine generate --device cuda` loads DIR/moe_tune.json when present (or
// --moe-tune-cache FILE); shapes without an entry use moe_heuristic_config.
#include <cstdint>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.h"

namespace moe::apps {
namespace {

// The flags, checked before anything touches the GPU (so a typo costs no device time).
struct TuneMoeArgs {
  std::string model_path, cache_path;
  std::vector<std::string> fmts;  // bf16, fp8, nvfp4
  std::vector<int64_t> tokens;    // >= 1, one per T bucket
  int iters = 20;
};

// 0 when the flags are usable, else 2 after one line on stderr saying what to change.
int parse_tune_moe_args(int argc, char** argv, int first, TuneMoeArgs* a) {
  const std::string cmd = "tune-moe";
  auto args = CliArgs::parse(argc, argv, first,
                             {"--model-path", "--cache", "--fmt", "--tokens", "--iters"}, {});
  if (!args.ok()) return fail(cmd, args.status());
  const auto path = args->optional("--model-path");
  if (!path)
    return fail(cmd, invalid_argument("--model-path DIR is required (a folder with config.json)"));
  a->model_path = *path;
  a->cache_path = args->optional("--cache").value_or(a->model_path + "/moe_tune.json");
  const auto iters = args->get_int("--iters", 20, 3, 100000);
  if (!iters.ok()) return fail(cmd, iters.status());
  a->iters = static_cast<int>(*iters);
  const std::string fmts = args->optional("--fmt").value_or("bf16,fp8,nvfp4");
  std::set<std::string> seen_fmt;
  std::stringstream fs(fmts);
  for (std::string f; std::getline(fs, f, ',');) {
    if (f != "bf16" && f != "fp8" && f != "nvfp4")
      return fail(cmd, invalid_argument("--fmt " + fmts + ": unknown format '" + f +
                                        "' (formats: bf16, fp8, nvfp4)"));
    if (seen_fmt.insert(f).second) a->fmts.push_back(f);
  }
  if (a->fmts.empty()) return fail(cmd, invalid_argument("--fmt is empty (bf16, fp8, nvfp4)"));
  if (args->has("--tokens")) {
    auto tokens = args->get_int_list("--tokens");
    if (!tokens.ok()) return fail(cmd, tokens.status());
    a->tokens = *tokens;
  } else {
    a->tokens = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  }
  std::set<int64_t> buckets;
  for (const int64_t T : a->tokens) {
    if (T < 1 || T > (1 << 20))
      return fail(cmd, invalid_argument("--tokens: " + std::to_string(T) +
                                        " is not a token count (1..1048576)"));
    int64_t b = 1;  // the T bucket (cuda::moe_t_bucket; not in builds without CUDA)
    while (b < T) b <<= 1;
    if (!buckets.insert(b).second)
      return fail(cmd, invalid_argument(
                           "--tokens: two counts fall in the bucket T <= " + std::to_string(b) +
                           " (one entry each); give one count per power of two"));
  }
  return 0;
}

}  // namespace
}  // namespace moe::apps

#if defined(MOE_HAVE_CUDA) && MOE_HAVE_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_experts.h"
#include "backends/cuda/moe_config/moe_config.h"
#include "model/model_config.h"

namespace moe::apps {
namespace {

using cuda::GroupedFmt;

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "tune-moe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

struct Buffers {
  std::vector<void*> p;
  bool failed = false;  // a cudaMalloc failed (reported): nothing may run on these buffers
  ~Buffers() {
    for (void* q : p) cudaFree(q);
  }
  void* get(size_t n, int byte) {
    void* q = nullptr;
    if (!ok(cudaMalloc(&q, n), "cudaMalloc")) {
      failed = true;
      return nullptr;
    }
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
  const std::string cmd = "tune-moe";
  TuneMoeArgs args;
  if (int rc = parse_tune_moe_args(argc, argv, first, &args); rc != 0) return rc;
  const std::string& model_path = args.model_path;
  const std::string& cache_path = args.cache_path;
  const int iters = args.iters;
  // config.json read and checked as the engine reads it (one message listing every problem).
  auto mc = model::load_model_config(model_path);
  if (!mc.ok()) return fail(cmd, mc.status());
  const int64_t D = mc->hidden_size, I = mc->moe_intermediate_size, E = mc->n_routed_experts,
                K = mc->num_experts_per_tok, n_shared = mc->n_shared_experts;
  if (E > cuda::kMaxGroupedExperts)  // (the loader asks for E, I, K >= 1)
    return fail(cmd, invalid_argument(model_path + "/config.json: " + std::to_string(E) +
                                      " routed experts; the grouped MoE kernels take at most " +
                                      std::to_string(cuda::kMaxGroupedExperts)));
  auto dev = cuda::query_device(0);
  if (!dev.ok())
    return fail(cmd, dev.status().with_context("no usable GPU (tune-moe measures the kernels on "
                                               "the GPU that will serve: run it there)"));
  // An existing cache is extended (entries of other GPUs and shapes are kept); one the engine
  // would refuse (not JSON, another version, malformed entries) stops here with the reason.
  cuda::MoeTuneCache cache;
  if (std::ifstream(cache_path).good()) {
    std::vector<std::string> warnings;  // entries that no longer fit are re-measured below
    auto existing = cuda::CudaOps::load_moe_tune_cache(cache_path, *dev, &warnings);
    if (!existing.ok()) return fail(cmd, existing.status());
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
  if (common.failed) return 1;
  for (const std::string& fname : args.fmts) {
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
    if (wb.failed) {
      std::fprintf(stderr,
                   "tune-moe: %s: the GPU has no room for %lld experts' synthetic weights; free "
                   "it, or tune one format at a time (--fmt)\n",
                   fname.c_str(), static_cast<long long>(E + (n_shared == 1 ? 1 : 0)));
      return 1;
    }
    for (const int64_t T : args.tokens) {
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
      s.num_tiles = static_cast<int32_t*>(b.get(12, 0));  // [3]
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
        qbytes = std::max(qbytes, cuda::grouped_fp8_act_bytes(cuda::moe_launch(c, lim, f, T, ES, I),
                                                              f, T, D, I, KS));
      s.q = static_cast<uint8_t*>(b.get(qbytes, 0));
      if (b.failed) {
        std::fprintf(stderr, "tune-moe: %s T %lld: the GPU has no room for the activations\n",
                     fname.c_str(), static_cast<long long>(T));
        return 1;
      }
      double best_us = 1e30;
      cuda::MoeKernelConfig best = cuda::moe_heuristic_config(shape, lim);
      for (const cuda::MoeKernelConfig& c : cands) {
        // The launch the engine runs for this shape (cuda_ops_moe.cc passes the experts and I).
        const cuda::GroupedLaunch l = cuda::moe_launch(c, lim, f, T, ES, I);
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

int cmd_tune_moe(int argc, char** argv, int first) {
  TuneMoeArgs args;
  if (int rc = parse_tune_moe_args(argc, argv, first, &args); rc != 0) return rc;
  return fail("tune-moe", unimplemented("this moengine was built without CUDA; rebuild with the "
                                        "CUDA toolkit to tune the MoE kernels"));
}

}  // namespace moe::apps

#endif
