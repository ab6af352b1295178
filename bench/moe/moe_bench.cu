// MoE layer benchmark: the grouped routed-expert path (group + gate_up + down + combine) on the
// GLM-5 (D 6144) and DeepSeek-V3 (D 7168) layer shapes, I 2048, E 256, top-8, uniform random
// routing (distinct experts per token). Time = median of CUDA-event-timed CUDA-graph replays,
// L2 flushed (256 MiB memset) before each replay, outside the timed region.
// Bytes model: touched experts' weights + scales, x read (f32) and y written (f32).
// FLOP model: 2 * T * K * 3 * D * I. Peak for %: 4.8 TB/s (H200 datasheet).
// Usage: moe_bench [--fmt bf16,fp8,nvfp4] [--shape glm5,dsv3] [--tokens 1,4,8,...]
//                  [--iters N] [--routing-dir DIR] [--json FILE] [--nb N] [--sweep 1]
// --sweep 1 measures every candidate (tile width, pipelining) and reports the best next to
// the heuristic's time (heur_us).
// --routing-dir writes routing_T<T>.bin (int32 [T, 8]) for bench/moe/moe_vs_torch.py.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/device_info.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_experts.h"
#include "backends/cuda/moe_config/moe_config.h"

namespace {

using namespace moe;
using namespace moe::cuda;

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

__global__ void fill_kernel(uint8_t* p, size_t n, uint32_t seed, int kind) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    uint8_t b = static_cast<uint8_t>(h);
    if (kind == 1) b &= 0xBF;                              // fp8 e4m3 |v| < 2, never NaN
    if (kind == 2) b = 0x30 | (b & 0x07);                  // e4m3 scale in [0.5, 1)
    if (kind == 3) b = (i & 1) ? (0x3C | (b & 0x80)) : b;  // bf16 high byte ~ +-0.01..0.03
    p[i] = b;
  }
}

void fill(void* p, size_t n, uint32_t seed, int kind) {
  fill_kernel<<<2048, 256>>>(static_cast<uint8_t*>(p), n, seed, kind);
  CK(cudaGetLastError());
}

__global__ void fill_f32(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    p[i] = v * (1.f + 0.001f * static_cast<float>(i % 97));
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) out.push_back(t);
  return out;
}

struct LayerShape {
  std::string name;
  int64_t D, I, E, K;
};

struct Layer {  // device weights of all experts of one layer
  GroupedFmt fmt;
  LayerShape s;
  std::vector<void*> bufs;
  std::vector<ops::ExpertWeights> experts;
  double expert_bytes = 0;  // weights + scales of one expert
};

ConstTensorView dev_view(void* p, moe::Shape sh, DType dt) {
  return ConstTensorView(p, dt, sh, Device::kCuda);
}

ops::Weight make_weight(Layer& L, GroupedFmt f, int64_t N, int64_t K, uint32_t seed) {
  ops::Weight w;
  auto alloc = [&](size_t n, int kind, uint32_t sd) {
    void* p = nullptr;
    CK(cudaMalloc(&p, n));
    fill(p, n, sd, kind);
    L.bufs.push_back(p);
    L.expert_bytes += static_cast<double>(n) / 3.0;  // three matrices per expert
    return p;
  };
  switch (f) {
    case GroupedFmt::kBf16:
      w.data = dev_view(alloc(N * K * 2, 3, seed), {N, K}, DType::kBF16);
      break;
    case GroupedFmt::kFp8Block: {
      w.format = ops::WeightFormat::kFp8Block;
      w.data = dev_view(alloc(N * K, 1, seed), {N, K}, DType::kF8E4M3);
      const int64_t sn = (N + 127) / 128, sk = (K + 127) / 128;
      void* sp = alloc(sn * sk * 4, 0, seed + 1);
      fill_f32<<<64, 256>>>(static_cast<float*>(sp), sn * sk, 0.01f);
      w.scale = dev_view(sp, {sn, sk}, DType::kF32);
      break;
    }
    case GroupedFmt::kNvfp4:
      w.format = ops::WeightFormat::kNvfp4;
      w.data = dev_view(alloc(N * K / 2, 0, seed), {N, K / 2}, DType::kU8);
      w.scale = dev_view(alloc(N * K / 16, 2, seed + 1), {N, K / 16}, DType::kF8E4M3);
      w.global_scale = 0.02f;
      break;
  }
  return w;
}

