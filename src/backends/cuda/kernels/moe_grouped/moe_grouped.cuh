// Grouped routed-expert kernels (see moe_grouped.h for the pipeline).
//
// GEMMs stream weights straight from HBM into mma.sync A fragments: a warp owns a work item of
// (tile of <= 8*NB tokens of one expert, 16 or 32 weight rows) and walks K in steps where every
// lane loads 16 bytes of each of its rows (64 contiguous bytes per row per step). The order of k
// inside a step is free as long as A and B agree, so each lane's 16 weight bytes are exactly the
// k values its A-fragment registers need, and the matching activations are one to four 16-byte
// loads of the token's row (L1 hits: all warps of an expert read the same rows). No shared
// memory; the persistent grid gives every warp items round-robin, so the weights of each touched
// expert are read once per token tile. Weight formats are dequantized in registers:
//   BF16: as is (bf16 mma). FP8: cvt e4m3x2 -> f16x2 (exact), block scale applied to the f32
//   partial sum of each 128-k block. NVFP4: nibbles -> e4m3 bytes (value * 2^-6) -> f16x2,
//   times (fp8 scale * 64) in f16 (exact: <= 5 significant bits), global scale in the epilogue.
//   NVFP4 activations are stored in k order [0,2,4,6,1,3,5,7] per group of 8 so that one 16-byte
//   load matches the pairs the nibble unpacking produces.
// NOTE: FP8/NVFP4 use F16 activations, saturated to +-65504 (inputs of MoE layers are post-norm).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <type_traits>

#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"

namespace moe::cuda::grouped {

constexpr int kGroupThreads = 512;
constexpr int kGemmMaxThreads = 256;
// k-steps of weight loads in flight per warp (fewer with many token columns: registers).
// Pipelined (PIPE): the next U steps' loads are issued before the current U steps are computed
// (register double buffer), so U is halved to keep registers in bounds.
template <int NB, bool PIPE>
constexpr int kUnroll = PIPE ? (NB >= 4 ? 1 : 2) : (NB >= 4 ? 2 : 4);

template <GroupedFmt F>
struct Fmt;
template <>
struct Fmt<GroupedFmt::kBf16> {
  static constexpr int kStepK = 32, kActVec = 1, kMmas = 2;
  __host__ __device__ static constexpr int64_t row_bytes(int64_t k) { return k * 2; }
};
template <>
struct Fmt<GroupedFmt::kFp8Block> {
  static constexpr int kStepK = 64, kActVec = 2, kMmas = 4;
  __host__ __device__ static constexpr int64_t row_bytes(int64_t k) { return k; }
};
template <>
struct Fmt<GroupedFmt::kNvfp4> {
  static constexpr int kStepK = 128, kActVec = 4, kMmas = 8;
  __host__ __device__ static constexpr int64_t row_bytes(int64_t k) { return k / 2; }
};

// ---- small device helpers ----

__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ uint32_t u16_to_h2(uint16_t fp8x2) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(fp8x2), __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}

__device__ __forceinline__ uint32_t hmul2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

template <GroupedFmt F>
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  if constexpr (F == GroupedFmt::kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// 16 weight bytes -> 2*kMmas registers of bf16x2/f16x2 pairs (see the file comment for order).
// sc: nvfp4 scale bytes of this lane's two 16-k groups (low byte = first group).
template <GroupedFmt F>
__device__ __forceinline__ void dequant(const uint4& w, uint16_t sc,
                                        uint32_t (&o)[2 * Fmt<F>::kMmas]) {
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
  if constexpr (F == GroupedFmt::kBf16) {
#pragma unroll
    for (int q = 0; q < 4; ++q) o[q] = ws[q];
  } else if constexpr (F == GroupedFmt::kFp8Block) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      o[2 * q] = u16_to_h2(static_cast<uint16_t>(ws[q] & 0xffffu));
      o[2 * q + 1] = u16_to_h2(static_cast<uint16_t>(ws[q] >> 16));
    }
  } else {
    const uint32_t s2 = hmul2(u16_to_h2(sc), 0x54005400u);  // (s0, s1) * 64
    const uint32_t m0 = __byte_perm(s2, 0, 0x1010), m1 = __byte_perm(s2, 0, 0x3232);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t v = ws[q];
      // e4m3 byte of nibble n: sign bit 3 -> 7, magnitude bits 0..2 -> 2..4.
      const uint32_t lo = ((v << 4) & 0x80808080u) | ((v << 2) & 0x1c1c1c1cu);  // k 0,2,4,6
      const uint32_t hi = (v & 0x80808080u) | ((v >> 2) & 0x1c1c1c1cu);         // k 1,3,5,7
      const uint32_t m = q < 2 ? m0 : m1;
      o[4 * q + 0] = hmul2(u16_to_h2(static_cast<uint16_t>(lo & 0xffffu)), m);
      o[4 * q + 1] = hmul2(u16_to_h2(static_cast<uint16_t>(lo >> 16)), m);
      o[4 * q + 2] = hmul2(u16_to_h2(static_cast<uint16_t>(hi & 0xffffu)), m);
      o[4 * q + 3] = hmul2(u16_to_h2(static_cast<uint16_t>(hi >> 16)), m);
    }
  }
}

