// The grouped routed-expert path's kernels around the GEMMs (see moe_grouped.h for the pipeline;
// the GEMMs are in moe_grouped.cuh, sm80_moe_tile_gemm.cuh and sm90_moe_wgmma_gemm.cuh):
// - grouping (moe_group_kernel; above kGroupMultiBlockSlots slots with moe_group_count_kernel
//   before and moe_group_place_kernel after it): slots sorted by expert, the tile lists, x in the
//   GEMMs' input type (and as E4M3 codes for FP8 activations), routing weight per slot;
// - moe_quant_rows_kernel: h rows of the warpgroup-MMA tiles -> E4M3 + scales;
// - load time: expert data and NVFP4 scales, row-major -> packed;
// - moe_combine_kernel: y[t] = sum of the token's per-slot outputs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <type_traits>

#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_common.cuh"

namespace moe::cuda::grouped {

constexpr int kGroupThreads = 512;
// Slots per thread in a placement round of moe_group (place_slots).
constexpr int kGroupPlaceCols = 8;
// Slots per chunk of the multi-block grouping (one placement round), and the slot count above
// which launch_moe_group takes it.
constexpr int kGroupChunkSlots = kGroupPlaceCols * kGroupThreads;
constexpr int64_t kGroupMultiBlockSlots = 2 * kGroupChunkSlots;

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

// Stable placement of slots [lo, hi) by one block: an expert's slots in increasing slot order,
// whatever the timing (a token's result must not depend on which tile it lands in: stream-K sums
// split items in another order than whole ones). cur[e]: expert e's next grouped position
// (advanced); wcnt: zero on entry and exit. Rounds of kGroupPlaceCols * kGroupThreads slots: warp
// w, column k, lane l takes slot base + (w * kGroupPlaceCols + k) * 32 + l, so (w, k, l) order is
// slot order. position = cur + slots of the expert in lower warps of the round (exclusive prefix
// of wcnt over warps) + in earlier columns of the warp (wcnt while the warp counts) + in lower
// lanes of the column (match mask).
__device__ __forceinline__ void place_slots(const MoeGroupParams& p, int64_t lo, int64_t hi,
                                            int* cur, int (*wcnt)[kMaxGroupedExperts]) {
  constexpr int kCols = kGroupPlaceCols, kWarps = kGroupThreads / 32;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const unsigned lower = (1u << lane) - 1u;
  for (int64_t base = lo; base < hi; base += int64_t{kCols} * kGroupThreads) {
    const int64_t s0 = base + static_cast<int64_t>(warp) * kCols * 32 + lane;
    int32_t ee[kCols];
    int rk[kCols];
#pragma unroll
    for (int k = 0; k < kCols; ++k) ee[k] = s0 + 32 * k < hi ? slot_expert(p, s0 + 32 * k) : -1;
#pragma unroll
    for (int k = 0; k < kCols; ++k) {
      const unsigned same = __match_any_sync(0xffffffffu, ee[k]);
      const int prior = ee[k] >= 0 ? wcnt[warp][ee[k]] : 0;
      __syncwarp();
      if (ee[k] >= 0 && lane == __ffs(same) - 1) wcnt[warp][ee[k]] = prior + __popc(same);
      __syncwarp();
      rk[k] = prior + __popc(same & lower);
    }
    __syncthreads();
    if (threadIdx.x < p.E) {  // per expert: counts of the warps -> their first positions
      int run = cur[threadIdx.x];
      for (int w = 0; w < kWarps; ++w) {
        const int c = wcnt[w][threadIdx.x];
        wcnt[w][threadIdx.x] = run;
        run += c;
      }
      cur[threadIdx.x] = run;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kCols; ++k) {
      const int64_t slot = s0 + 32 * k;
      const int32_t pos = ee[k] >= 0 ? wcnt[warp][ee[k]] + rk[k] : -1;
      if (ee[k] >= 0) p.sorted_slot[pos] = static_cast<int32_t>(slot);
      if (p.slot_pos != nullptr && slot < hi) p.slot_pos[slot] = pos;  // (x_pos_scatter)
    }
    __syncthreads();
    if (threadIdx.x < p.E)
      for (int w = 0; w < kWarps; ++w) wcnt[w][threadIdx.x] = 0;
    __syncthreads();
  }
}

// Slots of expert e among slots [lo, hi), into cnt (shared, zeroed), four loads in flight.
__device__ __forceinline__ void count_slots(const MoeGroupParams& p, int64_t lo, int64_t hi,
                                            int* cnt) {
  for (int64_t s0 = lo + threadIdx.x; s0 < hi; s0 += 4 * blockDim.x) {
    int32_t es[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t s = s0 + k * blockDim.x;
      es[k] = s < hi ? slot_expert(p, s) : -1;
    }
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (es[k] >= 0) atomicAdd(&cnt[es[k]], 1);
  }
}

// Multi-block grouping (p.chunks > 0, launch_moe_group for many slots): chunk b = slots
// [b * kGroupChunkSlots, ...). Before moe_group_kernel: each block counts its chunk's slots per
// expert into p.chunk_hist[b][e]; moe_group_kernel's block 0 turns them into each chunk's first
// position per expert; after it, each block places its chunk from there.
__global__ void __launch_bounds__(kGroupThreads)
    moe_group_count_kernel(const __grid_constant__ MoeGroupParams p) {
  grouped::pdl_wait();  // GroupedLaunch::pdl (no-op otherwise)
  grouped::pdl_launch_dependents();
  __shared__ int cnt[kMaxGroupedExperts];
  for (int e = threadIdx.x; e < kMaxGroupedExperts; e += blockDim.x) cnt[e] = 0;
  __syncthreads();
  const int64_t lo = static_cast<int64_t>(blockIdx.x) * kGroupChunkSlots;
  count_slots(p, lo, min(lo + kGroupChunkSlots, p.T * p.K), cnt);
  __syncthreads();
  for (int e = threadIdx.x; e < p.E; e += blockDim.x) p.chunk_hist[blockIdx.x * p.E + e] = cnt[e];
}
__global__ void __launch_bounds__(kGroupThreads)
    moe_group_place_kernel(const __grid_constant__ MoeGroupParams p) {
  grouped::pdl_wait();  // GroupedLaunch::pdl (no-op otherwise)
  grouped::pdl_launch_dependents();
  __shared__ int cur[kMaxGroupedExperts];
  __shared__ int wcnt[kGroupThreads / 32][kMaxGroupedExperts];
  for (int e = threadIdx.x; e < p.E; e += blockDim.x) cur[e] = p.chunk_hist[blockIdx.x * p.E + e];
  for (int i = threadIdx.x; i < (kGroupThreads / 32) * kMaxGroupedExperts; i += blockDim.x)
    wcnt[i / kMaxGroupedExperts][i % kMaxGroupedExperts] = 0;
  __syncthreads();
  const int64_t lo = static_cast<int64_t>(blockIdx.x) * kGroupChunkSlots;
  place_slots(p, lo, min(lo + kGroupChunkSlots, p.T * p.K), cur, wcnt);
}

// MoeGroupParams::one_warp (at most 32 slots, no big tiles, no pair units): one warp builds what
// block 0 builds below, in registers. Lane s holds slot s's expert; the first lane of each expert
// (its leader) its slot count and tile count; every lane sums those of the lower experts' leaders
// (its expert's first position and first tile), so the list and the positions are the block
// path's: experts in increasing id order, an expert's slots in increasing slot order.
// early_tiles (moe_grouped.cuh, GroupedLaunch::early_gate_up) computes the same in gate_up's ring
// without the positions; a change to one is a change to both (kept apart: merged, ptxas schedules
// both kernels differently, and each was validated on the GPU as it is).
__device__ __forceinline__ void group_one_warp(const MoeGroupParams& p) {
  const int lane = threadIdx.x & 31;
  const int32_t ee = lane < p.T * p.K ? slot_expert(p, lane) : -1;
  const unsigned same = __match_any_sync(0xffffffffu, ee);
  const bool lead = ee >= 0 && lane == __ffs(same) - 1;
  const int c = __popc(same), tt = p.tile_tokens;
  const int lc = lead ? c : 0, lnt = lead ? (c + tt - 1) / tt : 0;
  int off = 0, first = 0, n = 0;
#pragma unroll 8
  for (int j = 0; j < 32; ++j) {
    const int v = __shfl_sync(0xffffffffu, ee, j), vc = __shfl_sync(0xffffffffu, lc, j),
              vn = __shfl_sync(0xffffffffu, lnt, j);
    if (v < ee) off += vc, first += vn;  // (non-leaders hold 0)
    n += vn;
  }
  if (lane == 0) {
    *p.num_tiles = n;
    if (p.big_min > 0) *p.num_big = 0;
    if (p.big2_min > 0) *p.num_big2 = 0;
  }
  int4* list = reinterpret_cast<int4*>(p.tiles);
  for (int j = 0; j < lnt; ++j)
    list[first + j] = make_int4(ee, off + j * tt, min(tt, c - j * tt), 0);
  if (ee >= 0) p.sorted_slot[off + __popc(same & ((1u << lane) - 1u))] = lane;
}

__global__ void __launch_bounds__(kGroupThreads)
    moe_group_kernel(const __grid_constant__ MoeGroupParams p) {
  grouped::pdl_wait();  // GroupedLaunch::pdl (no-op otherwise)
  if (!p.late_trigger) grouped::pdl_launch_dependents();
  if (blockIdx.x == 0 && p.one_warp) {
    if (threadIdx.x < 32) group_one_warp(p);
    return;
  }
  if (blockIdx.x == 0) {
    __shared__ int cnt[kMaxGroupedExperts], cur[kMaxGroupedExperts], off[kMaxGroupedExperts];
    __shared__ int2 red[32], total;
    // Per warp of a placement round, slots per expert (see below).
    __shared__ int wcnt[kGroupThreads / 32][kMaxGroupedExperts];
    const int64_t TK = p.T * p.K;
    const bool one_round = TK <= 32;  // placed by warp 0 alone, without wcnt
    for (int e = threadIdx.x; e < kMaxGroupedExperts; e += blockDim.x) cnt[e] = 0, cur[e] = 0;
    if (!one_round)
      for (int i = threadIdx.x; i < (kGroupThreads / 32) * kMaxGroupedExperts; i += blockDim.x)
        wcnt[i / kMaxGroupedExperts][i % kMaxGroupedExperts] = 0;
    __syncthreads();
    if (p.chunks > 0) {  // the chunks' counts (moe_group_count_kernel)
      if (threadIdx.x < p.E) {
        int c = 0;
#pragma unroll 8
        for (int b = 0; b < p.chunks; ++b) c += p.chunk_hist[b * p.E + threadIdx.x];
        cnt[threadIdx.x] = c;
      }
    } else {
      count_slots(p, 0, TK, cnt);
    }
    __syncthreads();
    // E <= kMaxGroupedExperts == kGroupThreads: one expert per thread.
    const int e = threadIdx.x;
    const int c = e < p.E ? cnt[e] : 0;
    bool big = p.big_min > 0 && c >= p.big_min;
    if (p.big_min > 0 && p.big_min_tiles > 0) {  // the qualifying experts' tokens / 8, and all
      const int t8 = (c + 7) / 8;
      block_exclusive_scan2(make_int2(big ? t8 : 0, t8), red, &total);
      const int2 sums = total;
      __syncthreads();  // every thread has read `total` before the next scan rewrites it
      int share_tiles = sums.x;
      if (p.big_min_share > 0 && p.big_share_min > p.big_min) {  // (uniform) fewer experts count
        block_exclusive_scan2(make_int2(c >= p.big_share_min ? t8 : 0, 0), red, &total);
        share_tiles = total.x;
        __syncthreads();
      }
      const bool engage =
          sums.x >= p.big_min_tiles ||
          (p.big_min_share > 0 &&
           1000LL * share_tiles >= static_cast<long long>(p.big_min_share) * sums.y);
      big = big && engage;
    }
    // (big2: a big expert of big2_min tokens or more, on the third list's 128-token tiles, if
    // those hold big2_min_share of the big experts' tokens)
    bool big2 = big && p.big2_min > 0 && c >= p.big2_min;
    if (p.big2_min > 0 && p.big2_min_share > 0) {
      block_exclusive_scan2(make_int2(big2 ? c : 0, big ? c : 0), red, &total);
      const int2 sums = total;
      __syncthreads();  // every thread has read `total` before the next scan rewrites it
      big2 = big2 && 1000LL * sums.x >= static_cast<long long>(p.big2_min_share) * sums.y;
    }
    const int tt = big2 ? kGroupedBigTile : big ? p.big_tile : p.tile_tokens;
    const int nt = (c + tt - 1) / tt;
    const int2 ex = block_exclusive_scan2(make_int2(c, big ? 0 : nt), red, &total);
    if (threadIdx.x == 0) *p.num_tiles = total.y;
    int first = ex.y;
    if (p.big_min > 0) {  // second scan (every thread): the big tiles' lists
      const int2 exb =
          block_exclusive_scan2(make_int2(big && !big2 ? nt : 0, big2 ? nt : 0), red, &total);
      if (big) first = big2 ? exb.y : exb.x;
      if (threadIdx.x == 0) {
        *p.num_big = total.x;
        if (p.big2_min > 0) *p.num_big2 = total.y;
      }
    }
    if (e < p.E) {
      off[e] = ex.x;
      int4* list = reinterpret_cast<int4*>(big2 ? p.big2_tiles : big ? p.big_tiles : p.tiles);
      if (p.pair_units) {  // tt == 128 and no big tiles (launch_moe_group): nt units
        for (int j = 0; j < nt; ++j) {
          const int cc = min(256, c - (j >> 1) * 256);
          list[first + j] = make_int4(e, ex.x + (j >> 1) * 256, cc,
                                      cc <= 128 ? kLone
                                      : (j & 1) ? kPairOdd
                                                : kPairEven);
        }
      } else {
        for (int j = 0; j < nt; ++j)
          list[first + j] = make_int4(e, ex.x + j * tt, min(tt, c - j * tt), 0);
      }
    }
    __syncthreads();     // off[] (and the zeroed wcnt) before the placement
    if (p.chunks > 0) {  // each chunk's first position per expert, for moe_group_place_kernel
      if (e < p.E) {
        int run = off[e];
        for (int b = 0; b < p.chunks; ++b) {
          const int c2 = p.chunk_hist[b * p.E + e];
          p.chunk_hist[b * p.E + e] = run;
          run += c2;
        }
      }
      return;
    }
    if (one_round) {  // decode batches up to 32 slots: one warp, no block barriers
      const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
      if (warp == 0) {
        const int32_t ee = lane < TK ? slot_expert(p, lane) : -1;
        const unsigned same = __match_any_sync(0xffffffffu, ee);
        if (ee >= 0) p.sorted_slot[off[ee] + __popc(same & ((1u << lane) - 1u))] = lane;
      }
      return;
    }
    if (e < p.E) cur[e] = off[e];
    __syncthreads();
    place_slots(p, 0, TK, cur, wcnt);
    return;
  }
  for (int64_t u = static_cast<int64_t>(blockIdx.x - 1) * blockDim.x + threadIdx.x;
       u < p.zero_count; u += static_cast<int64_t>(gridDim.x - 1) * blockDim.x)
    p.zero[u] = 0;
  for (int64_t u = static_cast<int64_t>(blockIdx.x - 1) * blockDim.x + threadIdx.x;
       u < p.zero2_count; u += static_cast<int64_t>(gridDim.x - 1) * blockDim.x)
    p.zero2[u] = 0;
  for (int64_t u = static_cast<int64_t>(blockIdx.x - 1) * blockDim.x + threadIdx.x; u < p.T * p.K;
       u += static_cast<int64_t>(gridDim.x - 1) * blockDim.x)
    p.slot_w[u] = slot_route_weight(p, u);
  const GroupedFmt fmt = static_cast<GroupedFmt>(p.fmt);
  const bool f16 = fmt != GroupedFmt::kBf16;
  const int64_t per_row = p.D / 8, n = p.T * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x - 1) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x - 1) * blockDim.x) {
    // 32-bit division (T * D / 8 < 2^31, checked by launch_moe_group)
    const int64_t t = static_cast<uint32_t>(u) / static_cast<uint32_t>(per_row);
    const int64_t q = u - t * per_row;
    const float4* src = reinterpret_cast<const float4*>(p.x + t * p.x_stride + q * 8);
    const float4 a = src[0], b = src[1];
    const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    if (p.xq != nullptr)  // the 16 lanes of a 128-k block (D % 128 == 0, u % 16 == lane % 16)
      quant_e4m3_block(v, p.xq + t * p.D + (q / 16) * 128, p.xq_scale + t * (p.D / 128) + q / 16,
                       static_cast<int>(q % 16), 0xffffu << (threadIdx.x & 16));
    if (p.xa == nullptr) continue;
    uint16_t o[8];
    auto convert = [&](auto f_const) {  // a compile-time format keeps o[] in registers
#pragma unroll
      for (int i = 0; i < 8; ++i) o[act_index(decltype(f_const)::value, i)] = act_bits(v[i], f16);
    };
    if (fmt == GroupedFmt::kNvfp4)
      convert(std::integral_constant<GroupedFmt, GroupedFmt::kNvfp4>{});
    else if (fmt == GroupedFmt::kFp8Block)
      convert(std::integral_constant<GroupedFmt, GroupedFmt::kFp8Block>{});
    else
      convert(std::integral_constant<GroupedFmt, GroupedFmt::kBf16>{});
    uint4 r;
    r.x = o[0] | (uint32_t{o[1]} << 16);
    r.y = o[2] | (uint32_t{o[3]} << 16);
    r.z = o[4] | (uint32_t{o[5]} << 16);
    r.w = o[6] | (uint32_t{o[7]} << 16);
    // act_t (NVFP4): chunk q of 8 at its chunk-transposed place (act_index_t)
    reinterpret_cast<uint4*>(p.xa)[t * per_row + (p.act_t ? act_chunk_t(q) : q)] = r;
  }
}

