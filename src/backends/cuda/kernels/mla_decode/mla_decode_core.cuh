// Stage (b) of absorbed MLA, flash-decoding style. Block per (token t, group of kHG heads, key
// split s); split s scans its share of t's key tiles (16 key slots each: positions 0..pos_t, or
// t's `selected` row). Pipeline per tile: cp.async of the 16 latent rows [c_kv | k_pe] into one
// of two shared-memory stages (the next tile loads while this one computes; slots not attended
// are zero-filled without a global read) -> scores S[h][j] = qa[h] . key[j] for all kHG heads
// through TileDot (each key read once from global memory for the whole group) -> online
// softmax in the log2 domain, a 16-lane group per head (running max m, exp-sum l, rescale
// alpha) -> o^[h][:] = alpha[h] o^[h][:] + sum_j p[h][j] key[j][:L], register tiles of 4 heads x
// 4 latent columns (kUnits per thread). With one split the block writes o^ / l; otherwise the
// unnormalised o^ with (m, l) for mla_decode_combine. No atomics: deterministic.
#pragma once

#include <cmath>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/mla_decode/mla_decode.h"
#include "backends/cuda/kernels/mla_decode/mla_tile_dot.cuh"

namespace moe::cuda::mla {

__device__ __forceinline__ void cp_async16(float* dst, const float* src, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async4(float* dst, const float* src, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Shared-memory carve-up of the core (floats): qs [kHG][ld], ks [2][16][ld], ps [16][kHG],
// alpha [kHG], lsum [kHG], msum [kHG], kval [2][16] (int).
inline int64_t core_smem_floats(int64_t heads, int64_t ld) {
  return heads * ld + 2 * kMlaKeyTile * ld + kMlaKeyTile * heads + 3 * heads + 2 * kMlaKeyTile;
}

// Resident blocks per SM the register budget is tuned for (64 accumulators of 4 o^ tiles need
// more than the 128 registers of two blocks).
template <int kUnits>
constexpr int kCoreBlocksPerSm = kUnits == 4 ? 1 : 2;

template <int kHG, int kUnits>
__global__ void __launch_bounds__(kMlaDecodeThreads, kCoreBlocksPerSm<kUnits>)
    decode_core_kernel(const MlaDecodeParams p) {
  using Dot = TileDot<kHG>;
  constexpr int kT = kMlaKeyTile;
  constexpr int kRowThreads = kMlaDecodeThreads / kT;  // loader threads per key row
  static_assert(kHG * kT <= kMlaDecodeThreads, "one softmax thread per (head, key)");
  static_assert(kT == 16 && kRowThreads * kT == kMlaDecodeThreads, "16 key rows per tile");
  extern __shared__ float4 smem4[];
  const int tid = threadIdx.x;
  const int H = static_cast<int>(p.H), L = static_cast<int>(p.L);
  const int LR = static_cast<int>(p.L + p.R), ld = static_cast<int>(p.ld), L4 = (L + 3) / 4;
  const int splits = p.splits, groups = (H + kHG - 1) / kHG;
  const int s = blockIdx.x % splits, h0 = blockIdx.x / splits % groups * kHG;
  const int64_t t = blockIdx.x / splits / groups;
  float* smem = reinterpret_cast<float*>(smem4);
  float* qs = smem;                                // [kHG][ld]
  float* ks = qs + kHG * ld;                       // [2][kT][ld]
  float* ps = ks + 2 * kT * ld;                    // [kT][kHG] scores, then probabilities
  float* alpha = ps + kT * kHG;                    // [kHG]
  float* lsum = alpha + kHG;                       // [kHG]
  float* msum = lsum + kHG;                        // [kHG]
  int* kval = reinterpret_cast<int*>(msum + kHG);  // [2][kT] 1 if the slot is attended

  const int64_t pos_t = p.b.positions[t];
  const int64_t slots = p.selected ? p.sel_k : pos_t + 1;
  const int64_t tiles = (slots + kT - 1) / kT;
  const int64_t per_split = (tiles + splits - 1) / splits;
  const int64_t tile_begin = s * per_split;
  const int64_t tile_end = tile_begin + per_split < tiles ? tile_begin + per_split : tiles;

  for (int i = tid; i < kHG * ld; i += kMlaDecodeThreads) {
    const int h = i / ld, d = i % ld;
    qs[i] = (h0 + h < H && d < LR) ? p.qa[(t * H + h0 + h) * LR + d] : 0.f;
  }

  // Loader: kRowThreads threads per key row, one page lookup each. Slot i of token t is the
  // cache position i (causal) or selected[t, i]; it is attended when 0 <= position <= pos_t
  // and its page exists.
  const int lrow = tid / kRowThreads, lcol = tid % kRowThreads;
  auto load_tile = [&](int64_t tile, int stage) {
    const int64_t slot = tile * kT + lrow;
    int64_t kp = slot;
    if (p.selected) kp = slot < p.sel_k ? p.selected[t * p.sel_stride + slot] : -1;
    const int64_t off = (kp >= 0 && kp <= pos_t) ? cache_offset(p.b, p.b.token_seq[t], kp, LR) : -1;
    float* dst = ks + (stage * kT + lrow) * ld;
    const float* src = p.cache + (off >= 0 ? off : 0);
    if (p.vec16) {
      const int bytes = off >= 0 ? 16 : 0;
      for (int c = lcol * 4; c < LR; c += 4 * kRowThreads)
        cp_async16(dst + c, src + (off >= 0 ? c : 0), bytes);
    } else {
      const int bytes = off >= 0 ? 4 : 0;
      for (int c = lcol; c < LR; c += kRowThreads)
        cp_async4(dst + c, src + (off >= 0 ? c : 0), bytes);
      for (int c = LR + lcol; c < ld; c += kRowThreads) dst[c] = 0.f;  // row padding
    }
    if (lcol == 0) kval[stage * kT + lrow] = off >= 0 ? 1 : 0;
    cp_async_commit();
  };

  // Softmax state: thread (sh, sj) of the first kHG * kT threads; m and l are replicated over
  // the kT lanes of head sh.
  const int sh = tid / kT, sj = tid % kT;
  const bool smax_thread = tid < kHG * kT;
  float m_run = -INFINITY, l_run = 0.f;
  float acc[kUnits][4][4];
#pragma unroll
  for (int u = 0; u < kUnits; ++u)
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[u][i][c] = 0.f;

  if (tile_begin < tile_end) load_tile(tile_begin, 0);
  for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
    const int st = static_cast<int>((tile - tile_begin) & 1);
    if (tile + 1 < tile_end) {
      load_tile(tile + 1, st ^ 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    // Tile `tile` (and qs) visible to all; a tile with no attended slot is skipped (nobody
    // reads its stage after this barrier). The predicate is evaluated before the barrier, so
    // each row's flag is read by the thread that wrote it (lcol 0 of that row), never by
    // another thread: the prologue's flags are not behind any barrier yet.
    if (!__syncthreads_or(lcol == 0 ? kval[st * kT + lrow] : 0)) continue;
    const float* kt = ks + st * kT * ld;

    {  // scores[j][h] = qa[h] . key[j]   (already scaled, log2 domain)
      float c[4][4];
      Dot::run(qs, ld, kt, ld, ld / 4, c);
      if (Dot::leader()) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) ps[(Dot::row_b() + j) * kHG + Dot::row_a() + i] = c[i][j];
      }
    }
    __syncthreads();

    if (smax_thread) {  // online softmax, 16 lanes per head
      const bool valid = kval[st * kT + sj] != 0;
      const float sc = valid ? ps[sj * kHG + sh] : -INFINITY;
      float mt = sc;
#pragma unroll
      for (int o = kT / 2; o > 0; o >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, o));
      const float m_new = fmaxf(m_run, mt);  // finite: the tile has an attended slot
      const float pj = valid ? exp2f(sc - m_new) : 0.f;
      float sum = pj;
#pragma unroll
      for (int o = kT / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      const float a = m_run == -INFINITY ? 0.f : exp2f(m_run - m_new);
      l_run = l_run * a + sum;
      m_run = m_new;
      ps[sj * kHG + sh] = pj;
      if (sj == 0) alpha[sh] = a;
    }
    __syncthreads();

#pragma unroll
    for (int u = 0; u < kUnits; ++u) {  // o^[h][c] = alpha[h] o^[h][c] + sum_j p[j][h] key[j][c]
      const int unit = tid + u * kMlaDecodeThreads, hq = unit / L4, c4 = unit % L4;
      if (hq < kHG / 4) {
        const float4 a4 = *reinterpret_cast<const float4*>(alpha + hq * 4);
        const float av[4] = {a4.x, a4.y, a4.z, a4.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int cc = 0; cc < 4; ++cc) acc[u][i][cc] *= av[i];
#pragma unroll 4
        for (int j = 0; j < kT; ++j) {
          const float4 p4 = *reinterpret_cast<const float4*>(ps + j * kHG + hq * 4);
          const float4 k4 = *reinterpret_cast<const float4*>(kt + j * ld + c4 * 4);
          const float pv[4] = {p4.x, p4.y, p4.z, p4.w};
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            acc[u][i][0] = fmaf(pv[i], k4.x, acc[u][i][0]);
            acc[u][i][1] = fmaf(pv[i], k4.y, acc[u][i][1]);
            acc[u][i][2] = fmaf(pv[i], k4.z, acc[u][i][2]);
            acc[u][i][3] = fmaf(pv[i], k4.w, acc[u][i][3]);
          }
        }
      }
    }
    __syncthreads();  // stage st and ps are rewritten by the next iterations
  }

  if (smax_thread && sj == 0) {
    lsum[sh] = l_run;
    msum[sh] = m_run;
  }
  __syncthreads();
#pragma unroll
  for (int u = 0; u < kUnits; ++u) {
    const int unit = tid + u * kMlaDecodeThreads, hq = unit / L4, c4 = unit % L4;
    if (hq >= kHG / 4) continue;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int hl = hq * 4 + i, h = h0 + hl;
      if (h >= H) continue;
      float* dst;
      float mul = 1.f;
      if (splits == 1) {
        dst = p.ohat + (t * H + h) * L;
        mul = lsum[hl] > 0.f ? 1.f / lsum[hl] : 0.f;  // no attended key: o^ = 0
      } else {
        dst = p.part_o + ((t * H + h) * splits + s) * L;
      }
#pragma unroll
      for (int cc = 0; cc < 4; ++cc)
        if (c4 * 4 + cc < L) dst[c4 * 4 + cc] = acc[u][i][cc] * mul;
    }
  }
  if (splits > 1 && tid < kHG && h0 + tid < H) {
    float* ml = p.part_ml + ((t * H + h0 + tid) * splits + s) * 2;
    ml[0] = msum[tid];
    ml[1] = lsum[tid];
  }
}

}  // namespace moe::cuda::mla
