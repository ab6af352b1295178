// bench/wgmma: the tensor-pipe rate of FP8 warpgroup-MMA issue patterns with both operands
// resident in shared memory (nothing loaded, no barrier): the ceiling of the grouped FP8 GEMM's
// k-block structure (sm90_moe_wgmma_gemm.cuh, F8) and of the alternatives, on the same CTA tile
// (two warpgroups of 64 tokens x 256 weight rows, 128 k per k-block, 128-byte swizzle).
// Patterns, per warpgroup and k-block:
//   quarters   the GEMM's: 4 x (4 wgmma m64n64k32 into one of two 32-register partial sums),
//              two groups in flight (wait 1), each partial scaled into the f32 accumulators
//   halves     2 x (4 wgmma m64n128k32 into one 64-register partial sum, wait 0, scale)
//   q-direct   16 wgmma m64n64k32 straight into the accumulators, one group, wait 0 (no scaling:
//              the tensor pipe alone at n64)
//   h-direct   8 wgmma m64n128k32 likewise
//   n256       4 wgmma m64n256k32 likewise
// Then the quarters pattern with the GEMM's surroundings added one at a time (wgmma_real_kernel):
// 4 operand stages rotated per k-block, items of 48 / 16 k-blocks (gate_up / down at D 6144, I
// 2048) ending in a CTA barrier and the accumulators stored and zeroed, the same items in
// ping-pong (the warpgroups half an item apart, each ending on a barrier of its own; not yet run
// on the GPU), per-k-block scale loads.
// Tokens as N (the orientation that would cut prefill's padding: weights as A, 64 rows per
// warpgroup; the tile's tokens as B, n a multiple of 8; docs/moe-kernels.md): the same FLOP per
// k-block as 16 / 8 / 4 column groups of wgmma m64n16k32 / m64n32k32 / m64n64k32 straight into
// the accumulators (what small-n wgmma costs: A is re-read for every n), and the quarters with a
// scale per accumulator column (a per-token activation scale from shared memory times the weight
// block's) instead of per row (what the promotion costs in that orientation), loaded in the
// promotion or (column scales early: the tokens-as-N kernels' form) a half's scales for two
// quarters while they run.
// A in registers (the tokens' fragments by ldmatrix once per k-block, wgmma with A from registers:
// shared memory read 40 instead of 64 KB per warpgroup and k-block at n64, whose operands take
// all of its 128 bytes per cycle at the tensor pipe's full rate): q-direct, quarters and n256 so,
// each first checked against its descriptor form (the same sums). `wgmma_bench ITERS power`
// runs only those six, twice in turn, for seconds each (ITERS 2000000: ~2 s): under the power
// cap, whether fewer shared-memory reads per FLOP buy clock (the GHz column).
// One CTA of 256 threads per SM, `iters` k-blocks each; FLOP per cycle per SM from the CTA's own
// clock64 span (so the SM clock under power limits does not enter), against the 8192 dense FP8
// FLOP per cycle per SM of sm_90 (4096 x 2).
// Usage: wgmma_bench [iters [power]]   (default 20000; exit 1 if a register-A check differs)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../common/bench_util.cuh"
#include "backends/cuda/kernels/moe_grouped/sm90_moe_wgmma_gemm.cuh"

namespace {

using namespace moe::cuda::wgmma_gemm;
constexpr int kA = 2 * 64 * 128, kB = 256 * 128;  // bytes: two warpgroups' tokens, 256 rows

enum Pattern {
  kQuarters,
  kHalves,
  kQDirect,
  kHDirect,
  kN256,
  kN16,
  kN32,
  kColScales,
  kColEarly,
  kQDirectRS,
  kQuartersRS,
  kN256RS,
  kPatterns
};
const char* kNames[kPatterns] = {"quarters (the GEMM)",
                                 "halves n128",
                                 "q-direct n64",
                                 "h-direct n128",
                                 "n256",
                                 "n16 direct (tokens as N)",
                                 "n32 direct (tokens as N)",
                                 "quarters, column scales",
                                 "quarters, column scales early",
                                 "q-direct n64, A in registers",
                                 "quarters, A in registers",
                                 "n256, A in registers"};

#ifdef MOE_WGMMA_ENABLED
// Copies the operands (A then B, 128-byte-swizzle rows as filled) into `stages` consecutive
// stages of the 1024-aligned dynamic shared memory, published to the async proxy; returns the
// aligned shared address.
__device__ __forceinline__ uint32_t stage_operands(const uint8_t* src, int stages) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t s0 = (raw + 1023u) & ~1023u;
  uint8_t* sp = smem_raw + (s0 - raw);
  for (int st = 0; st < stages; ++st)
    for (int i = threadIdx.x; i < (kA + kB) / 16; i += blockDim.x)
      reinterpret_cast<uint4*>(sp + st * (kA + kB))[i] = reinterpret_cast<const uint4*>(src)[i];
  fence_proxy_async();
  __syncthreads();
  return s0;
}