// ---- FP8 activations of the down GEMM: h rows of a tile list -> E4M3 + scales ----

// Work units of 8 rows of a tile (rows r0 .. r0 + 7 + 128 j: 16 units per tile of up to 128 rows,
// longer tiles wrap), blocks striding over the units; each thread converts up to four 16-byte
// chunks (8 values of one 128-k block) at a time, loads first (enough bytes in flight to
// stream), with 32-bit index math.
constexpr int kQuantRowsUnitRows = 8, kQuantRowsUnits = 16;
__global__ void __launch_bounds__(256)
    moe_quant_rows_kernel(const uint16_t* h, int64_t I, const int32_t* tiles,
                          const int32_t* num_tiles, uint8_t* q, float* qs) {
  grouped::pdl_wait();  // GroupedLaunch::pdl (no-op otherwise)
  grouped::pdl_launch_dependents();
  const int units = *num_tiles * kQuantRowsUnits;
  const int per_row = static_cast<int>(I / 8);  // 8 values per chunk; per_row % 16 == 0
  const int kb = static_cast<int>(I / 128);
  const unsigned mask = 0xffffu << (threadIdx.x & 16);
  for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
    const int4 td = reinterpret_cast<const int4*>(tiles)[unit / kQuantRowsUnits];
    if (td.w == kPairOdd) continue;  // pair units: the chunk's rows are its kPairEven unit's
    for (int r0 = (unit % kQuantRowsUnits) * kQuantRowsUnitRows; r0 < td.z;
         r0 += kQuantRowsUnits * kQuantRowsUnitRows) {
      const int n = min(kQuantRowsUnitRows, td.z - r0) * per_row;
      // blockDim % 16 == 0 and n % 16 == 0: the 16 lanes of a block are active together.
      for (int u0 = threadIdx.x; u0 < n; u0 += 4 * blockDim.x) {
        uint4 raw[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int u = u0 + k * blockDim.x;
          if (u < n) {
            const int64_t pos = td.y + r0 + u / per_row;
            raw[k] = *reinterpret_cast<const uint4*>(h + pos * I + (u % per_row) * 8);
          }
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int u = u0 + k * blockDim.x;
          if (u >= n) break;
          const int64_t pos = td.y + r0 + u / per_row;
          const int c = u % per_row;
          const uint32_t w[4] = {raw[k].x, raw[k].y, raw[k].z, raw[k].w};
          float v[8];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float2 f = __half22float2(u32_as_h2(w[i]));
            v[2 * i] = f.x, v[2 * i + 1] = f.y;
          }
          quant_e4m3_block(v, q + pos * I + (c / 16) * 128, qs + pos * kb + c / 16, c % 16, mask);
        }
      }
    }
  }
}

