// bench/copy: DRAM read throughput of per-warp cp.async rings, i.e. the copy skeleton of the
// grouped MoE GEMMs' pipelined kernel (moe_gemm_pipe_kernel) with nothing computed: what that
// structure can stream at best, against which the GEMM's own numbers are read.
// Every warp streams "matrices" (streams): per step it copies `chunk` contiguous bytes of each
// stream into its ring (16-byte cp.async per lane with the GEMM's L2::256B hint; 4-byte copies per
// lane for 128-byte chunks, the NVFP4 scale words) and keeps `depth` steps in flight; stream s
// of every warp lies in one contiguous area, as an expert matrix does. Work is dealt as the GEMM
// deals it: items of `spi` consecutive steps (a 16-row block of a matrix: glm5 gate_up 48 steps,
// down 16), item i of a stream at i * spi * chunk, items round-robin to the grid's warps (or,
// spi 0, one contiguous slice per warp), optionally through a multiplicative permutation, with
// `chain` dependent loads of an item descriptor before an item's first copy (the GEMM reads its
// tile list there). CTAs of 4 warps.
// Usage:
//   ring_bench                  sustained rows (4 GiB per launch, median of 5 launches)
//   ring_bench --sizes MB,...   short launches of the NVFP4 ring's step (what the decode GEMMs are
//                               at T 1), 20 back to back per timing, median of 7, us per launch
//   --full-read                 every lane reads its landed bytes back from shared memory (the
//                               GEMM's reads) instead of one word per step
//   --full-read-u32             the same bytes in 4-byte loads (4x the load instructions)
//   --issue-first               refill the previous stage before reading the landed one (the
//                               GEMM's order) instead of after
//   --alu N                     the NVFP4 streams read back per k-step with N rounds of synthetic
//                               work (ring_common.cuh: ~48 N instructions per lane and step; the
//                               kernel's ~390 is N ~ 8) standing in for the dequantization
//   --bulk                      lane 0 copies every chunk with one cp.async.bulk (completion on a
//                               per-stage mbarrier) instead of the lanes' cp.async
// Needs compute capability 9.0 or later.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "../common/bench_util.cuh"
#include "backends/cuda/kernels/moe_grouped/moe_grouped.cuh"
#include "ring_common.cuh"

namespace {

constexpr int kMaxStreams = 4;
constexpr int kWarpsPerCta = 4;
constexpr int64_t kTotal = int64_t{4} << 30;

struct Pattern {
  const char* name;
  int n;
  int chunk[kMaxStreams];
};
// The NVFP4 ring's step today: 1024 + 1024 data bytes (gate, up) and 128 + 128 scale bytes.
constexpr Pattern kNvfp4Ring = {
    "nvfp4 ring: 1024 + 1024 data, 128 + 128 scales", 4, {1024, 1024, 128, 128}};

struct Params {
  const uint8_t* buf;
  int n;
  int chunk[kMaxStreams];
  int64_t area[kMaxStreams];  // byte offset of stream s's area (all warps)
  int64_t steps;              // steps per warp
  int step_bytes;             // sum of the chunks: one ring stage
  int spi;                    // steps per item (0: every warp streams one contiguous slice)
  int64_t warps;              // warps in the grid
  int64_t items;              // items per stream (spi > 0): whole items of every warp
  int64_t area_total;         // bytes of all stream areas (one launch's slice of the buffer)
  bool permute;               // items through i -> i * mul mod n (adjacent warps far apart)
  int64_t mul;                // coprime to the item count
  const int* tbl;             // zeros (L2-resident): the item descriptors
  int chain;                  // dependent descriptor loads before an item's first copy
  int full_read;              // read every landed byte back (as the GEMM does): 1 in 16-byte
                              // loads, 2 in 4-byte loads; 0: one word per step
  bool issue_first;           // refill the previous stage before reading this one (the GEMM's
                              // order), else after
  bool bulk;  // lane 0 copies each chunk with one cp.async.bulk (mbarrier per stage), else lanes
  int alu;    // rounds of synthetic work per k-step of the NVFP4 streams (ring_common.cuh)
};

using moe::cuda::grouped::bulk_copy;
using moe::cuda::grouped::mbar_arrive_expect_tx;
using moe::cuda::grouped::mbar_init;
using moe::cuda::grouped::mbar_init_fence;
using moe::cuda::grouped::mbar_wait;

// The GEMM's own copy primitives (moe_grouped.cuh, moe_grouped_common.cuh), so the numbers are
// theirs; 8-byte copies (256-byte chunks) have no GEMM counterpart.
using moe::cuda::grouped::cp_async16_l2;
using moe::cuda::grouped::cp_async4;
using moe::cuda::grouped::cp_async_commit;
using moe::cuda::grouped::cp_async_wait;
__device__ __forceinline__ void cp8(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(dst), "l"(src) : "memory");
}