__device__ __forceinline__ uint16_t act_bits(float v, bool f16) {
  if (f16) {
    if (!isnan(v)) v = fminf(fmaxf(v, -65504.f), 65504.f);
    return __half_as_ushort(__float2half_rn(v));
  }
  return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

// Storage index of activation k for nvfp4 (k order [0,2,4,6,1,3,5,7] in each group of 8).
__device__ __forceinline__ int64_t nvfp4_act_index(int64_t k) {
  return (k & ~int64_t{7}) + (k & 1) * 4 + ((k & 7) >> 1);
}

// ---- grouping: block 0 sorts slots by expert, the other blocks convert x ----

__device__ __forceinline__ int2 block_exclusive_scan2(int2 v, int2* red, int2* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  int2 inc = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int a = __shfl_up_sync(0xffffffffu, inc.x, o), b = __shfl_up_sync(0xffffffffu, inc.y, o);
    if (lane >= o) inc.x += a, inc.y += b;
  }
  if (lane == 31) red[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    int2 w = lane < nw ? red[lane] : make_int2(0, 0);
    int2 wi = w;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int a = __shfl_up_sync(0xffffffffu, wi.x, o), b = __shfl_up_sync(0xffffffffu, wi.y, o);
      if (lane >= o) wi.x += a, wi.y += b;
    }
    if (lane < nw) red[lane] = make_int2(wi.x - w.x, wi.y - w.y);
    if (lane == nw - 1) *total = wi;
  }
  __syncthreads();
  const int2 base = red[warp];
  return make_int2(base.x + inc.x - v.x, base.y + inc.y - v.y);
}

__global__ void __launch_bounds__(kGroupThreads)
    moe_group_kernel(const __grid_constant__ MoeGroupParams p) {
  if (blockIdx.x == 0) {
    __shared__ int cnt[kMaxGroupedExperts], cur[kMaxGroupedExperts], off[kMaxGroupedExperts];
    __shared__ int2 red[32], total;
    const int64_t TK = p.T * p.K;
    for (int e = threadIdx.x; e < kMaxGroupedExperts; e += blockDim.x) cnt[e] = 0, cur[e] = 0;
    __syncthreads();
    for (int64_t s = threadIdx.x; s < TK; s += blockDim.x) {
      const int32_t e = p.ids[(s / p.K) * p.ids_stride + s % p.K];
      if (e >= 0 && e < p.E) atomicAdd(&cnt[e], 1);
    }
    __syncthreads();
    // E <= kMaxGroupedExperts == kGroupThreads: one expert per thread.
    const int e = threadIdx.x;
    const int c = e < p.E ? cnt[e] : 0;
    const int nt = (c + p.tile_tokens - 1) / p.tile_tokens;
    const int2 ex = block_exclusive_scan2(make_int2(c, nt), red, &total);
    if (e < p.E) {
      off[e] = ex.x;
      for (int j = 0; j < nt; ++j) {
        int4 t =
            make_int4(e, ex.x + j * p.tile_tokens, min(p.tile_tokens, c - j * p.tile_tokens), 0);
        reinterpret_cast<int4*>(p.tiles)[ex.y + j] = t;
      }
    }
    if (threadIdx.x == 0) *p.num_tiles = total.y;
    __syncthreads();
    for (int64_t s = threadIdx.x; s < TK; s += blockDim.x) {
      const int32_t ee = p.ids[(s / p.K) * p.ids_stride + s % p.K];
      if (ee >= 0 && ee < p.E)
        p.sorted_slot[off[ee] + atomicAdd(&cur[ee], 1)] = static_cast<int32_t>(s);
    }
    return;
  }
  const bool f16 = p.fmt != static_cast<int>(GroupedFmt::kBf16);
  const bool perm = p.fmt == static_cast<int>(GroupedFmt::kNvfp4);
  const int64_t per_row = p.D / 8, n = p.T * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x - 1) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x - 1) * blockDim.x) {
    const int64_t t = u / per_row, q = u % per_row;
    const float4* src = reinterpret_cast<const float4*>(p.x + t * p.x_stride + q * 8);
    const float4 a = src[0], b = src[1];
    const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    uint16_t o[8];
    if (perm) {
#pragma unroll
      for (int i = 0; i < 8; ++i) o[(i & 1) * 4 + (i >> 1)] = act_bits(v[i], true);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] = act_bits(v[i], f16);
    }
    uint4 r;
    r.x = o[0] | (uint32_t{o[1]} << 16);
    r.y = o[2] | (uint32_t{o[3]} << 16);
    r.z = o[4] | (uint32_t{o[5]} << 16);
    r.w = o[6] | (uint32_t{o[7]} << 16);
    reinterpret_cast<uint4*>(p.xa)[t * per_row + q] = r;
  }
}