// ---- load time: expert data and NVFP4 scales, row-major -> packed (dequant_bits.h) ----

// 16-byte chunks (a chunk stays whole in the packed layout).
__global__ void __launch_bounds__(256)
    pack_data_kernel(uint8_t* dst, const uint8_t* src, int64_t N, int64_t row_bytes) {
  const int64_t per_row = row_bytes / 16, n = N * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = u / per_row, q = u % per_row;
    *reinterpret_cast<uint4*>(dst + packed_data_offset(true, row_bytes, r, q * 16)) =
        reinterpret_cast<const uint4*>(src)[u];
  }
}
__global__ void __launch_bounds__(256)
    nvfp4_pack_scales_kernel(uint8_t* dst, const uint8_t* src, int64_t N, int64_t Kd) {
  const int64_t per_row = Kd / 16, n = N * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[nvfp4_scale_offset(true, Kd, u / per_row, u % per_row)] = src[u];
}

template <bool kBf16>
__global__ void __launch_bounds__(256)
    moe_combine_kernel(float* y, int64_t y_stride, const void* out, const int32_t* ids,
                       int64_t ids_stride, int64_t T, int64_t D, int64_t K, int64_t E, bool shared,
                       bool accumulate) {
  grouped::pdl_wait();  // GroupedLaunch::pdl (no-op otherwise)
  const int64_t per_row = D / 4, n = T * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = u / per_row, q = u % per_row;
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    bool bad = false;
    const int64_t routed = shared ? K - 1 : K, routed_e = shared ? E - 1 : E;
    // Every slot's row is read and added, a bad one's too (not written by the GEMMs; the sum is
    // then replaced by NaN): no load waits on the ids, so the loads of several slots are in
    // flight together (at T 1 the chain of K dependent id -> row loads was most of the time).
#pragma unroll 4
    for (int64_t k = 0; k < K; ++k) {
      const int32_t e = k < routed ? ids[t * ids_stride + k] : -1;  // -1: the shared slot
      bad |= k < routed && (e < 0 || e >= routed_e);
      float4 v;
      if constexpr (kBf16) {
        const uint2 r = reinterpret_cast<const uint2*>(static_cast<const __nv_bfloat16*>(out) +
                                                       (t * K + k) * D)[q];
        const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&r.x));
        const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&r.y));
        v = make_float4(lo.x, lo.y, hi.x, hi.y);
      } else {
        v = reinterpret_cast<const float4*>(static_cast<const float*>(out) + (t * K + k) * D)[q];
      }
      s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    if (bad) s = make_float4(NAN, NAN, NAN, NAN);
    float4* yq = reinterpret_cast<float4*>(y + t * y_stride) + q;
    if (accumulate) {
      const float4 a = *yq;
      s.x += a.x, s.y += a.y, s.z += a.z, s.w += a.w;
    }
    *yq = s;
  }
}