// IF: refill the previous stage before reading the landed one (Params::issue_first).
template <int D, bool IF>
__global__ void __launch_bounds__(kWarpsPerCta * 32) ring_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(16) uint8_t smem[];
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  const int64_t w = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + wid;
  const uint32_t ring =
      static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + wid * (D + 1) * p.step_bytes;
  // bulk: one mbarrier per stage after the CTA's rings
  const uint32_t bars = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) +
                        (blockDim.x >> 5) * (D + 1) * p.step_bytes + wid * (D + 1) * 8;
  if (p.bulk) {
    if (lane == 0)
      for (int st = 0; st < D + 1; ++st) mbar_init(bars + 8 * st, 1);
    mbar_init_fence();
    __syncwarp();
  }
  // Issue cursor: item round r, step kk in the item, base = the item's first step index
  // (recomputed once per item: address math off the copy loop).
  auto item_base = [&](int64_t round) -> int64_t {
    if (p.spi == 0) return w * p.steps;
    int64_t it = round * p.warps + w;
    if (p.permute) it = static_cast<int64_t>(static_cast<uint64_t>(it) * p.mul % p.items);
    int64_t z = 0;
    for (int i = 0; i < p.chain; ++i) z = __ldcg(p.tbl + ((it + z) & 1023));
    return (it + z) * p.spi;
  };
  int64_t r = 0, kk = 0, base = item_base(0);
  auto issue = [&](int64_t st) {
    uint32_t dst = ring + static_cast<uint32_t>(st % (D + 1)) * p.step_bytes;
    const int64_t idx = base + kk;
    if (p.spi > 0 && ++kk == p.spi) {
      kk = 0;
      base = item_base(++r);
    } else if (p.spi == 0) {
      ++kk;
    }
    const uint32_t bar = bars + 8 * static_cast<uint32_t>(st % (D + 1));
    if (p.bulk && lane == 0) mbar_arrive_expect_tx(bar, p.step_bytes);
#pragma unroll
    for (int s = 0; s < kMaxStreams; ++s) {
      if (s >= p.n) break;
      const int c = p.chunk[s];
      const uint8_t* src = p.buf + p.area[s] + idx * c;
      if (p.bulk) {
        if (lane == 0) bulk_copy(dst, src, c, bar);
      } else if (c >= 512) {
        for (int o = lane * 16; o < c; o += 512) cp_async16_l2(dst + o, src + o);
      } else if (c == 256) {
        cp8(dst + lane * 8, src + lane * 8);
      } else {
        cp_async4(dst + lane * 4, src + lane * 4);
      }
      dst += c;
    }
    if (!p.bulk) cp_async_commit();
  };
  // the stage of step st + D (an empty cp.async group past the end keeps the group count)
  auto refill = [&](int64_t st) {
    if (st + D < p.steps)
      issue(st + D);
    else if (!p.bulk)
      cp_async_commit();
  };
  for (int64_t st = 0; st < D && st < p.steps; ++st) issue(st);
  uint32_t x = 0;
  for (int64_t st = 0; st < p.steps; ++st) {
    if (p.bulk)
      mbar_wait(bars + 8 * static_cast<uint32_t>(st % (D + 1)),
                static_cast<uint32_t>((st / (D + 1)) & 1));
    else
      cp_async_wait<D - 1>();
    __syncwarp();
    if (IF) refill(st);
    const uint32_t stage = ring + static_cast<uint32_t>(st % (D + 1)) * p.step_bytes;
    if (p.alu > 0 && p.n == 4 && p.chunk[0] % 1024 == 0 && p.chunk[0] == p.chunk[1]) {
      // the NVFP4 streams (one or two k-steps per stage): per k-step the lane's words, worked on
      const int sps = p.chunk[0] / 1024;
      for (int j = 0; j < sps; ++j)
        x ^= moe::bench::step_work(stage + j * 1024, stage + sps * 1024 + j * 1024,
                                   stage + sps * 2048 + j * 128 + lane * 4, p.alu, lane);
    } else if (p.full_read) {  // every landed byte (in 4-byte loads with --full-read-u32)
      x ^= moe::bench::read_back(stage, p.chunk, p.n, 1, lane, p.full_read == 2);
    } else {
      uint32_t v;  // one word of the landed stage read back
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(stage + lane * 4));
      x ^= v;
    }
    __syncwarp();
    if (!IF) refill(st);
  }
  if (x == 0x12345678u) asm volatile("trap;");  // keeps the reads (the buffer holds 0x01 bytes)
}