// ---- grouped GEMM ----

template <GroupedFmt F, int NB, bool GU, bool PIPE>
__global__ void __launch_bounds__(kGemmMaxThreads, 1)
    moe_gemm_kernel(const __grid_constant__ MoeGemmParams p) {
  using Tr = Fmt<F>;
  constexpr int kM = Tr::kMmas, kRows = GU ? 16 : 32;
  const int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int wpb = blockDim.x >> 5;
  const int64_t warps_total = static_cast<int64_t>(gridDim.x) * wpb;
  const int64_t row_blocks = p.N / kRows;
  const int64_t n_items = static_cast<int64_t>(*p.num_tiles) * row_blocks;
  const int64_t nsteps = p.Kd / Tr::kStepK;
  const int64_t wrow_bytes = Tr::row_bytes(p.Kd);
  const bool f16 = F != GroupedFmt::kBf16;

  for (int64_t item = static_cast<int64_t>(blockIdx.x) * wpb + (threadIdx.x >> 5); item < n_items;
       item += warps_total) {
    const int64_t tile = item / row_blocks, rb = item % row_blocks;
    const int4 td = reinterpret_cast<const int4*>(p.tiles)[tile];
    const int e = td.x, pos0 = td.y, cnt = td.z;

    const uint4* arow[NB];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      const int col = nb * 8 + g, cc = col < cnt ? col : 0;
      const int64_t r = GU ? p.sorted_slot[pos0 + cc] / p.K : pos0 + cc;
      arow[nb] = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.act) + r * p.Kd) +
                 c * (Tr::kStepK / 32);
    }
    const uint8_t* wrow[2][2];
    const uint8_t* srow[2][2];  // nvfp4 scale rows
    int64_t rbase[2];
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const int m = GU ? t : 0;
      rbase[t] = rb * kRows + (GU ? 0 : 16 * t);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t r = rbase[t] + g + 8 * h;
        wrow[t][h] = static_cast<const uint8_t*>(p.w[m][e]) + r * wrow_bytes + c * 16;
        srow[t][h] = F == GroupedFmt::kNvfp4
                         ? static_cast<const uint8_t*>(p.s[m][e]) + r * (p.Kd / 16) + 2 * c
                         : nullptr;
      }
    }
    float acc[2][NB][4] = {};
    float tacc[2][NB][4] = {};  // fp8: partial sums of the current 128-k block

    // Weight loads of U k-steps (the HBM stream) and the math on them; the main loop keeps the
    // next U steps' loads in flight while it computes the current ones (register double buffer).
    auto load = [&](int64_t ks, auto(&W)[kUnroll<NB, PIPE>][2][2],
                    auto(&S)[kUnroll<NB, PIPE>][2][2], auto u_const) {
      constexpr int U = decltype(u_const)::value;
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int t = 0; t < 2; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            W[u][t][h] = ld_stream(wrow[t][h] + (ks + u) * 64);
            if constexpr (F == GroupedFmt::kNvfp4)
              S[u][t][h] = __ldg(reinterpret_cast<const uint16_t*>(srow[t][h] + (ks + u) * 8));
            else
              S[u][t][h] = 0;
          }
    };
    auto compute = [&](int64_t ks, const uint4(&W)[kUnroll<NB, PIPE>][2][2],
                       const uint16_t(&S)[kUnroll<NB, PIPE>][2][2], auto u_const) {
      constexpr int U = decltype(u_const)::value;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        uint32_t X[NB][2 * kM];
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int v = 0; v < Tr::kActVec; ++v) {
            const uint4 a = __ldg(arow[nb] + (ks + u) * (Tr::kStepK / 8) + v);
            X[nb][4 * v + 0] = a.x;
            X[nb][4 * v + 1] = a.y;
            X[nb][4 * v + 2] = a.z;
            X[nb][4 * v + 3] = a.w;
          }
