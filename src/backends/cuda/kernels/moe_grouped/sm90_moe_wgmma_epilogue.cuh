// Epilogues of the Hopper warpgroup-MMA grouped GEMMs (sm90_moe_wgmma_gemm.cuh's 256-thread
// kernel and sm90_moe_wgmma_ws.cuh's warp-specialized one): the f32 accumulators of an item to
// h = silu(gate) * up (16-bit, or E4M3 codes with per-(row, 128) scales for FP8 activations) for
// gate_up, and to routing-weighted rows (f32 or bf16) for down. Accumulator layout: wgmma
// m64nBN's (accumulator 4 j + q: token lane / 4 + 8 (q >= 2), column 8 j + 2 (lane % 4) + (q & 1)).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "backends/cuda/kernels/moe_grouped/moe_grouped_common.cuh"

// The warpgroup-MMA (and named-barrier) instructions exist only in sm_90a device code.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MOE_WGMMA_ENABLED 1
#endif

namespace moe::cuda::wgmma_gemm {

// One stage of quad_transpose: lanes X apart swap words, each pair (a, a + X) with a & X == 0;
// the lane with c & X sends w[a] and keeps w[a + X], its partner the other way round.
template <int X>
__device__ __forceinline__ void quad_swap_stage(uint32_t (&w)[4], bool up) {
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    if (a & X) continue;
    const uint32_t r = __shfl_xor_sync(0xffffffffu, up ? w[a] : w[a + X], X);
    if (up)
      w[a] = r;
    else
      w[a + X] = r;
  }
}

// Transpose of 4 x 4 words over a quad of lanes (c = lane % 4): in w[i] this lane's word of group
// i, out w[i] lane i's word of group c. Two xor-shuffle stages, no dynamic register indexing.
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4], int c) {
  quad_swap_stage<1>(w, c & 1);
  quad_swap_stage<2>(w, c & 2);
}

// silu(g) * u with one ex2 and one reciprocal (MUFU.EX2, MUFU.RCP; both approximate,
// flush-to-zero: ~2 ulp of f32 from g / (1 + __expf(-g)) * u) instead of __expf and an IEEE
// division (FCHK, its slow-path branch, MUFU.RCP and four FFMA per value): gate_up's epilogue is
// ~40% fewer instructions, prefill 2.5-3% faster (H200, docs/perf.md 2026-12-05). Overflow keeps
// the limits: ex2 -> inf gives 0 (g << 0), ex2 -> 0 gives g * u.
__device__ __forceinline__ float silu_mul_fast(float g, float u) {
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(g * -1.4426950408889634f));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.f + e));
  return g * r * u;
}

// h = silu(gate) * up of columns 8 j + 2 c and 8 j + 2 c + 1 of token half hh (accumulators 4 j
// + 2 hh + q: gate and up interleaved by 8 rows, or (TMA) 128 apart), gate and up times gs
// (NVFP4's global scales; 1 otherwise).
template <int BN, bool TMA>
__device__ __forceinline__ float2 silu_up(const float (&acc)[BN / 2], int j, int hh,
                                          const float (&gs)[2]) {
  const int jg = TMA ? j : 2 * j, ju = TMA ? j + BN / 16 : 2 * j + 1;
  float hv[2];
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const float gv = acc[4 * jg + 2 * hh + q] * gs[0], uv = acc[4 * ju + 2 * hh + q] * gs[1];
    hv[q] = silu_mul_fast(gv, uv);
  }
  return make_float2(hv[0], hv[1]);
}

