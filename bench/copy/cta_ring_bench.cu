// bench/copy: DRAM read throughput of a warp-specialized CTA-wide ring (one producer warp filling
// shared-memory stages with cp.async.bulk copies for C consumer warps, full / empty mbarriers per
// stage), the candidate copy skeleton for the decode MoE GEMMs, against the per-warp rings of
// ring_bench, optionally with synthetic integer work standing in for the dequantization
// (ring_common.cuh).
// Each consumer warp streams its own items (16-row blocks: `spi` k-steps of 1024 + 1024 data and
// 128 + 128 scale bytes, the packed NVFP4 layout's gate, up and their scales; or one interleaved
// stream of 2304 bytes per step), items round-robin over the grid's consumer warps; a stage holds
// `sps` consecutive k-steps of every consumer warp's item, so a stage of the CTA is
// C x sps x 2304 bytes, copied as C x 4 (or C x 1) bulk copies of sps x chunk bytes.
// Usage:
//   cta_ring_bench [--alu N,...]   sustained rows (~4 GiB per launch, median of 5 launches);
//                                  --alu: N rounds of synthetic integer work (ring_common.cuh: ~48
//                                  N instructions per lane and k-step; the kernel's ~390 is N ~ 8)
//                                  on the NVFP4 streams, default 0 (every byte read back only)
//   --sizes MB,...                 short launches (the decode GEMMs at T 1..8), 20 back to back
//                                  per timing, median of 7, us per launch
// Needs compute capability 9.0 or later.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../common/bench_util.cuh"
#include "backends/cuda/kernels/moe_grouped/moe_grouped.cuh"
#include "ring_common.cuh"

namespace {

using moe::bench::read_back;
using moe::bench::step_work;
using moe::cuda::grouped::bulk_copy;
using moe::cuda::grouped::mbar_arrive_expect_tx;
using moe::cuda::grouped::mbar_init;
using moe::cuda::grouped::mbar_init_fence;
using moe::cuda::grouped::mbar_wait;

constexpr const char* kProg = "cta_ring_bench";
constexpr int64_t kTotal = int64_t{4} << 30;
constexpr int kMaxStreams = 4;
constexpr int kMaxConsumers = 16;

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

struct Params {
  const uint8_t* buf;
  int consumers;              // consumer warps per CTA (warp `consumers` is the producer)
  int sps;                    // k-steps per stage
  int stages;                 // ring stages
  int n;                      // streams
  int chunk[kMaxStreams];     // bytes per k-step of each stream
  int64_t area[kMaxStreams];  // byte offset of stream s's area
  int step_bytes;             // sum of the chunks
  int spi;                    // k-steps per item
  int64_t rounds;             // items per consumer warp
  int64_t cwarps;             // consumer warps in the grid
  int64_t area_total;         // bytes of all stream areas
  int alu;                    // synthetic operations per landed word
};

__global__ void __launch_bounds__((kMaxConsumers + 1) * 32)
    cta_ring_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, C = p.consumers;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t wslice = static_cast<uint32_t>(p.sps * p.step_bytes);  // one warp's part
  const uint32_t stage_bytes = wslice * C;
  const uint32_t full = base + stage_bytes * p.stages, empty = full + 8 * p.stages;
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, C);
    }
    mbar_init_fence();
  }
  __syncthreads();
  const int64_t nst = p.rounds * p.spi / p.sps;  // stages per launch of this CTA
  if (wid == C) {                                // producer
    for (int64_t i = 0; i < nst; ++i) {
      const int s = static_cast<int>(i % p.stages);
      if (i >= p.stages) mbar_wait(empty + 8 * s, static_cast<uint32_t>(((i / p.stages) - 1) & 1));
      if (lane == 0) mbar_arrive_expect_tx(full + 8 * s, stage_bytes);
      __syncwarp();
      if (lane < C) {  // lane w copies consumer warp w's part
        const int64_t step = i * p.sps, r = step / p.spi, kk = step % p.spi;
        const int64_t item = r * p.cwarps + static_cast<int64_t>(blockIdx.x) * C + lane;
        uint32_t dst = base + stage_bytes * s + wslice * lane;
        for (int t = 0; t < p.n; ++t) {
          const int c = p.chunk[t] * p.sps;
          bulk_copy(dst, p.buf + p.area[t] + (item * p.spi + kk) * p.chunk[t], c, full + 8 * s);
          dst += c;
        }
      }
    }
    return;
  }
  if (wid > C) return;
  uint32_t x = 0;
  for (int64_t i = 0; i < nst; ++i) {
    const int s = static_cast<int>(i % p.stages);
    mbar_wait(full + 8 * s, static_cast<uint32_t>((i / p.stages) & 1));
    const uint32_t part = base + stage_bytes * s + wslice * wid;
    if (p.alu > 0 && p.n == 4) {  // the NVFP4 streams: per k-step the lane's words, worked on
      for (int j = 0; j < p.sps; ++j)
        x ^= step_work(part + j * 1024, part + p.sps * 1024 + j * 1024,
                       part + 2 * p.sps * 1024 + j * 128 + lane * 4, p.alu, lane);
    } else {  // every landed byte read back
      x ^= read_back(part, p.chunk, p.n, p.sps, lane, false);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + 8 * s);
  }
  if (x == 0x12345678u) asm volatile("trap;");  // keeps the reads
}