// One k-block of the FP8 GEMM's quarters (sm90_moe_wgmma_gemm.cuh, F8): 4 x (4 wgmma m64n64k32
// into one of two partial sums), two groups in flight, each finished partial handed to
// promote(qd, partial) while the next quarter runs; issued(qd) right after quarter qd is issued
// (colearly_kblock's scale loads). A (the warpgroup's tokens) by descriptor da, or with RS from
// registers: load_a_regs from the tile at shared address `tile` once for the k-block.
struct NoIssued {
  __device__ void operator()(int) const {}
};
template <bool RS = false, typename Promote, typename Issued = NoIssued>
__device__ __forceinline__ void quarters_pipeline(float (&part)[2][32], uint64_t da, uint64_t db,
                                                  Promote promote, Issued issued = {},
                                                  uint32_t tile = 0) {
  [[maybe_unused]] uint32_t a[4][4];
  if constexpr (RS) {
    load_a_regs(a, tile);
    wgmma_fence();
  }
  auto issue = [&](int qd) {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint64_t b = db + 512 * qd + 2 * kk;
      if constexpr (RS)
        wgmma_m64n64k32_e4m3_rs(part[qd & 1], a[kk], b, kk);
      else
        wgmma_m64n64k32_e4m3(part[qd & 1], da + 2 * kk, b, kk);
    }
    wgmma_commit();
    issued(qd);
  };
  issue(0);
  issue(1);
#pragma unroll
  for (int qd = 0; qd < 4; ++qd) {
    if (qd + 1 < 4)
      wgmma_wait<1>();
    else
      wgmma_wait<0>();
    fence_acc(part[qd & 1]);
    promote(qd, part[qd & 1]);
    if (qd + 2 < 4) {
      wgmma_fence();
      issue(qd + 2);
    }
  }
}
// The GEMM's promotion: each partial scaled per row (the token's activation scale times the
// weight block's) into the f32 accumulators. RS: A from registers (quarters_pipeline).
template <bool RS = false>
__device__ __forceinline__ void quarters_kblock(float (&acc)[128], float (&part)[2][32],
                                                uint64_t da, uint64_t db, float sc0, float sc1,
                                                uint32_t tile = 0) {
  quarters_pipeline<RS>(
      part, da, db,
      [&](int qd, const float(&pt)[32]) {
#pragma unroll
        for (int i = 0; i < 32; ++i)
          acc[32 * qd + i] = fmaf(pt[i], (i & 2) ? sc1 : sc0, acc[32 * qd + i]);
      },
      NoIssued{}, tile);
}

// One k-block as 256 / N column groups of 4 wgmma m64nNk32 straight into the accumulators (group
// g: staged rows N g.., accumulators N / 2 g..), one commit group, wait 0. RS (N 64 / 256): A
// from registers, load_a_regs from `tile` first.
template <int N, bool RS = false>
__device__ __forceinline__ void direct_kblock(float (&acc)[128], uint64_t da, uint64_t db,
                                              uint32_t tile = 0) {
  static_assert(!RS || N == 64 || N == 256, "register A: n64 and n256");
  [[maybe_unused]] uint32_t a[4][4];
  if constexpr (RS) {
    load_a_regs(a, tile);
    wgmma_fence();
  }
#pragma unroll
  for (int g = 0; g < 256 / N; ++g)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      float(&d)[N / 2] = *reinterpret_cast<float(*)[N / 2]>(acc + N / 2 * g);
      const uint64_t b = db + 8 * N * g + 2 * kk;  // N rows x 128 bytes, in 16-byte units
      if constexpr (RS && N == 64)
        wgmma_m64n64k32_e4m3_rs(d, a[kk], b, 1);
      else if constexpr (RS)
        wgmma_m64n256k32_e4m3_rs(d, a[kk], b, 1);
      else if constexpr (N == 16)
        wgmma_m64n16k32_e4m3(d, da + 2 * kk, b, 1);
      else if constexpr (N == 32)
        wgmma_m64n32k32_e4m3(d, da + 2 * kk, b, 1);
      else if constexpr (N == 64)
        wgmma_m64n64k32_e4m3(d, da + 2 * kk, b, 1);
      else
        wgmma_m64n256k32_e4m3(d, da + 2 * kk, b, 1);
    }
  wgmma_commit();
  wgmma_wait<0>();
  fence_acc(acc);
}