void make_layer(Layer& L) {
  L.experts.resize(L.s.E);
  for (int64_t e = 0; e < L.s.E; ++e) {
    L.experts[e].gate = make_weight(L, L.fmt, L.s.I, L.s.D, 11 + 7 * e);
    L.experts[e].up = make_weight(L, L.fmt, L.s.I, L.s.D, 13 + 7 * e);
    L.experts[e].down = make_weight(L, L.fmt, L.s.D, L.s.I, 17 + 7 * e);
  }
  L.expert_bytes /= static_cast<double>(L.s.E);
  L.expert_bytes *= 3;
}

void free_layer(Layer& L) {
  for (void* p : L.bufs) CK(cudaFree(p));
  L.bufs.clear();
}

std::vector<int32_t> routing(int64_t T, int64_t E, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(T * K);
  std::vector<int32_t> all(E);
  for (int64_t t = 0; t < T; ++t) {
    std::iota(all.begin(), all.end(), 0);
    for (int64_t k = 0; k < K; ++k) {  // partial Fisher-Yates
      std::uniform_int_distribution<int64_t> d(k, E - 1);
      std::swap(all[k], all[d(rng)]);
      ids[t * K + k] = all[k];
    }
  }
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> fmts = {"bf16", "fp8", "nvfp4"}, shapes = {"glm5", "dsv3"};
  std::vector<int64_t> tokens = {1, 4, 8, 32, 64, 128, 256};
  int iters = 30, force_nb = 0;
  bool sweep = false;
  std::string routing_dir, json_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--fmt")
      fmts = split(v);
    else if (a == "--shape")
      shapes = split(v);
    else if (a == "--tokens") {
      tokens.clear();
      for (auto& t : split(v)) tokens.push_back(std::stoll(t));
    } else if (a == "--iters")
      iters = std::stoi(v);
    else if (a == "--routing-dir")
      routing_dir = v;
    else if (a == "--json")
      json_path = v;
    else if (a == "--nb")
      force_nb = std::stoi(v);
    else if (a == "--sweep")
      sweep = v == "1";
    else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  auto dev = query_device(0);
  if (!dev.ok()) {
    std::fprintf(stderr, "%s\n", dev.status().to_string().c_str());
    return 1;
  }
  std::printf("device: %s\n", describe(*dev).c_str());
  const MoeDeviceLimits lim = moe_limits(*dev);
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  void* flush = nullptr;
  const size_t flush_bytes = size_t{256} << 20;
  CK(cudaMalloc(&flush, flush_bytes));
  std::ofstream json;
  if (!json_path.empty()) json.open(json_path);
  std::printf("%-5s %-6s %5s %4s %3s %4s %10s %9s %7s %9s %10s\n", "shape", "fmt", "T", "uniq",
              "nb", "pipe", "time_us", "GB/s", "%4.8TB", "TFLOP/s", "heur_us");
  for (const auto& sname : shapes) {
    LayerShape sh = sname == "dsv3" ? LayerShape{"dsv3", 7168, 2048, 256, 8}
                                    : LayerShape{"glm5", 6144, 2048, 256, 8};
    for (const auto& fname : fmts) {
      Layer L;
      L.s = sh;
      L.fmt = fname == "fp8"     ? GroupedFmt::kFp8Block
              : fname == "nvfp4" ? GroupedFmt::kNvfp4
                                 : GroupedFmt::kBf16;
      make_layer(L);
      auto ge = std::make_unique<GroupedExperts>();
      std::string why;
      if (!resolve_grouped_experts(L.experts, sh.D, ge.get(), &why)) {
        std::fprintf(stderr, "grouped path refused: %s\n", why.c_str());
        return 1;
      }
      for (int64_t T : tokens) {
        const int64_t K = sh.K, TK = T * K;
        std::vector<int32_t> ids = routing(T, sh.E, K, 1234 + static_cast<uint32_t>(T));
        if (!routing_dir.empty() && fname == fmts[0] && sname == shapes[0]) {
          std::ofstream f(routing_dir + "/routing_T" + std::to_string(T) + ".bin",
                          std::ios::binary);
          f.write(reinterpret_cast<const char*>(ids.data()), ids.size() * 4);
        }
        const int64_t uniq = static_cast<int64_t>(std::set<int32_t>(ids.begin(), ids.end()).size());
        const MoeShape ms{T, sh.D, sh.I, sh.E, K, L.fmt};
        const MoeKernelConfig heur = moe_heuristic_config(ms, lim);
        std::vector<MoeKernelConfig> cands;
        if (sweep) {
          for (const auto& c : moe_candidate_configs(ms, lim))
            if (c.warps_per_cta == 8 && c.ctas_per_sm == 1) cands.push_back(c);
        } else {
          cands.push_back(heur);
          if (force_nb) cands.back().nb = force_nb;
        }
        const int64_t mt = grouped_max_tiles(T, K, sh.E, 8);  // the widest need: 8-token tiles
        float *x, *y, *w, *out;
        int32_t *idd, *slot, *tiles, *ntiles;
        void *xa, *h;
        CK(cudaMalloc(&x, T * sh.D * 4));
        CK(cudaMalloc(&y, T * sh.D * 4));
        CK(cudaMalloc(&w, TK * 4));
        CK(cudaMalloc(&out, TK * sh.D * 4));
        CK(cudaMalloc(&idd, TK * 4));
        CK(cudaMalloc(&slot, TK * 4));
        CK(cudaMalloc(&tiles, mt * 16));
        CK(cudaMalloc(&ntiles, 4));
        CK(cudaMalloc(&xa, T * sh.D * 2));
        CK(cudaMalloc(&h, TK * sh.I * 2));
        fill_f32<<<256, 256>>>(x, T * sh.D, 0.5f);
        fill_f32<<<64, 256>>>(w, TK, 0.125f);
        CK(cudaMemcpy(idd, ids.data(), TK * 4, cudaMemcpyHostToDevice));
        GroupedScratch s{xa, slot, tiles, ntiles, h, out};
        const double bytes = uniq * L.expert_bytes + 2.0 * T * sh.D * 4;
        const double flop = 2.0 * TK * 3.0 * sh.D * sh.I;
        double best_us = 1e30, heur_us = 0;
        MoeKernelConfig best = heur;
        for (const MoeKernelConfig& cfg : cands) {
          const GroupedLaunch l = moe_launch(cfg, lim);
          auto layer = [&] {
            run_grouped_experts(*ge, y, sh.D, x, sh.D, idd, K, w, K, T, K, s, l, st);
          };
          layer();  // eager warm-up
          CK(cudaStreamSynchronize(st));
          cudaGraph_t graph;
          cudaGraphExec_t exec;
          CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
          layer();
          CK(cudaStreamEndCapture(st, &graph));
          CK(cudaGraphInstantiate(&exec, graph, 0));
          std::vector<cudaEvent_t> ev(2 * iters);
          for (auto& e : ev) CK(cudaEventCreate(&e));
          for (int it = -3; it < iters; ++it) {
            CK(cudaMemsetAsync(flush, it & 0xff, flush_bytes, st));
            if (it >= 0) CK(cudaEventRecord(ev[2 * it], st));
            CK(cudaGraphLaunch(exec, st));
            if (it >= 0) CK(cudaEventRecord(ev[2 * it + 1], st));
          }
          CK(cudaStreamSynchronize(st));
          std::vector<float> ms_(iters);
          for (int it = 0; it < iters; ++it)
            CK(cudaEventElapsedTime(&ms_[it], ev[2 * it], ev[2 * it + 1]));
          std::sort(ms_.begin(), ms_.end());
          const double us = 1e3 * ms_[iters / 2];
          if (us < best_us) best_us = us, best = cfg;
          if (cfg == heur) heur_us = us;
          if (sweep)
            std::printf("  sweep %s %s T %lld nb %d pipe %d: %.1f us\n", sname.c_str(),
                        fname.c_str(), static_cast<long long>(T), cfg.nb, cfg.pipelined ? 1 : 0,
                        us);
          for (auto& e : ev) CK(cudaEventDestroy(e));
          CK(cudaGraphExecDestroy(exec));
          CK(cudaGraphDestroy(graph));
        }
        const double us = best_us, gbs = bytes / (us * 1e3);
        std::printf("%-5s %-6s %5lld %4lld %3d %4d %10.1f %9.0f %6.1f%% %9.1f %10.1f\n",
                    sname.c_str(), fname.c_str(), static_cast<long long>(T),
                    static_cast<long long>(uniq), best.nb, best.pipelined ? 1 : 0, us, gbs,
                    100.0 * gbs / 4800.0, flop / (us * 1e6), heur_us);
        std::fflush(stdout);
        if (json)
          json << "{\"shape\":\"" << sname << "\",\"fmt\":\"" << fname << "\",\"T\":" << T
               << ",\"unique\":" << uniq << ",\"nb\":" << best.nb
               << ",\"pipelined\":" << (best.pipelined ? 1 : 0) << ",\"us\":" << us
               << ",\"heuristic_us\":" << heur_us << ",\"bytes\":" << bytes << ",\"flop\":" << flop
               << "}\n";
        for (void* p : std::initializer_list<void*>{x, y, w, out, idd, slot, tiles, ntiles, xa, h})
          CK(cudaFree(p));
      }
      free_layer(L);
    }
  }
  return 0;
}