// GroupedLaunch::x_pos: x's E4M3 codes by position, xs[pos] = xq[sorted_slot[pos] / K]
// (16-byte chunks; rows of D bytes), so gate_up's warp-specialized kernels take each activation
// tile as one TMA box like down. Positions past the placed slots (slots with bad expert ids are
// left out, so sorted_slot's tail holds whatever the scratch held) get zeros: no tile stores them
// (a box's rows past its tile's count are computed and dropped), and no stale index is followed.
__global__ void __launch_bounds__(256)
    moe_x_pos_kernel(const uint4* xq, const int32_t* sorted_slot, int64_t rows, int K,
                     int64_t row_chunks, uint4* xs) {
  grouped::pdl_wait();  // GroupedLaunch::pdl (no-op otherwise)
  grouped::pdl_launch_dependents();
  const int64_t n = rows * row_chunks;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pos = u / row_chunks, c = u - pos * row_chunks;
    const int32_t slot = sorted_slot[pos];
    xs[u] = slot >= 0 && slot < rows ? xq[static_cast<int64_t>(slot / K) * row_chunks + c]
                                     : make_uint4(0, 0, 0, 0);
  }
}

// GroupedLaunch::x_pos_scatter: the copy of moe_x_pos_kernel by token, xs[slot_pos[t K + k]] =
// xq[t] (16-byte chunks; rows of D bytes): each token's codes are read once (the gather reads a
// token's row once per slot, mostly from HBM at prefill sizes) and written to its K positions.
// Slots at -1 (bad ids, left out of the grouping) are skipped; positions no slot takes keep what
// they held (no tile stores them: a box's rows past its tile's count are computed and dropped).
__global__ void __launch_bounds__(256)
    moe_x_pos_scatter_kernel(const uint4* xq, const int32_t* slot_pos, int64_t T, int K,
                             int64_t rows, int64_t row_chunks, uint4* xs) {
  grouped::pdl_wait();  // GroupedLaunch::pdl (no-op otherwise)
  grouped::pdl_launch_dependents();
  const int64_t n = T * row_chunks;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = u / row_chunks, c = u - t * row_chunks;
    const uint4 v = xq[u];
    for (int k = 0; k < K; ++k) {
      const int32_t pos = __ldg(slot_pos + t * K + k);
      if (pos >= 0 && pos < rows) xs[static_cast<int64_t>(pos) * row_chunks + c] = v;
    }
  }
}

}  // namespace moe::cuda::grouped