// The quarters with a scale per accumulator column: accumulator 4 j + q of quarter qd is column
// 64 qd + 8 j + 2 c + (q & 1) (c = lane % 4), scaled by cs[column] (the column's per-token
// activation scale, from shared memory) times sw (the weight block's).
__device__ __forceinline__ void colscale_kblock(float (&acc)[128], float (&part)[2][32],
                                                uint64_t da, uint64_t db, const float* cs,
                                                float sw) {
  const int c = threadIdx.x & 3;
  quarters_pipeline(part, da, db, [&](int qd, const float(&pt)[32]) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float2 s2 = *reinterpret_cast<const float2*>(cs + 64 * qd + 8 * j + 2 * c);
      const float s0 = s2.x * sw, s1 = s2.y * sw;
#pragma unroll
      for (int q = 0; q < 4; ++q)
        acc[32 * qd + 4 * j + q] = fmaf(pt[4 * j + q], (q & 1) ? s1 : s0, acc[32 * qd + 4 * j + q]);
    }
  });
}

// The promotion of the tokens-as-N pair kernels (experiments/2026-12-05-tokens-as-n.patch,
// tn_kblock): quarters 0, 1 share the columns (tokens) of half 0, quarters 2, 3 those of half 1;
// a half's 16 column scales per lane (contiguous per lane, 4 x 16-byte loads) are loaded while
// its quarters run, so each promotion is 16 FMUL + 32 FFMA with no load.
__device__ __forceinline__ void colearly_kblock(float (&acc)[128], float (&part)[2][32],
                                                uint64_t da, uint64_t db, const float* cs,
                                                float sw0, float sw1) {
  const int c = threadIdx.x & 3;
  float a[16];
  quarters_pipeline(
      part, da, db,
      [&](int qd, const float(&pt)[32]) {
        const float sw = qd & 1 ? sw1 : sw0;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const float s0 = a[2 * j] * sw, s1 = a[2 * j + 1] * sw;
#pragma unroll
          for (int q = 0; q < 4; ++q)
            acc[32 * qd + 4 * j + q] =
                fmaf(pt[4 * j + q], (q & 1) ? s1 : s0, acc[32 * qd + 4 * j + q]);
        }
      },
      [&](int qd) {  // after quarters 1 and 3: the scales of half (qd - 1) / 2
        if (qd != 1 && qd != 3) return;
        const float4* q = reinterpret_cast<const float4*>(cs + 64 * (qd >> 1) + 16 * c);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 v = q[i];
          a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
        }
      });
}

// Ends a timed kernel: the accumulators' sum into the thread's output slot (keeps every wgmma
// live), the CTA's clock64 span.
__device__ __forceinline__ void finish(const float (&acc)[128], long long t0, float* out,
                                       long long* cycles) {
  const long long t1 = clock64();
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < 128; ++i) sum += acc[i];
  out[(static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) * 128] += sum;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}
#endif