struct Pattern {
  const char* name;
  int n;
  int chunk[kMaxStreams];
};
constexpr Pattern kPats[] = {
    {"4 streams (1024 + 1024 data, 128 + 128 scales)", 4, {1024, 1024, 128, 128}},
    {"1 interleaved stream (2304)", 1, {2304}},
};

// Fills p for `pt`, grid of `ctas` CTAs, `rounds` items per consumer warp.
void layout(Params& p, const Pattern& pt, int64_t ctas, int64_t rounds) {
  p.n = pt.n;
  p.step_bytes = 0;
  for (int s = 0; s < pt.n; ++s) p.chunk[s] = pt.chunk[s], p.step_bytes += pt.chunk[s];
  p.cwarps = ctas * p.consumers;
  p.rounds = rounds;
  int64_t off = 0;
  for (int s = 0; s < pt.n; ++s) p.area[s] = off, off += p.cwarps * rounds * p.spi * pt.chunk[s];
  p.area_total = off;
}

int smem_bytes(const Params& p) {
  return p.stages * p.consumers * p.sps * p.step_bytes + 16 * p.stages;
}

float time_launches(Params p, int ctas, int reps, int launches) {
  const int smem = smem_bytes(p);
  CK(cudaFuncSetAttribute(cta_ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int64_t slices = std::max<int64_t>(1, kTotal / p.area_total);
  const uint8_t* buf = p.buf;
  return moe::bench::median_ms_per_launch(reps, launches, [&](int i) {
    p.buf = buf + (i % slices) * p.area_total;
    cta_ring_kernel<<<ctas, (p.consumers + 1) * 32, smem>>>(p);
  });
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> sizes_mb, alus;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      if (!moe::bench::parse_list(kProg, "--sizes", argv[++i], sizes_mb, 0.1, 4000)) return 2;
    } else if (std::strcmp(argv[i], "--alu") == 0 && i + 1 < argc) {
      if (!moe::bench::parse_list(kProg, "--alu", argv[++i], alus, 0, 64)) return 2;
    } else {
      std::fprintf(stderr, "usage: cta_ring_bench [--alu N,...] [--sizes MB,...]\n");
      return 2;
    }
  }
  if (alus.empty()) alus.push_back(0);
  cudaDeviceProp prop{};
  if (!moe::bench::sm90_device("cta_ring_bench", &prop)) return 1;
  const int sms = prop.multiProcessorCount;
  const int64_t smem_sm = static_cast<int64_t>(prop.sharedMemPerMultiprocessor);
  uint8_t* buf = nullptr;
  CK(cudaMalloc(&buf, kTotal));
  CK(cudaMemset(buf, 1, kTotal));
  std::printf("device: %s, %d SMs, %lld bytes of shared memory per SM\n", prop.name, sms,
              static_cast<long long>(smem_sm));
  struct Shape {
    int consumers, ctas_per_sm, sps, stages;
  };
  // ring bytes per SM kept <= ~160 KB where the GEMM needs L1 for activations (ring + 60 KB L1)
  const Shape shapes[] = {
      {8, 1, 1, 4},  {8, 1, 1, 6},  {8, 1, 2, 3},  {8, 1, 2, 4},  {8, 1, 4, 2}, {12, 1, 1, 4},
      {12, 1, 2, 2}, {12, 1, 2, 3}, {16, 1, 1, 3}, {16, 1, 1, 4}, {4, 2, 2, 4}, {4, 2, 4, 2},
      {6, 2, 2, 3},  {8, 2, 1, 4},  {8, 2, 2, 2},  {4, 3, 2, 3},  {4, 4, 2, 2}, {4, 4, 1, 4},
  };
  // A shape's parameters before layout(): items of 48 k-steps (glm5 gate_up).
  auto params = [&](const Shape& sh, double alu) {
    Params p{};
    p.buf = buf;
    p.consumers = sh.consumers;
    p.sps = sh.sps;
    p.stages = sh.stages;
    p.spi = 48;
    p.alu = static_cast<int>(alu);
    return p;
  };
  auto fits = [&](const Params& p, int per_sm) {
    return (static_cast<int64_t>(smem_bytes(p)) + 1024) * per_sm <= smem_sm;
  };
  if (!sizes_mb.empty()) {
    std::printf(
        "| MB per launch | streams | consumers x CTAs per SM | steps per stage | stages | alu | us "
        "per launch | TB/s | %% of 4.8 |\n|---|---|---|---|---|---|---|---|---|\n");
    for (double mb : sizes_mb)
      for (const Shape& sh : shapes)
        for (double alu : alus) {
          const Pattern& pt = kPats[0];
          Params p = params(sh, alu);
          const int64_t ctas = int64_t{sms} * sh.ctas_per_sm;
          // whole items per warp; below one item, the item is cut to fit (a partial item, as
          // a stream-K segment is)
          const int64_t step = 2304, warps = ctas * sh.consumers;
          int64_t steps =
              std::max<int64_t>(sh.sps, static_cast<int64_t>(mb * 1e6) / (warps * step));
          steps = steps / sh.sps * sh.sps;
          if (steps < p.spi) {
            p.spi = static_cast<int>(steps);
            layout(p, pt, ctas, 1);
          } else {
            layout(p, pt, ctas, steps / p.spi);
          }
          if (!fits(p, sh.ctas_per_sm) || p.area_total > kTotal) continue;
          const float ms = time_launches(p, static_cast<int>(ctas), 7, 20);
          const double bytes = static_cast<double>(p.area_total), tbs = bytes / ms / 1e9;
          std::printf("| %.1f | %d | %d x %d | %d | %d | %d | %.1f | %.2f | %.1f%% |\n",
                      bytes / 1e6, pt.n, sh.consumers, sh.ctas_per_sm, sh.sps, sh.stages, p.alu,
                      ms * 1e3, tbs, tbs / 4.8 * 100);
          std::fflush(stdout);
        }
  } else {
    std::printf(
        "| streams | consumers x CTAs per SM | steps per stage | stages | KB ring per SM | alu | "
        "TB/s | %% of 4.8 |\n|---|---|---|---|---|---|---|---|\n");
    for (const Pattern& pt : kPats)
      for (const Shape& sh : shapes)
        for (double alu : alus) {
          Params p = params(sh, alu);
          const int64_t ctas = int64_t{sms} * sh.ctas_per_sm;
          const int64_t rounds = kTotal / (ctas * sh.consumers * int64_t{p.spi} * 2304);
          layout(p, pt, ctas, rounds);
          if (!fits(p, sh.ctas_per_sm)) continue;
          const float ms = time_launches(p, static_cast<int>(ctas), 5, 1);
          const double bytes = static_cast<double>(p.area_total), tbs = bytes / ms / 1e9;
          std::printf("| %d | %d x %d | %d | %d | %.0f | %d | %.2f | %.1f%% |\n", pt.n,
                      sh.consumers, sh.ctas_per_sm, sh.sps, sh.stages,
                      smem_bytes(p) * sh.ctas_per_sm / 1024.0, p.alu, tbs, tbs / 4.8 * 100);
          std::fflush(stdout);
        }
  }
  CK(cudaFree(buf));
  return 0;
}
