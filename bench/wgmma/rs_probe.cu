// bench/wgmma/rs_probe: can an NVFP4 decode GEMM on warpgroup MMA with the weights in registers
// keep up with HBM? The NVFP4 ring (moe_gemm_pipe_kernel) computes 16-token tiles at 58-63% of
// 4.8 TB/s (glm5 T 256) while its copy skeleton alone streams 88% (bench/copy/ring_bench, two
// k-steps per stage): the F16 mma.sync math is what costs it there (per 8 codes 11 integer
// operations + 4 HMUL2, activations loaded per mma). This probe keeps that skeleton (per-warp
// cp.async rings of two k-steps per stage: 16 rows x 128 k of codes, 1024 bytes, and their 128
// scale bytes per k-step, each lane reading back only what it copied) and replaces the math with
// - the conversion of each lane's 64 codes to E4M3 by table (grouped::nvfp4_word_to_e4m3: a
//   byte-permute into the scale's 8-byte table of E4M3 magnitudes, the sign XORed in; 10 integer
//   operations per 8 codes), the 16 registers being the lane's A fragments of 4 wgmma m64nNk32
//   (a warpgroup's 4 warps = 64 weight rows), and
// - 4 wgmma.mma_async m64nNk32 E4M3 per k-step with A from registers and B = N tokens' E4M3
//   activations resident in shared memory (128-byte swizzle rows of 128 k), one commit group per
//   k-step, one group in flight (the A registers double-buffered).
// Timing-only: the values are not a GEMM's (the table and the activations are synthetic, the
// fragment order is not matched to the activations'); what it measures is whether this math fits
// under the copy skeleton. Modes: --math 0 the skeleton (one XOR per loaded word), 1 + the
// conversion (folded into a XOR), 2 + the wgmma, 3 + the B tile per k-step: each stage also
// holds the N tokens' 128 bytes of every k-step, copied by the 4 warps (cp.async from an
// L2-resident activation buffer of 6144 k), a named barrier of the warpgroup after each warp's
// wait and a proxy fence before the wgmma (what a real kernel needs; modes 2 keeps B resident),
// 4 the same B stages by one bulk copy per stage (thread 0; the activations stored as the tiles'
// shared-memory image, 128-byte swizzle included) on a `full` mbarrier, each warp's lane 0
// arriving on the stage's `empty` mbarrier once its wgmma on it completed (no proxy fence, no
// named barrier).
// Codes and scales lie in two regions (as an expert matrix and its scales do); every warp streams
// one contiguous slice of each.
// Usage: rs_probe [--n 8,16,32] [--math 0,1,2,3,4] [--stages 2,3] (2..4) [--ctas 4] [--mb 2048]
// (--ctas: CTAs of 4 warps per SM asked for; fewer when shared memory does not fit them).
// Output: per case, GB/s of codes + scales (activations not counted: L2-resident) and % of 4.8
// TB/s (median of 7 launches).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../common/bench_util.cuh"
#include "../copy/ring_common.cuh"
#include "backends/cuda/kernels/moe_grouped/dequant_bits.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_common.cuh"
#include "backends/cuda/kernels/moe_grouped/sm90_moe_wgmma_gemm.cuh"

namespace {

using namespace moe::cuda;
using namespace moe::cuda::wgmma_gemm;

constexpr int kStepCodes = 1024;  // a warp's k-step: 16 rows x 64 bytes (128 k)
constexpr int kStepScales = 128;  // 16 rows x 8 groups
constexpr int kStageBytes2 = 2 * (kStepCodes + kStepScales);
constexpr int kBTile = 4096;  // up to 32 tokens x 128 bytes
constexpr int kLut = 2048;

constexpr int kActK = 6144;    // the activation rows' k (modes 3, 4)
constexpr int kActTiles = 64;  // distinct activation tiles: CTA b reads tile b % 64 (as decode's
                               // tiles of a layer: 3 MB at N 8), from k-step (b / 64) x 7 on
size_t smem_bytes(int n, int math, int stages) {
  return 1024 + kBTile + kLut + 4 * stages * kStageBytes2 + (math >= 3 ? stages * 2 * n * 128 : 0) +
         (math == 4 ? 16 * stages : 0);
}

// wgmma m64nNk32 E4M3 x E4M3 -> f32, A (4 registers per thread) from registers, B by descriptor.
template <int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t* a, uint64_t db) {
#ifdef MOE_WGMMA_ENABLED
  if constexpr (N == 8) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1, "
        "1, 1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  } else if constexpr (N == 16) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7}, "
        "{%8,%9,%10,%11}, %12, 1, 1, 1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  } else {
    static_assert(N == 32);
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, "
        "1;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  }
#endif
}