template <int P>
__global__ void __launch_bounds__(256, 1)
    wgmma_bench_kernel(const uint8_t* src, const float* scales, int iters, float* out,
                       long long* cycles) {
#ifdef MOE_WGMMA_ENABLED
  const uint32_t s0 = stage_operands(src, 1);
  const int wg = threadIdx.x >> 7;
  const uint64_t da = smem_desc(s0 + wg * 64 * 128), db = smem_desc(s0 + kA);
  const float sc0 = scales[threadIdx.x & 3], sc1 = scales[4 + (threadIdx.x & 3)];
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  float part[2][32];
  float parth[64];
  __shared__ float colsc[2][256];  // per-token scales of two k-blocks (kColScales)
  if constexpr (P == kColScales || P == kColEarly) {
    for (int i = threadIdx.x; i < 512; i += blockDim.x)
      colsc[i / 256][i % 256] = 1e-3f * (i % 7 + 1);
    __syncthreads();
  }
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
    if constexpr (P == kQuarters) {
      quarters_kblock(acc, part, da, db, sc0, sc1);
    } else if constexpr (P == kHalves) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (h > 0) wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          wgmma_m64n128k32_e4m3(parth, da + 2 * kk, db + 1024 * h + 2 * kk, kk);
        wgmma_commit();
        wgmma_wait<0>();
        fence_acc(parth);
#pragma unroll
        for (int i = 0; i < 64; ++i)
          acc[64 * h + i] = fmaf(parth[i], (i & 2) ? sc1 : sc0, acc[64 * h + i]);
      }
    } else if constexpr (P == kQDirect) {
      direct_kblock<64>(acc, da, db);
    } else if constexpr (P == kN16) {
      direct_kblock<16>(acc, da, db);
    } else if constexpr (P == kN32) {
      direct_kblock<32>(acc, da, db);
    } else if constexpr (P == kColScales) {
      colscale_kblock(acc, part, da, db, colsc[it & 1], sc0);
    } else if constexpr (P == kColEarly) {
      colearly_kblock(acc, part, da, db, colsc[it & 1], sc0, sc1);
    } else if constexpr (P == kQDirectRS) {
      direct_kblock<64, true>(acc, da, db, s0 + wg * 64 * 128);
    } else if constexpr (P == kN256RS) {
      direct_kblock<256, true>(acc, da, db, s0 + wg * 64 * 128);
    } else if constexpr (P == kQuartersRS) {
      quarters_kblock<true>(acc, part, da, db, sc0, sc1, s0 + wg * 64 * 128);
    } else if constexpr (P == kHDirect) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          wgmma_m64n128k32_e4m3(*reinterpret_cast<float(*)[64]>(acc + 64 * h), da + 2 * kk,
                                db + 1024 * h + 2 * kk, 1);
      wgmma_commit();
      wgmma_wait<0>();
      fence_acc(acc);
    } else {
      direct_kblock<256>(acc, da, db);
    }
  }
  finish(acc, t0, out, cycles);
#else
  __trap();
#endif
}

// The quarters pattern with the GEMM's surroundings added one at a time: ST stages of operands
// (48 KB each) rotated per k-block, items of IT k-blocks (0: none) ending in wait 0, a CTA barrier
// and the accumulators stored and zeroed (an epilogue without its math), and per-k-block scale
// loads (__ldg, used one k-block later) when SC.
// PP (ping-pong): the warpgroups' items are offset by half an item and each ends with a barrier
// of its own warpgroup only, so one warpgroup's epilogue can overlap the other's wgmma.
// EPF: floats each thread stores per item (128: every accumulator, 4x the real gate_up's E4M3 h
// per thread; 16: about the real one, 64 bytes).
template <int ST, int IT, bool SC, bool PP = false, int EPF = 128>
__global__ void __launch_bounds__(256, 1)
    wgmma_real_kernel(const uint8_t* src, const float* scales, int iters, float* out,
                      long long* cycles) {
#ifdef MOE_WGMMA_ENABLED
  const uint32_t s0 = stage_operands(src, ST);
  const int wg = threadIdx.x >> 7;
  float sc0 = scales[threadIdx.x & 3], sc1 = scales[4 + (threadIdx.x & 3)];
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  float part[2][32];
  int stage = 0, left = PP && wg == 1 ? IT / 2 : IT;
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    const uint32_t base = s0 + stage * (kA + kB);
    const uint64_t da = smem_desc(base + wg * 64 * 128), db = smem_desc(base + kA);
    float nsc0 = sc0, nsc1 = sc1;
    if constexpr (SC) {
      nsc0 = __ldg(scales + ((it + threadIdx.x) & 7));
      nsc1 = __ldg(scales + ((it + threadIdx.x + 1) & 7));
    }
    wgmma_fence();
    quarters_kblock(acc, part, da, db, sc0, sc1);
    sc0 = nsc0;
    sc1 = nsc1;
    stage = stage + 1 == ST ? 0 : stage + 1;
    if constexpr (IT > 0) {
      if (--left == 0) {
        left = IT;
        if constexpr (PP)
          asm volatile("bar.sync %0, 128;" ::"r"(1 + wg) : "memory");
        else
          __syncthreads();
        float* o = out + (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) * 128;
#pragma unroll
        for (int i = EPF; i < 128; ++i) acc[i % EPF] += acc[i];  // every accumulator stays live
#pragma unroll
        for (int i = 0; i < 128; i += 4) {
          if (i < EPF)
            *reinterpret_cast<float4*>(o + i) =
                make_float4(acc[i], acc[i + 1], acc[i + 2], acc[i + 3]);
          acc[i] = acc[i + 1] = acc[i + 2] = acc[i + 3] = 0.f;
        }
      }
    }
  }
  finish(acc, t0, out, cycles);