// gate_up's epilogue with h quantized to E4M3 (MoeGemmParams::hq, GroupedLaunch::wgmma_hquant;
// FP8, 256 staged rows: the item's 128 h columns nblk * 128.. are one 128-k block of down's
// activations). h is rounded to F16 (act_bits) as the 16-bit epilogue stores it, amax taken over
// the block (a quad's lanes hold its 128 columns of a token; narrow tiles, qmask 5: consumer
// warpgroup nw holds half of them, in the slots of quarters 0 and 2, for columns 64 nw on; the
// halves are combined through xchg [2 warpgroups][64 tokens] in shared memory behind barrier 1
// of the 256 consumer threads, once per token half), s = amax / 448 (1 for an all-zero block),
// codes of v * (448 / amax): quant_e4m3_block's arithmetic on the same F16 values, so the same bits
// as moe_quant_rows. Codes at hq [row, N] by 8-byte stores (a quad transpose gives lane c column
// group 4 m + c whole), the scale at hq_scale [row, N / 128].
template <bool TMA>
__device__ __forceinline__ void epilogue_hq(const MoeGemmParams& p, int pos0, int cnt, int64_t nblk,
                                            const float (&acc)[128], int tok0, int c,
                                            unsigned qmask, float* xchg, int nw) {
  constexpr int BN = 256;
  const int64_t kb = p.N / 128;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {       // token tok0 + 8 hh (one at a time: registers)
    uint32_t hw[4][4];                   // [m][i]: F16 of columns 8 (4 m + i) + 2 c, + 1
    __half2 mx = __float2half2_rn(0.f);  // |h| (max ignores NaN, as fmaxf does)
#pragma unroll
    for (int m = 0; m < BN / 64; ++m) {
      if (!((qmask >> (m >> 1)) & 1u)) continue;  // (TMA) gate quarter m / 2, up m / 2 + 2
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 hv = silu_up<BN, TMA>(acc, 4 * m + i, hh, {1.f, 1.f});
        hw[m][i] = grouped::act_bits(hv.x, true) | (uint32_t{grouped::act_bits(hv.y, true)} << 16);
        mx = __hmax2(mx, __habs2(grouped::u32_as_h2(hw[m][i])));
      }
    }
    const int tok = tok0 + 8 * hh;
    float amax = fmaxf(__low2float(mx), __high2float(mx));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    if (xchg != nullptr) {  // narrow: the other consumer warpgroup's half of the block
      if (c == 0) xchg[nw * 64 + tok] = amax;
#ifdef MOE_WGMMA_ENABLED
      asm volatile("bar.sync 1, 256;" ::: "memory");
#endif
      amax = fmaxf(amax, xchg[(1 - nw) * 64 + tok]);
    }
    const bool valid = tok < cnt;
    const float inv = amax > 0.f ? 448.f / amax : 1.f;
    const int64_t row = pos0 + (valid ? tok : 0);
    uint8_t* q = p.hq + row * p.N + nblk * (BN / 2) + 64 * nw;
#pragma unroll
    for (int m = 0; m < BN / 64; ++m) {
      if (!((qmask >> (m >> 1)) & 1u)) continue;
      uint32_t w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __half22float2(grouped::u32_as_h2(hw[m][i]));
        w[i] =
            __nv_cvt_float2_to_fp8x2(make_float2(f.x * inv, f.y * inv), __NV_SATFINITE, __NV_E4M3);
      }
      quad_transpose(w, c);  // w[i]: columns 8 (4 m + c) + 2 i, + 1
      if (valid)
        *reinterpret_cast<uint2*>(q + 8 * (4 * m + c)) =
            make_uint2(w[0] | (w[1] << 16), w[2] | (w[3] << 16));
    }
    if (valid && c == 0 && nw == 0) p.hq_scale[row * kb + nblk] = amax > 0.f ? amax / 448.f : 1.f;
  }
}

// down: the slots and routing weights of a thread's two tokens (tok0, tok0 + 8), where the kernel
// staged them (sm90_moe_wgmma_ws.cuh's stage headers); null: the epilogue loads them.
struct EpiRows {
  int slot[2];
  float w[2];
};

