// moe_bench's timed CUDA-graph replays of one case: A alone, or A and B (--ab) interleaved by
// replay (A B, B A, ...: the same clocks for both) or, with --ab-blocks, in rounds of sustained
// blocks (each variant held under load, then timed: the power state each one sets; see
// moe_bench.cu's top). Every replay follows an L2 flush (a memset outside the timed region, or
// with --flush read a kernel reading the buffer).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/bench_util.cuh"

namespace moe::bench {

struct ReplayGraphs {
  cudaStream_t st;
  cudaGraphExec_t a, b;  // b: null without --ab
  void* flush;           // the L2 flush buffer
  size_t flush_bytes;
  bool flush_reads = false;  // --flush read: l2_flush_reads instead of a memset
};

// An L2 flush that leaves only clean lines (moe_bench --flush read): every 16-byte word of the
// buffer read, nothing stored unless their XOR is `magic` (the buffer is zeroed once, so never).
// After a memset flush the L2 holds the buffer's last ~50-60 MB as dirty lines, which the timed
// replay's misses write back to HBM (tens of MB, several us of the HBM's time at small T); a
// decode step between layers finds mostly clean lines (weights read).
__global__ void l2_flush_reads(const uint4* p, size_t n, unsigned magic, unsigned* sink) {
  unsigned x = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == magic) *sink = x;
}

// Times in ms: per replay (a, b) and per pair (ratio b / a); with --ab-blocks per round (each
// block's median) and each round's ratio.
struct ReplayTimes {
  std::vector<float> a, b, ratio;
};

// The median of v (the upper one of an even count; v is sorted in place).
inline float median(std::vector<float>& v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The L2 flush before a replay, on g.st: l2_flush_reads with --flush read, else a memset of the
// buffer to `fill`'s low byte.
inline void flush_l2(const ReplayGraphs& g, int fill) {
  if (g.flush_reads) {
    // (the buffer's last 16-byte word is the sink: the reads stop short of it)
    const size_t n = g.flush_bytes / 16 - 1;
    l2_flush_reads<<<1024, 512, 0, g.st>>>(static_cast<const uint4*>(g.flush), n, 0xdeadbeefu,
                                           static_cast<unsigned*>(g.flush) + 4 * n);
    CK(cudaGetLastError());
  } else {
    CK(cudaMemsetAsync(g.flush, fill & 0xff, g.flush_bytes, g.st));
  }
}

// `iters` timed replays (after 3 untimed ones) of each graph; sustain_ms > 0: the load held that
// long first (A and B alternating), or before each block with ab_blocks > 0 (needs g.b), whose
// per-round ratios are printed as an "ab-blocks <label>" line.
inline ReplayTimes time_replays(const ReplayGraphs& g, int iters, int sustain_ms, int ab_blocks,
                                const std::string& label) {
  const int nv = g.b != nullptr ? 2 : 1;
  std::vector<cudaEvent_t> ev(2 * nv * iters);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  // One replay of graph v (0 A, 1 B) after an L2 flush, timed by the event pair e[0], e[1] unless
  // e is null.
  auto replay = [&](int v, int fill, const cudaEvent_t* e) {
    flush_l2(g, fill);
    if (e != nullptr) CK(cudaEventRecord(e[0], g.st));
    CK(cudaGraphLaunch(v ? g.b : g.a, g.st));
    if (e != nullptr) CK(cudaEventRecord(e[1], g.st));
  };
  auto elapsed = [&](const cudaEvent_t* e) {
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, e[0], e[1]));
    return ms;
  };
  // The load held for ms of wall time: graph v0, or A and B alternating when v0 < 0.
  auto hold = [&](int v0, int ms) {
    const auto t0 = std::chrono::steady_clock::now();
    while (
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() <
        ms) {
      for (int r = 0; r < 8; ++r) replay(v0 >= 0 ? v0 : r % nv, r, nullptr);
      CK(cudaStreamSynchronize(g.st));
    }
  };
  ReplayTimes out;
  if (ab_blocks > 0 && nv == 2) {
    // Rounds of [A held, A timed, B held, B timed] (B first in odd rounds).
    std::vector<float> t(iters);
    for (int rd = 0; rd < ab_blocks; ++rd)
      for (int j = 0; j < 2; ++j) {
        const int v = (rd & 1) ? 1 - j : j;
        hold(v, sustain_ms);
        for (int it = -3; it < iters; ++it) replay(v, it, it >= 0 ? &ev[2 * it] : nullptr);
        CK(cudaStreamSynchronize(g.st));
        for (int it = 0; it < iters; ++it) t[it] = elapsed(&ev[2 * it]);
        (v ? out.b : out.a).push_back(median(t));
      }
    std::printf("  ab-blocks %s: B / A per round", label.c_str());
    for (int rd = 0; rd < ab_blocks; ++rd) {
      out.ratio.push_back(out.b[rd] / out.a[rd]);
      std::printf(" %.4f", out.ratio.back());
    }
    std::printf("\n");
  } else {
    if (sustain_ms > 0) hold(-1, sustain_ms);
    // Event pair 2 * (nv * it + v), + 1 times variant v of iteration it.
    for (int it = -3; it < iters; ++it)
      for (int j = 0; j < nv; ++j) {
        const int v = (it & 1) ? nv - 1 - j : j;  // A B, B A, ...
        replay(v, it, it >= 0 ? &ev[2 * (nv * it + v)] : nullptr);
      }
    CK(cudaStreamSynchronize(g.st));
    for (int it = 0; it < iters; ++it) {
      out.a.push_back(elapsed(&ev[2 * nv * it]));
      if (nv == 2) {
        out.b.push_back(elapsed(&ev[2 * (nv * it + 1)]));
        out.ratio.push_back(out.b.back() / out.a.back());
      }
    }
  }
  for (auto& e : ev) CK(cudaEventDestroy(e));
  return out;
}

}  // namespace moe::bench