struct Params {
  const uint8_t* codes;   // warps x steps x 1024
  const uint8_t* scales;  // warps x steps x 128
  const uint8_t* acts;    // modes 3, 4: kActTiles x 32 x kActK E4M3 activations
  int steps;              // per warp (even)
  float* sink;
};

template <int N, int MATH, int S>
__global__ void __launch_bounds__(128) rs_probe_kernel(const Params p) {
#ifdef MOE_WGMMA_ENABLED
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t s0 = (raw + 1023u) & ~1023u;
  uint8_t* sp = smem_raw + (s0 - raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // Activations: E4M3 1.0; the tables: synthetic E4M3 magnitudes (finite).
  for (int i = tid; i < kBTile / 4; i += 128) reinterpret_cast<uint32_t*>(sp)[i] = 0x38383838u;
  for (int i = tid; i < kLut / 4; i += 128)
    reinterpret_cast<uint32_t*>(sp + kBTile)[i] = 0x30282018u + (i & 7) * 0x01010101u;
  fence_proxy_async();
  __syncthreads();
  const uint32_t lut = s0 + kBTile;
  const uint32_t ring = s0 + kBTile + kLut + warp * S * kStageBytes2;
  const uint32_t bring =
      s0 + kBTile + kLut + 4 * S * kStageBytes2;  // modes 3, 4: [slot][step] x N x 128
  const uint32_t full = bring + S * 2 * N * 128, empty = full + 8 * S;  // mode 4
  if constexpr (MATH == 4) {
    if (tid == 0) {
      for (int j = 0; j < S; ++j)
        grouped::mbar_init(full + 8 * j, 1), grouped::mbar_init(empty + 8 * j, 4);
      grouped::mbar_init_fence();
    }
    __syncthreads();
  }
  const int64_t gw = static_cast<int64_t>(blockIdx.x) * 4 + warp;
  const uint8_t* cs = p.codes + gw * p.steps * kStepCodes;
  const uint8_t* ss = p.scales + gw * p.steps * kStepScales;
  const int pairs = p.steps / 2;
  const uint8_t* acts = p.acts + (blockIdx.x % kActTiles) * 32 * kActK;
  const int kofs = (blockIdx.x / kActTiles) * 7;
  auto issue = [&](int pr) {
    if (pr < pairs) {
      const uint32_t st = ring + (pr % S) * kStageBytes2;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t s = 2 * pr + h;
        grouped::cp_async16(st + h * kStepCodes + lane * 16, cs + s * kStepCodes + lane * 16);
        grouped::cp_async16(st + h * kStepCodes + 512 + lane * 16,
                            cs + s * kStepCodes + 512 + lane * 16);
        grouped::cp_async4(st + 2 * kStepCodes + h * kStepScales + lane * 4,
                           ss + s * kStepScales + lane * 4);
        if constexpr (MATH == 4) {  // the stage's 2 x N x 128 activation bytes: one bulk copy
          if (h == 0 && tid == 0) {
            const uint32_t sl = pr % S;
            if (pr >= S) grouped::mbar_wait(empty + 8 * sl, ((pr / S) - 1) & 1);
            grouped::mbar_arrive_expect_tx(full + 8 * sl, 2 * N * 128);
            grouped::bulk_copy(bring + sl * 2 * N * 128,
                               acts + ((pr + kofs) % (kActK / 256)) * 2 * N * 128, 2 * N * 128,
                               full + 8 * sl);
          }
        }
        if constexpr (MATH == 3) {  // the k-step's N x 128 activation bytes, a quarter per warp
          const uint32_t bs = bring + ((pr % S) * 2 + h) * N * 128;
          const int64_t kk = ((s + 2 * kofs) % (kActK / 128)) * 128;
#pragma unroll
          for (int q = 0; q < (2 * N + 31) / 32; ++q) {
            const int chunk = warp * 2 * N + q * 32 + lane;  // 8 N chunks of 16 bytes in all
            if (q * 32 + lane < 2 * N)
              grouped::cp_async16(bs + chunk * 16,
                                  acts + (chunk / 8) * kActK + kk + (chunk % 8) * 16);
          }
        }
      }
    }
    grouped::cp_async_commit();
  };
#pragma unroll
  for (int j = 0; j < S - 1; ++j) issue(j);
  const uint64_t db = smem_desc(s0);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  uint32_t x = 0;
  uint32_t a[2][16];
  for (int pr = 0; pr < pairs; ++pr) {
    grouped::cp_async_wait<S - 2>();
    const uint32_t st = ring + (pr % S) * kStageBytes2;
    if constexpr (MATH == 3) {  // every warp's activation copies of the stage, for the async proxy
      fence_proxy_async();
      asm volatile("bar.sync 1, 128;" ::: "memory");
    }
    if constexpr (MATH == 4) grouped::mbar_wait(full + 8 * (pr % S), (pr / S) & 1);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint4 c[2];
      uint32_t sw;
#pragma unroll
      for (int q = 0; q < 2; ++q)
        asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(c[q].x), "=r"(c[q].y), "=r"(c[q].z), "=r"(c[q].w)
                     : "r"(st + h * kStepCodes + q * 512 + lane * 16));
      asm volatile("ld.shared.u32 %0, [%1];"
                   : "=r"(sw)
                   : "r"(st + 2 * kStepCodes + h * kStepScales + lane * 4));
      if constexpr (MATH == 0) {
        x ^= c[0].x ^ c[0].y ^ c[0].z ^ c[0].w ^ c[1].x ^ c[1].y ^ c[1].z ^ c[1].w ^ sw;
      } else {
        uint32_t l[4][2];  // the tables of the lane's 4 scale bytes (2 rows x 2 groups)
#pragma unroll
        for (int g = 0; g < 4; ++g)
          asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];"
                       : "=r"(l[g][0]), "=r"(l[g][1])
                       : "r"(lut + ((sw >> (8 * g)) & 0xffu) * 8));
        const uint32_t w[8] = {c[0].x, c[0].y, c[0].z, c[0].w, c[1].x, c[1].y, c[1].z, c[1].w};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          uint32_t o[2];
          grouped::nvfp4_word_to_e4m3(w[i], l[i >> 1][0], l[i >> 1][1], o);
          a[h][2 * i] = o[0], a[h][2 * i + 1] = o[1];
        }
        if constexpr (MATH == 1) {
#pragma unroll
          for (int i = 0; i < 16; ++i) x ^= a[h][i];
        } else {
          wgmma_fence();
#pragma unroll
          for (int j = 0; j < 4; ++j)
            wgmma_rs<N>(
                d, &a[h][4 * j],
                MATH >= 3 ? smem_desc(bring + ((pr % S) * 2 + h) * N * 128) + 2 * j : db + 2 * j);
          wgmma_commit();
          wgmma_wait<1>();
          if constexpr (MATH == 4)  // the previous stage's wgmma are complete: its B is free
            if (h == 0 && pr > 0 && lane == 0) grouped::mbar_arrive(empty + 8 * ((pr - 1) % S));
        }
      }
    }
    issue(pr + S - 1);
  }
  grouped::cp_async_wait<0>();
  if constexpr (MATH >= 2) wgmma_wait<0>();
  float sum = static_cast<float>(x & 1u);