#else
  __trap();
#endif
}

template <typename K>
void time_kernel(K k, int smem, const char* name, int sms, int iters, const uint8_t* src,
                 const float* sc, float* out, long long* cyc) {
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  k<<<sms, 256, smem>>>(src, sc, 96, out, cyc);  // warm-up
  CK(cudaGetLastError());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  k<<<sms, 256, smem>>>(src, sc, iters, out, cyc);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0.f;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  long long* h = static_cast<long long*>(std::malloc(sizeof(long long) * sms));
  CK(cudaMemcpy(h, cyc, sizeof(long long) * sms, cudaMemcpyDeviceToHost));
  double mean = 0;
  for (int i = 0; i < sms; ++i) mean += static_cast<double>(h[i]) / sms;
  std::free(h);
  const double flop_cta = 2.0 * 64 * 256 * 128 * 2 * iters;  // two warpgroups
  const double fpc = flop_cta / mean;
  std::printf("%-34s %9.1f TFLOP/s  %6.0f FLOP/cycle/SM  %5.1f%% of 8192  (%.3f ms, %.2f GHz)\n",
              name, flop_cta * sms / (ms * 1e-3) / 1e12, fpc, 100.0 * fpc / 8192, ms,
              mean / (ms * 1e-3) / 1e9);
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
}

// Times the patterns P..., one after another.
template <int... P>
void run(int sms, int iters, const uint8_t* src, const float* sc, float* out, long long* cyc) {
  (time_kernel(wgmma_bench_kernel<P>, kA + kB + 1024, kNames[P], sms, iters, src, sc, out, cyc),
   ...);
}

