// decode_step_bench: one decode step of a (GLM-5-shaped) checkpoint on one GPU for B sequences
// with `--context` cached tokens each, captured as a CUDA graph (DecodeGraphRunner). Prints the
// median of CUDA-event-timed replays next to the weight-read floor, and each op's share of an
// eager step timed op by op with events.
//
// Bytes model (per step): every weight that is not a routed expert is read once (embedding:
// only B rows); routed experts: the expected number of distinct experts B tokens select under
// uniform routing, E * (1 - (1 - K/E)^B) per MoE layer, times one expert's bytes. The KV read
// (latent + indexer keys of B * context tokens, f32) is reported next to it. Floor = bytes /
// 4.8 TB/s (H200 HBM3e peak).
// Usage: decode_step_bench --model-path DIR [--batches 1,16,64] [--context 1024] [--reps 20]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/decode_graph_runner.h"
#include "backends/cuda/device_arena.h"
#include "backends/cuda/device_info.h"
#include "model/kv_cache.h"
#include "model/loader.h"
#include "op_timer_ops.h"

namespace moe::bench {
namespace {

constexpr double kPeakBytesPerS = 4.8e12;

struct Args {
  std::string model_path;
  std::vector<int64_t> batches = {1, 16, 64};
  int64_t context = 1024;
  int reps = 20;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model-path") {
      a.model_path = v;
    } else if (k == "--context") {
      a.context = std::atoll(v.c_str());
    } else if (k == "--reps") {
      a.reps = std::atoi(v.c_str());
    } else if (k == "--batches") {
      a.batches.clear();
      for (size_t p = 0; p < v.size();) {
        size_t q = v.find(',', p);
        a.batches.push_back(std::atoll(v.substr(p, q - p).c_str()));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else {
      std::fprintf(stderr, "decode_step_bench: unknown flag %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (a.model_path.empty()) {
    std::fprintf(stderr,
                 "usage: decode_step_bench --model-path DIR [--batches 1,16,64] "
                 "[--context 1024] [--reps 20]\n");
    std::exit(2);
  }
  return a;
}

struct WeightBytes {
  double fixed = 0;      // read once per step
  double embed_row = 0;  // one row of embed_tokens
  double expert = 0;     // one routed expert (gate + up + down, with scales)
  int moe_layers = 0;
};

WeightBytes weight_bytes(const io::Checkpoint& ckpt, const model::ModelConfig& cfg) {
  WeightBytes w;
  double experts_total = 0;
  for (const auto& [name, e] : ckpt.entries()) {
    const double b = static_cast<double>(e.info->end - e.info->begin);
    if (name.find(".mlp.experts.") != std::string::npos) {
      experts_total += b;
    } else if (name == "model.embed_tokens.weight") {
      w.embed_row = b / static_cast<double>(cfg.vocab_size);
    } else {
      w.fixed += b;
    }
  }
  for (int l = 0; l < cfg.num_hidden_layers; ++l) w.moe_layers += cfg.is_moe_layer(l) ? 1 : 0;
  if (w.moe_layers > 0) w.expert = experts_total / (w.moe_layers * cfg.n_routed_experts);
  return w;
}

int run(const Args& a) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach the log even if a check aborts
  auto info = cuda::query_device(0);
  if (!info.ok()) {
    std::fprintf(stderr, "decode_step_bench: %s\n", info.status().to_string().c_str());
    return 2;
  }
  std::printf("device: %s\n", cuda::describe(*info).c_str());
  cuda::CudaOps ops(*info);
  auto t0 = std::chrono::steady_clock::now();
  auto loaded = model::load_model(a.model_path, ops);
  if (!loaded.ok()) {
    std::fprintf(stderr, "decode_step_bench: %s\n", loaded.status().to_string().c_str());
    return 2;
  }
  ops.synchronize();
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  model::Model& m = *loaded->model;
  const model::ModelConfig& cfg = m.config();
  const WeightBytes wb = weight_bytes(loaded->checkpoint, cfg);
  std::printf(
      "model: %s, %d layers (%d MoE), D %lld, %d experts top-%d, quant %s; "
      "checkpoint %.2f GB loaded in %.1f s\n",
      a.model_path.c_str(), cfg.num_hidden_layers, wb.moe_layers,
      static_cast<long long>(cfg.hidden_size), cfg.n_routed_experts, cfg.num_experts_per_tok,
      std::string(io::quant_format_name(cfg.quant.format)).c_str(),
      loaded->checkpoint.total_bytes() / 1e9, load_s);
  std::printf("bytes model: fixed %.3f GB/step, one routed expert %.2f MB, context %lld\n",
              wb.fixed / 1e9, wb.expert / 1e6, static_cast<long long>(a.context));

  cuda::DeviceArena ws(info->ordinal, ops.stream());
  cuda::DeviceArena outs(info->ordinal, ops.stream());
  cuda::DecodeGraphRunner runner(ops, ws);
  std::vector<int64_t> batches = a.batches;
  std::sort(batches.rbegin(), batches.rend());  // largest first: arenas sized once
  const int64_t page = 64, steps_ahead = 4 + 1;
  const int64_t pages_per_seq = (a.context + steps_ahead + a.reps + page - 1) / page;
  struct Row {
    int64_t B;
    double median_ms, min_ms, weights_gb, kv_gb;
    std::map<std::string, double> ops_ms;
  };
  std::vector<Row> rows;
  for (int64_t B : batches) {
    model::KvCache cache(cfg, B * pages_per_seq, page, ops);
    std::vector<model::KvCache::Sequence> seqs(B);
    for (auto& s : seqs) {
      Status st = cache.reserve(s, pages_per_seq * page);
      if (!st.ok()) {
        std::fprintf(stderr, "decode_step_bench: %s\n", st.to_string().c_str());
        return 2;
      }
      s.length = a.context;  // the cache holds `context` tokens (zeros: timing only)
    }
    outs.reset();
    TensorView logits = outs.alloc({B, cfg.vocab_size}, DType::kF32);  // [B, V]
    std::vector<std::vector<int32_t>> tokens(B);
    for (int64_t s = 0; s < B; ++s) tokens[s] = {static_cast<int32_t>((s * 7919 + 13) % 1000)};
    auto step_fn = [&](ops::Ops& o) {
      std::vector<model::SequenceInput> in;
      for (int64_t s = 0; s < B; ++s) in.push_back({tokens[s], &seqs[s]});
      return m.forward(o, ws, cache, in, logits);
    };
    // Eager warm-up, then per-op timing of an eager step, then capture + replays.
    Status st = runner.run(B, step_fn);
    Row row{B, 0, 0, 0, 0, {}};
    {
      OpTimerOps timer(ops, cfg.vocab_size);
      std::vector<model::SequenceInput> in;
      for (int64_t s = 0; s < B; ++s) in.push_back({tokens[s], &seqs[s]});
      if (st.ok()) st = m.forward(timer, ws, cache, in, logits);
      if (st.ok()) row.ops_ms = timer.totals();
    }
    if (st.ok()) st = runner.run(B, step_fn);  // captured + replayed
    if (!st.ok()) {
      std::fprintf(stderr, "decode_step_bench: B=%lld: %s\n", static_cast<long long>(B),
                   st.to_string().c_str());
      return 2;
    }
    cudaEvent_t e0, e1;
    MOE_CUDA_CHECK(cudaEventCreate(&e0), "bench");
    MOE_CUDA_CHECK(cudaEventCreate(&e1), "bench");
    std::vector<double> ms;
    for (int r = 0; r < a.reps; ++r) {
      MOE_CUDA_CHECK(cudaEventRecord(e0, ops.stream()), "bench");
      runner.replay(B);
      MOE_CUDA_CHECK(cudaEventRecord(e1, ops.stream()), "bench");
      MOE_CUDA_CHECK(cudaEventSynchronize(e1), "bench");
      float t = 0;
      MOE_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1), "bench");
      ms.push_back(t);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    std::sort(ms.begin(), ms.end());
    row.median_ms = ms[ms.size() / 2];
    row.min_ms = ms.front();
    const double E = cfg.n_routed_experts, K = cfg.num_experts_per_tok;
    const double distinct = E * (1.0 - std::pow(1.0 - K / E, static_cast<double>(B)));
    row.weights_gb = (wb.fixed + B * wb.embed_row + wb.moe_layers * distinct * wb.expert) / 1e9;
    row.kv_gb = static_cast<double>(model::KvCache::bytes_per_token(cfg)) * B * a.context / 1e9;
    rows.push_back(row);
    runner.reset();  // this B's graph reads this cache: drop it with the cache
  }
  std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.B < y.B; });
  std::printf(
      "\n| B | step (graph, median) | tokens/s | weights read | floor @4.8TB/s | "
      "%% of floor | + KV read | floor incl. KV |\n|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    const double floor_ms = r.weights_gb * 1e9 / kPeakBytesPerS * 1e3;
    const double floor_kv_ms = (r.weights_gb + r.kv_gb) * 1e9 / kPeakBytesPerS * 1e3;
    std::printf(
        "| %lld | %.3f ms (min %.3f) | %.0f | %.2f GB | %.3f ms | %.1f%% | %.2f GB | "
        "%.3f ms |\n",
        static_cast<long long>(r.B), r.median_ms, r.min_ms, r.B / r.median_ms * 1e3, r.weights_gb,
        floor_ms, 100.0 * floor_ms / r.median_ms, r.kv_gb, floor_kv_ms);
  }
  std::printf("\nShare of each op in an eager step (CUDA events around every op):\n");
  std::map<std::string, bool> labels;
  for (const Row& r : rows)
    for (const auto& [k, v] : r.ops_ms) labels[k] = true;
  std::printf("| op |");
  for (const Row& r : rows) std::printf(" B=%lld |", static_cast<long long>(r.B));
  std::printf("\n|---|");
  for (size_t i = 0; i < rows.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const auto& [label, unused] : labels) {
    std::printf("| %s |", label.c_str());
    for (const Row& r : rows) {
      double total = 0;
      for (const auto& [k, v] : r.ops_ms) total += v;
      auto it = r.ops_ms.find(label);
      const double v = it == r.ops_ms.end() ? 0 : it->second;
      std::printf(" %.3f ms (%.1f%%) |", v, total > 0 ? 100 * v / total : 0);
    }
    std::printf("\n");
  }
  std::printf("| total (eager, timed) |");
  for (const Row& r : rows) {
    double total = 0;
    for (const auto& [k, v] : r.ops_ms) total += v;
    std::printf(" %.3f ms |", total);
  }
  std::printf("\n");
  return 0;
}

}  // namespace
}  // namespace moe::bench

int main(int argc, char** argv) { return moe::bench::run(moe::bench::parse(argc, argv)); }