#pragma unroll
  for (int i = 0; i < N / 2; ++i) sum += d[i];
  if (sum == 1.2345e-7f) p.sink[gw] = sum;  // keeps the work
#endif
}

using KernelFn = void (*)(Params);
template <int N, int MATH>
KernelFn pick(int stages) {
  return stages == 2   ? rs_probe_kernel<N, MATH, 2>
         : stages == 3 ? rs_probe_kernel<N, MATH, 3>
                       : rs_probe_kernel<N, MATH, 4>;
}
template <int N>
KernelFn pick(int math, int stages) {
  return math == 0   ? pick<N, 0>(stages)
         : math == 1 ? pick<N, 1>(stages)
         : math == 2 ? pick<N, 2>(stages)
         : math == 3 ? pick<N, 3>(stages)
                     : pick<N, 4>(stages);
}
KernelFn pick(int n, int math, int stages) {
  return n == 8 ? pick<8>(math, stages) : n == 16 ? pick<16>(math, stages) : pick<32>(math, stages);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> ns{8, 16, 32}, maths{0, 1, 2}, stages{2, 3};
  int ctas = 4;
  double mb = 2048;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--n" && has) {
      ns.clear();
      if (!moe::bench::parse_list(argv[0], "--n", argv[++i], ns, 8, 32)) return 2;
    } else if (a == "--math" && has) {
      maths.clear();
      if (!moe::bench::parse_list(argv[0], "--math", argv[++i], maths, 0, 4)) return 2;
    } else if (a == "--stages" && has) {
      stages.clear();
      if (!moe::bench::parse_list(argv[0], "--stages", argv[++i], stages, 2, 4)) return 2;
    } else if (a == "--ctas" && has) {
      ctas = std::atoi(argv[++i]);
    } else if (a == "--mb" && has) {
      mb = std::atof(argv[++i]);
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--n 8,16,32] [--math 0,1,2,3,4] [--stages 2,3,4] [--ctas N] [--mb MB]\n",
          argv[0]);
      return 2;
    }
  }
  for (double n : ns)
    if (n != 8 && n != 16 && n != 32) {
      std::fprintf(stderr, "%s: --n takes 8, 16 or 32\n", argv[0]);
      return 2;
    }
  if (ctas < 1 || ctas > 8 || mb < 64) {
    std::fprintf(stderr, "%s: --ctas 1..8, --mb >= 64\n", argv[0]);
    return 2;
  }
  cudaDeviceProp prop;
  if (!moe::bench::sm90_device(argv[0], &prop)) return 1;
  const int64_t warps = static_cast<int64_t>(prop.multiProcessorCount) * ctas * 4;
  const int64_t total = static_cast<int64_t>(mb * (1 << 20));
  const int64_t step_bytes = kStepCodes + kStepScales;
  const int64_t all_steps = total / step_bytes;  // k-steps of the buffers, over all warps
  uint8_t *codes, *scales, *acts;
  float* sink;
  CK(cudaMalloc(&codes, all_steps * kStepCodes));
  CK(cudaMalloc(&scales, all_steps * kStepScales));
  CK(cudaMalloc(&acts, kActTiles * 32 * kActK));
  CK(cudaMalloc(&sink, warps * 4));
  moe::bench::fill(codes, all_steps * kStepCodes, 1, 0);
  moe::bench::fill(scales, all_steps * kStepScales, 2, 2);
  moe::bench::fill(acts, kActTiles * 32 * kActK, 3, 1);
  std::printf("rs_probe: %s, %d SMs, up to %d CTAs of 4 warps per SM, %.0f MB\n", prop.name,
              prop.multiProcessorCount, ctas, static_cast<double>(all_steps * step_bytes) / 1e6);
  std::printf("%4s %5s %7s %5s %10s %9s %7s\n", "n", "math", "stages", "ctas", "us", "GB/s",
              "%4.8");
  for (double n : ns)
    for (double m : maths)
      for (double s : stages) {
        const int ni = static_cast<int>(n), mi = static_cast<int>(m), si = static_cast<int>(s);
        KernelFn k = pick(ni, mi, si);
        const size_t sm = smem_bytes(ni, mi, si);
        CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(sm)));
        int occ = 0;  // CTAs per SM that fit: the grid is one wave of them
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 128, sm));
        const int c = std::min(ctas, occ);
        if (c < 1) {
          std::printf("%4d %5d %7d: does not fit (%zu bytes of shared memory)\n", ni, mi, si, sm);
          continue;
        }
        const int64_t w = static_cast<int64_t>(prop.multiProcessorCount) * c * 4;
        const int steps = static_cast<int>(all_steps / w) & ~1;
        const Params p{codes, scales, acts, steps, sink};
        const dim3 grid(static_cast<unsigned>(prop.multiProcessorCount * c));
        k<<<grid, 128, sm>>>(p);  // warm-up
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        const float ms =
            moe::bench::median_ms_per_launch(7, 1, [&](int) { k<<<grid, 128, sm>>>(p); });
        const double gbs = static_cast<double>(w * steps * step_bytes) / (ms * 1e-3) / 1e9;
        std::printf("%4d %5d %7d %5d %10.1f %9.1f %6.1f%%\n", ni, mi, si, c, ms * 1e3, gbs,
                    gbs / 4800 * 100);
      }
  CK(cudaFree(acts));
  CK(cudaFree(codes));
  CK(cudaFree(scales));
  CK(cudaFree(sink));
  return 0;
}