// The epilogue of item (expert e, tile of cnt tokens from pos0, n-block nblk) for this thread's
// accumulators: accumulator 4 j + q holds token tok0 + 8 (q >= 2) (tok0 = warpgroup * 64 + warp in
// it * 16 + lane / 4) and staged row 8 j + 2 c + (q & 1) (c = lane % 4). gate_up writes
// h = silu(gate) * up (16-bit), down the routing-weighted rows (f32 or bf16,
// MoeGemmParams::out_bf16). qmask: the quarters of staged rows (bit qd: rows 64 qd..) whose
// columns this thread writes (narrow tiles: 5, quarters 0 and 2; TMA gate_up: the gate quarters).
// nw: a narrow tile's warpgroup (sm90_moe_wgmma_ws.cuh's f8_kblock_narrow), whose slots of
// quarters 0 and 2 hold quarters nw and nw + 2: every column it writes is 64 nw further on (TMA
// only; 0 otherwise). FP8 gate_up with p.hq: epilogue_hq (xchg: its narrow tiles' exchange
// buffer).
template <GroupedFmt F, int BN, bool GU, bool TMA>
__device__ __forceinline__ void epilogue(const MoeGemmParams& p, int e, int pos0, int cnt,
                                         int64_t nblk, const float (&acc)[BN / 2], int tok0, int c,
                                         unsigned qmask = 0xFu, float* xchg = nullptr,
                                         const EpiRows* er = nullptr, int nw = 0) {
  if constexpr (GU && F == GroupedFmt::kFp8Block && BN == 256)
    if (p.hq != nullptr) return epilogue_hq<TMA>(p, pos0, cnt, nblk, acc, tok0, c, qmask, xchg, nw);
  float gsc[2] = {1.f, 1.f};
  if constexpr (F == GroupedFmt::kNvfp4) {
    gsc[0] = p.gs[0][e] * grouped::kNvfp4Unscale;
    gsc[1] = (GU ? p.gs[1][e] : p.gs[0][e]) * grouped::kNvfp4Unscale;
  }
  // 16-bit outputs leave by 16-byte stores: per 4 column groups of 8 (one 16-bit pair of each
  // per lane of a quad) a quad transpose gives lane c group 4 m + c whole, so a row takes 64
  // contiguous bytes per store instead of 4 lanes x 4 bytes (half sectors) per group.
  // Every lane runs the shuffles; only the stores are predicated on the token.
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int tok = tok0 + 8 * hh;
    const bool valid = tok < cnt;
    if constexpr (GU) {
      uint16_t* h = static_cast<uint16_t*>(p.out) +
                    static_cast<int64_t>(pos0 + (valid ? tok : 0)) * p.N + nblk * (BN / 2) +
                    64 * nw;
#pragma unroll
      for (int m = 0; m < BN / 64; ++m) {
        if (!((qmask >> (m >> 1)) & 1u)) continue;  // (TMA) gate quarter m / 2, up m / 2 + 2
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 hv = silu_up<BN, TMA>(acc, 4 * m + i, hh, gsc);
          if constexpr (F == GroupedFmt::kBf16) {
            const __nv_bfloat162 b2 = __floats2bfloat162_rn(hv.x, hv.y);
            w[i] = *reinterpret_cast<const uint32_t*>(&b2);
          } else {
            w[i] = grouped::act_bits(hv.x, true) | (uint32_t{grouped::act_bits(hv.y, true)} << 16);
          }
        }
        quad_transpose(w, c);  // w[i]: columns 8 (4 m + c) + 2 i, + 1
        uint4 o;
        if constexpr (F == GroupedFmt::kNvfp4) {  // act_index order [0,4,2,6,1,5,3,7]
          o = make_uint4(__byte_perm(w[0], w[2], 0x5410), __byte_perm(w[1], w[3], 0x5410),
                         __byte_perm(w[0], w[2], 0x7632), __byte_perm(w[1], w[3], 0x7632));
        } else {
          o = make_uint4(w[0], w[1], w[2], w[3]);
        }
        if (valid) *reinterpret_cast<uint4*>(h + 8 * (4 * m + c)) = o;
      }
    } else {
      const int64_t slot = valid ? (er != nullptr ? er->slot[hh] : p.sorted_slot[pos0 + tok]) : 0;
      const float wv = valid ? (er != nullptr ? er->w[hh] : p.slot_w[slot]) * gsc[0] : 0.f;
      const int64_t o = slot * p.N + nblk * BN + 64 * nw;
      if (p.out_bf16) {  // half the bytes for the combine to read (MoeGemmParams::out_bf16)
        __nv_bfloat16* ob = static_cast<__nv_bfloat16*>(p.out) + o;
#pragma unroll
        for (int m = 0; m < BN / 32; ++m) {
          if (!((qmask >> (m >> 1)) & 1u)) continue;  // quarter m / 2
          uint32_t w[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int j = 4 * m + i;
            const __nv_bfloat162 b2 =
                __floats2bfloat162_rn(wv * acc[4 * j + 2 * hh], wv * acc[4 * j + 2 * hh + 1]);
            w[i] = *reinterpret_cast<const uint32_t*>(&b2);
          }
          quad_transpose(w, c);
          if (valid)
            *reinterpret_cast<uint4*>(ob + 8 * (4 * m + c)) = make_uint4(w[0], w[1], w[2], w[3]);
        }
      } else if (valid) {
        float* of = static_cast<float*>(p.out) + o + 2 * c;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
          if ((qmask >> (j >> 3)) & 1u)  // quarter j / 8
            *reinterpret_cast<float2*>(of + j * 8) =
                make_float2(wv * acc[4 * j + 2 * hh], wv * acc[4 * j + 2 * hh + 1]);
      }
    }
  }
}

}  // namespace moe::cuda::wgmma_gemm