// Fills the stream areas and the permutation of p for `pt`, warps in the grid, steps per warp.
void layout(Params& p, const Pattern& pt, int64_t warps, int64_t steps, int spi) {
  p.n = pt.n;
  p.step_bytes = 0;
  for (int s = 0; s < pt.n; ++s) p.chunk[s] = pt.chunk[s], p.step_bytes += pt.chunk[s];
  p.warps = warps;
  p.steps = steps;
  p.spi = spi;
  const int64_t span = spi > 0 ? (steps + spi - 1) / spi * spi : steps;  // whole items
  int64_t off = 0;
  for (int s = 0; s < pt.n; ++s) p.area[s] = off, off += warps * span * pt.chunk[s];
  p.items = spi > 0 ? span / spi * warps : 1;
  p.area_total = off;
  int64_t m = static_cast<int64_t>(static_cast<double>(p.items) * 0.6180339887) | 1;
  while (std::gcd(m, p.items) != 1) m += 2;
  p.mul = m;
}

// Median ms of `reps` timings of `launches` back-to-back launches (per launch), each launch on
// its own slice of the buffer when several fit (no L2 reuse between launches).
template <int D, bool IF>
float time_launches(Params p, int blocks, int reps, int launches) {
  const int smem = kWarpsPerCta * (D + 1) * (p.step_bytes + 8);
  CK(cudaFuncSetAttribute(ring_kernel<D, IF>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int64_t bytes = p.area_total, slices = std::max<int64_t>(1, kTotal / bytes);
  const uint8_t* buf = p.buf;
  return moe::bench::median_ms_per_launch(reps, launches, [&](int i) {
    p.buf = buf + (i % slices) * bytes;
    ring_kernel<D, IF><<<blocks, kWarpsPerCta * 32, smem>>>(p);
  });
}

template <bool IF>
float time_depth_if(int d, const Params& p, int blocks, int reps, int launches) {
  switch (d) {
    case 1:
      return time_launches<1, IF>(p, blocks, reps, launches);
    case 2:
      return time_launches<2, IF>(p, blocks, reps, launches);
    case 3:
      return time_launches<3, IF>(p, blocks, reps, launches);
    case 4:
      return time_launches<4, IF>(p, blocks, reps, launches);
    default:
      return time_launches<6, IF>(p, blocks, reps, launches);
  }
}
float time_depth(int d, const Params& p, int blocks, int reps, int launches) {
  return p.issue_first ? time_depth_if<true>(d, p, blocks, reps, launches)
                       : time_depth_if<false>(d, p, blocks, reps, launches);
}

bool fits(const cudaDeviceProp& prop, int d, int step_bytes, int warps_per_sm) {
  const int64_t smem = int64_t{kWarpsPerCta} * (d + 1) * (step_bytes + 8) + 1024;
  return smem * (warps_per_sm / kWarpsPerCta) <=
         static_cast<int64_t>(prop.sharedMemPerMultiprocessor);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> sizes_mb;
  int full_read = 0;
  bool bulk = false, issue_first = false;
  int alu = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      if (!moe::bench::parse_list("ring_bench", "--sizes", argv[++i], sizes_mb, 0.1, 4000))
        return 2;
    } else if (std::strcmp(argv[i], "--full-read") == 0) {
      full_read = 1;
    } else if (std::strcmp(argv[i], "--full-read-u32") == 0) {
      full_read = 2;
    } else if (std::strcmp(argv[i], "--alu") == 0 && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 0 || v > 64) {
        std::fprintf(stderr, "ring_bench: --alu takes 0..64 rounds per word, got '%s'\n", argv[i]);
        return 2;
      }
      alu = static_cast<int>(v);
    } else if (std::strcmp(argv[i], "--issue-first") == 0) {
      issue_first = true;
    } else if (std::strcmp(argv[i], "--bulk") == 0) {
      bulk = true;
    } else {
      std::fprintf(stderr,
                   "usage: ring_bench [--sizes MB,MB,...] [--full-read | --full-read-u32] "
                   "[--issue-first] [--bulk] [--alu N]\n");
      return 2;
    }
  }
  cudaDeviceProp prop{};
  if (!moe::bench::sm90_device("ring_bench", &prop)) return 1;
  const int sms = prop.multiProcessorCount;
  uint8_t* buf = nullptr;
  int* tbl = nullptr;
  CK(cudaMalloc(&buf, kTotal));
  CK(cudaMemset(buf, 1, kTotal));
  CK(cudaMalloc(&tbl, 1024 * sizeof(int)));
  CK(cudaMemset(tbl, 0, 1024 * sizeof(int)));
  std::printf("device: %s, %d SMs, %zu bytes of shared memory per SM; stage read back: %s\n",
              prop.name, sms, static_cast<size_t>(prop.sharedMemPerMultiprocessor),
              full_read == 2 ? "every byte, 4-byte loads"
              : full_read    ? "every byte"
                             : "one word");
  std::printf("stage refilled %s it is read\n", issue_first ? "before" : "after");
  std::printf("copies: %s\n",
              bulk ? "cp.async.bulk, one per chunk by lane 0" : "cp.async per lane");

  if (!sizes_mb.empty()) {
    std::printf(
        "| MB per launch | steps per item | warps per SM | us per launch | TB/s | "
        "%% of 4.8 |\n|---|---|---|---|---|---|\n");
    for (double mb : sizes_mb)
      for (int spi : {48, 16})
        for (int wps : {12, 16}) {
          Params p{};
          p.buf = buf;
          p.tbl = tbl;
          p.full_read = full_read;
          p.issue_first = issue_first;
          p.bulk = bulk;
          p.alu = alu;
          const int64_t warps = int64_t{sms} * wps;
          const int step = 1024 + 1024 + 128 + 128;
          // a warp reads `steps` steps of its items: part of one item when steps < spi, as a
          // stream-K segment does
          const int64_t steps =
              std::max<int64_t>(1, static_cast<int64_t>(mb * 1e6) / (warps * step));
          layout(p, kNvfp4Ring, warps, steps, spi);
          if (p.area_total > kTotal) continue;
          const float ms = time_depth(3, p, sms * (wps / kWarpsPerCta), 7, 20);
          const double bytes = static_cast<double>(warps) * steps * step, tbs = bytes / ms / 1e9;
          std::printf("| %.1f | %d | %d | %.1f | %.2f | %.1f%% |\n", bytes / 1e6, spi, wps,
                      ms * 1e3, tbs, tbs / 4.8 * 100);
          std::fflush(stdout);
        }
  } else {
    const Pattern pats[] = {
        kNvfp4Ring,
        {"data only: 1024 + 1024", 2, {1024, 1024}},
        {"one stream of 2304 (gate, up, scales interleaved)", 1, {2304}},
        {"two steps per copy: 2048 + 2048", 2, {2048, 2048}},
        {"four steps per copy: 4096 + 4096", 2, {4096, 4096}},
        {"two steps per copy with scales: 2048 + 2048 + 256 + 256", 4, {2048, 2048, 256, 256}},
        {"one stream of 4608 (two steps interleaved)", 1, {4608}},
    };
    std::printf(
        "| streams per warp (bytes per step) | steps per item | item order | loads per "
        "item start | depth | warps per SM | KB in flight per SM | TB/s | %% of 4.8 |\n"
        "|---|---|---|---|---|---|---|---|---|\n");
    struct Order {
      int spi;
      bool permute;
      int chain;
    };
    // 2 / 4 steps per item with one descriptor load: TP8 down's items (K 256, one or two
    // sub-blocks of the NVFP4 ring).
    const Order orders[] = {{0, false, 0}, {48, false, 0}, {16, false, 0}, {48, true, 0},
                            {16, true, 0}, {48, false, 1}, {48, false, 3}, {16, false, 3},
                            {2, false, 1}, {4, false, 1},  {2, true, 1},   {4, true, 1}};
    for (const Order& o : orders)
      for (const Pattern& pt : pats)
        for (int d : {1, 2, 3, 4, 6})
          for (int wps : {8, 12, 16}) {
            // item orders only for the NVFP4 ring as the GEMM runs it (depth 3, 12-16 warps)
            if ((o.spi > 0 || o.chain > 0) && (pt.n != 4 || d != 3 || wps < 12)) continue;
            Params p{};
            p.buf = buf;
            p.tbl = tbl;
            p.permute = o.permute;
            p.chain = o.chain;
            p.full_read = full_read;
            p.issue_first = issue_first;
            p.bulk = bulk;
            p.alu = alu;
            int sb = 0;
            for (int s = 0; s < pt.n; ++s) sb += pt.chunk[s];
            if (!fits(prop, d, sb, wps)) continue;
            const int64_t warps = int64_t{sms} * wps;
            int64_t steps = kTotal / (warps * sb);
            if (o.spi > 0) steps = steps / o.spi * o.spi;
            layout(p, pt, warps, steps, o.spi);
            const float ms = time_depth(d, p, sms * (wps / kWarpsPerCta), 5, 1);
            const double bytes = static_cast<double>(warps) * steps * sb, tbs = bytes / ms / 1e9;
            std::printf("| %s | %d | %s | %d | %d | %d | %.0f | %.2f | %.1f%% |\n", pt.name, o.spi,
                        o.permute ? "permuted" : "round-robin", o.chain, d, wps,
                        wps * d * sb / 1024.0, tbs, tbs / 4.8 * 100);
            std::fflush(stdout);
          }
  }
  CK(cudaFree(tbl));
  CK(cudaFree(buf));
  return 0;
}