// Whether the register-A pattern computes what its descriptor-A pattern does (the fragment
// layout of load_a_regs): each thread's accumulator sum after a few k-blocks of both, compared.
template <int PS, int PR>
bool check_rs(int sms, const uint8_t* src, const float* sc, float* out, long long* cyc) {
  const size_t n = static_cast<size_t>(sms) * 256 * 128;
  std::vector<float> h[2];
  const int smem = kA + kB + 1024;
  CK(cudaFuncSetAttribute(wgmma_bench_kernel<PS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          smem));
  CK(cudaFuncSetAttribute(wgmma_bench_kernel<PR>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          smem));
  for (int r = 0; r < 2; ++r) {
    CK(cudaMemset(out, 0, n * sizeof(float)));
    if (r == 0)
      wgmma_bench_kernel<PS><<<sms, 256, smem>>>(src, sc, 3, out, cyc);
    else
      wgmma_bench_kernel<PR><<<sms, 256, smem>>>(src, sc, 3, out, cyc);
    CK(cudaGetLastError());
    h[r].resize(n);
    CK(cudaMemcpy(h[r].data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  }
  double max_rel = 0;
  size_t differ = 0, nonzero = 0;
  for (size_t i = 0; i < n; i += 128) {
    if (h[0][i] != 0.f) ++nonzero;
    if (h[0][i] != h[1][i]) ++differ;
    const double d = std::fabs(static_cast<double>(h[0][i]) - h[1][i]);
    max_rel = std::max(max_rel, d / std::max(1e-30, std::fabs(static_cast<double>(h[0][i]))));
  }
  const bool ok = differ == 0 && nonzero > n / 128 / 2;
  std::printf("check %-30s vs %-30s: %zu of %zu sums differ (max rel %.3g), %zu nonzero: %s\n",
              kNames[PR], kNames[PS], differ, n / 128, max_rel, nonzero, ok ? "same" : "DIFFERENT");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20000;
  const bool power = argc > 2 && std::strcmp(argv[2], "power") == 0;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9) {
    std::fprintf(stderr, "wgmma_bench: needs sm_90 (found %d.%d)\n", prop.major, prop.minor);
    return 2;
  }
  const int sms = prop.multiProcessorCount;
  uint8_t* src = nullptr;
  float *sc = nullptr, *out = nullptr;
  long long* cyc = nullptr;
  CK(cudaMalloc(&src, kA + kB));
  CK(cudaMalloc(&sc, 8 * sizeof(float)));
  CK(cudaMalloc(&out, sizeof(float) * sms * 256 * 128));
  CK(cudaMemset(out, 0, sizeof(float) * sms * 256 * 128));
  CK(cudaMalloc(&cyc, sizeof(long long) * sms));
  moe::bench::fill_kernel<<<64, 256>>>(src, kA + kB, 7u, 1);  // E4M3 |v| < 2, no NaN
  const float h_sc[8] = {1e-3f, 2e-3f, 3e-3f, 4e-3f, 5e-3f, 6e-3f, 7e-3f, 8e-3f};
  CK(cudaMemcpy(sc, h_sc, sizeof(h_sc), cudaMemcpyHostToDevice));
  std::printf("%s, %d SMs, %d k-blocks of 128 per CTA\n", prop.name, sms, iters);
  bool same = check_rs<kQDirect, kQDirectRS>(sms, src, sc, out, cyc);
  same = check_rs<kN256, kN256RS>(sms, src, sc, out, cyc) && same;
  same = check_rs<kQuarters, kQuartersRS>(sms, src, sc, out, cyc) && same;
  if (power) {
    // Sustained (iters large: seconds per pattern): each pattern at the clock its own power
    // allows; the GHz column is the CTAs' cycles over the wall time. Two rounds, alternated.
    for (int round = 0; round < 2; ++round)
      run<kQuarters, kQuartersRS, kQDirect, kQDirectRS, kN256, kN256RS>(sms, iters, src, sc, out,
                                                                        cyc);
    return same ? 0 : 1;
  }
  run<kQuarters, kHalves, kQDirect, kHDirect, kN256, kN16, kN32, kColScales, kColEarly, kQDirectRS,
      kQuartersRS, kN256RS>(sms, iters, src, sc, out, cyc);
  const int big = 4 * (kA + kB) + 1024;
  time_kernel(wgmma_real_kernel<4, 0, false>, big, "quarters, 4 stages rotated", sms, iters, src,
              sc, out, cyc);
  time_kernel(wgmma_real_kernel<1, 48, false>, kA + kB + 1024, "quarters, items of 48", sms, iters,
              src, sc, out, cyc);
  time_kernel(wgmma_real_kernel<1, 16, false>, kA + kB + 1024, "quarters, items of 16", sms, iters,
              src, sc, out, cyc);
  time_kernel(wgmma_real_kernel<1, 48, false, true>, kA + kB + 1024,
              "quarters, items of 48, ping-pong", sms, iters, src, sc, out, cyc);
  time_kernel(wgmma_real_kernel<1, 16, false, true>, kA + kB + 1024,
              "quarters, items of 16, ping-pong", sms, iters, src, sc, out, cyc);
  time_kernel(wgmma_real_kernel<1, 48, false, false, 16>, kA + kB + 1024,
              "quarters, items of 48, 64 B stored", sms, iters, src, sc, out, cyc);
  time_kernel(wgmma_real_kernel<1, 16, false, false, 16>, kA + kB + 1024,
              "quarters, items of 16, 64 B stored", sms, iters, src, sc, out, cyc);
  time_kernel(wgmma_real_kernel<1, 48, false, true, 16>, kA + kB + 1024,
              "quarters, items of 48, 64 B, ping-pong", sms, iters, src, sc, out, cyc);
  time_kernel(wgmma_real_kernel<1, 16, false, true, 16>, kA + kB + 1024,
              "quarters, items of 16, 64 B, ping-pong", sms, iters, src, sc, out, cyc);
  time_kernel(wgmma_real_kernel<1, 0, true>, kA + kB + 1024, "quarters, scale loads", sms, iters,
              src, sc, out, cyc);
  time_kernel(wgmma_real_kernel<4, 48, true>, big, "quarters, all three", sms, iters, src, sc, out,
              cyc);
  CK(cudaFree(src));
  CK(cudaFree(sc));
  CK(cudaFree(out));
  CK(cudaFree(cyc));
  return same ? 0 : 1;
}