#pragma unroll
        for (int t = 0; t < 2; ++t) {
          uint32_t A0[2 * kM], A1[2 * kM];
          dequant<F>(W[u][t][0], S[u][t][0], A0);
          dequant<F>(W[u][t][1], S[u][t][1], A1);
#pragma unroll
          for (int j = 0; j < kM; ++j) {
            const uint32_t a[4] = {A0[2 * j], A1[2 * j], A0[2 * j + 1], A1[2 * j + 1]};
#pragma unroll
            for (int nb = 0; nb < NB; ++nb) {
              if constexpr (F == GroupedFmt::kFp8Block)
                mma<F>(tacc[t][nb], a, X[nb][2 * j], X[nb][2 * j + 1]);
              else
                mma<F>(acc[t][nb], a, X[nb][2 * j], X[nb][2 * j + 1]);
            }
          }
        }
        if constexpr (F == GroupedFmt::kFp8Block) {
          if ((ks + u) & 1) {  // end of a 128-k block: acc += scale * partial
            const int64_t kb = (ks + u) >> 1, ksb = p.Kd / 128;
#pragma unroll
            for (int t = 0; t < 2; ++t) {
              const int m = GU ? t : 0;
              const float sc =
                  __ldg(static_cast<const float*>(p.s[m][e]) + (rbase[t] / 128) * ksb + kb);
#pragma unroll
              for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                  acc[t][nb][i] = fmaf(sc, tacc[t][nb][i], acc[t][nb][i]);
                  tacc[t][nb][i] = 0.f;
                }
            }
          }
        }
      }
    };
    constexpr int U = kUnroll<NB, PIPE>;
    using UC = std::integral_constant<int, U>;
    using One = std::integral_constant<int, 1>;
    const int64_t nmain = nsteps / U * U;
    uint4 Wa[U][2][2], Wb[U][2][2];
    uint16_t Sa[U][2][2], Sb[U][2][2];
    if constexpr (PIPE) {
      if (nmain > 0) load(0, Wa, Sa, UC{});
      for (int64_t ks = 0; ks < nmain; ks += U) {
        if (ks + U < nmain) load(ks + U, Wb, Sb, UC{});
        compute(ks, Wa, Sa, UC{});
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int t = 0; t < 2; ++t)
#pragma unroll
            for (int h = 0; h < 2; ++h) Wa[u][t][h] = Wb[u][t][h], Sa[u][t][h] = Sb[u][t][h];
      }
    } else {
      (void)Wb;
      (void)Sb;
      for (int64_t ks = 0; ks < nmain; ks += U) {
        load(ks, Wa, Sa, UC{});
        compute(ks, Wa, Sa, UC{});
      }
    }
    for (int64_t ks = nmain; ks < nsteps; ++ks) {
      load(ks, Wa, Sa, One{});
      compute(ks, Wa, Sa, One{});
    }

    float gsc[2] = {1.f, 1.f};
    if constexpr (F == GroupedFmt::kNvfp4) {
      gsc[0] = p.gs[0][e];
      gsc[1] = GU ? p.gs[1][e] : p.gs[0][e];
    }
    if constexpr (GU) {
      uint16_t* h = static_cast<uint16_t*>(p.out);
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int col = nb * 8 + 2 * c + (i & 1);
          if (col >= cnt) continue;
          const int64_t row = rbase[0] + g + (i >= 2 ? 8 : 0);
          const float gv = acc[0][nb][i] * gsc[0], uv = acc[1][nb][i] * gsc[1];
          const float hv = gv / (1.f + __expf(-gv)) * uv;
          const int64_t idx = F == GroupedFmt::kNvfp4 ? nvfp4_act_index(row) : row;
          h[static_cast<int64_t>(pos0 + col) * p.N + idx] = act_bits(hv, f16);
        }
    } else {
      float* out = static_cast<float*>(p.out);
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int col = nb * 8 + 2 * c + j;
          if (col >= cnt) continue;
          const int64_t slot = p.sorted_slot[pos0 + col];
          const float wv = p.route_w[(slot / p.K) * p.route_w_stride + slot % p.K] * gsc[0];
#pragma unroll
          for (int t = 0; t < 2; ++t)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh)
              out[slot * p.N + rbase[t] + g + 8 * hh] = wv * acc[t][nb][2 * hh + j];
        }
    }
  }
}

__global__ void __launch_bounds__(256)
    moe_combine_kernel(float* y, int64_t y_stride, const float* out, const int32_t* ids,
                       int64_t ids_stride, int64_t T, int64_t D, int64_t K, int64_t E) {
  const int64_t per_row = D / 4, n = T * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = u / per_row, q = u % per_row;
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    bool bad = false;
    for (int64_t k = 0; k < K; ++k) {
      const int32_t e = ids[t * ids_stride + k];
      if (e < 0 || e >= E) {
        bad = true;
        continue;
      }
      const float4 v = reinterpret_cast<const float4*>(out + (t * K + k) * D)[q];
      s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    if (bad) s = make_float4(NAN, NAN, NAN, NAN);
    reinterpret_cast<float4*>(y + t * y_stride)[q] = s;
  }
}

}  // namespace moe::cuda::grouped
