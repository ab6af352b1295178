// Tensor-core tiled grouped GEMM for BF16 experts with many tokens per expert (prefill, hot
// experts): the tile list of moe_group (tiles of 64 or 128 tokens of one expert) times blocks of
// 128 weight rows, staged through shared memory so every weight byte loaded feeds BM tokens.
//
// Pipeline story: a persistent grid of 8-warp CTAs walks work items (tile, n-block), n-block
// fastest, so the CTAs of one wave share a tile's activations and an expert's weight rows in L2.
// Per item, a 3-stage cp.async ring holds [BM tokens x 64 k] activations and [128 weight rows x
// 64 k] weights (128-byte rows, 16-byte chunks XOR-swizzled by row so ldmatrix reads 8 rows of
// one chunk column conflict-free); two stages are in flight while the warps run ldmatrix +
// mma.sync m16n8k16 (BF16 in, F32 accumulate) on the third. Warps are 2 (tokens) x 4 (weight
// rows): each owns BM/2 tokens x 32 rows. Activation rows are gathered through sorted_slot
// (gate_up: xa row of token slot/K; down: h row pos), rows past the tile's token count repeat its
// last token and are never written.
// gate_up: the 128 weight rows of a CTA are 64 gate + 64 up rows interleaved by 8 (n8 blocks
// gate, up, gate, up...), so a thread holds gate and up of the same output column and the
// epilogue writes h = silu(gate) * up (BF16) directly. down: out[slot, d] = w[slot] * acc (F32).
// Deterministic: every output element is written once, no atomics on values.
// NOTE: mma.sync reaches ~60-70% of the H200's wgmma BF16 rate; wgmma + TMA is the next step.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/kernels/moe_grouped/moe_grouped_common.cuh"

namespace moe::cuda::tile_gemm {

using grouped::cp_async16;
using grouped::cp_async_commit;
using grouped::cp_async_wait;
using grouped::swz;

constexpr int kThreads = 256;  // 8 warps: 2 along tokens x 4 along weight rows
constexpr int kBN = 128;       // weight rows per CTA (gate_up: 64 gate + 64 up)
constexpr int kBK = kGroupedTileK;
constexpr int kStages = kGroupedTileStages;
constexpr int kRowBytes = kBK * 2;  // one staged row: 128 bytes = 8 chunks of 16
static_assert(kRowBytes == 128, "the swizzle assumes 8 chunks of 16 bytes per staged row");

template <int BM>
constexpr int kStageBytes = (BM + kBN) * kRowBytes;
static_assert(kStages * kStageBytes<128> == grouped_tile_smem_bytes(128));
static_assert(kStages * kStageBytes<64> == grouped_tile_smem_bytes(64));

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// BM: tokens per tile (64 or 128); GU: gate_up (true) or down (false).
template <int BM, bool GU>
__global__ void __launch_bounds__(kThreads, 2)
    moe_tile_gemm_kernel(const __grid_constant__ MoeGemmParams p) {
  // GroupedLaunch::pdl / hybrid_pdl (no-op otherwise), sibling_defer (MoeGemmParams::defer_wait)
  grouped::pdl_start(p.defer_wait);
  constexpr int WM = BM / 2;   // tokens per warp
  constexpr int MT = WM / 16;  // m16 blocks per warp
  constexpr int NT = 4;        // n8 blocks per warp (32 weight rows)
  constexpr int kAChunks = BM * 8 / kThreads, kBChunks = kBN * 8 / kThreads;
  constexpr int kAStage = BM * kRowBytes;
  static_assert(MT >= 1 && kAChunks >= 1 && kBChunks == 4);
  extern __shared__ __align__(128) uint8_t smem[];
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp >> 2, wn = warp & 3;
  const int g = lane >> 2, c = lane & 3;
  const int64_t n_blocks = GU ? p.N / 64 : p.N / kBN;
  const int64_t n_items = static_cast<int64_t>(*p.num_tiles) * n_blocks;
  const int64_t ksteps = p.Kd / kBK;
  const uint16_t* act = static_cast<const uint16_t*>(p.act);
  // This thread's copy chunk: column ch of rows crow + 32 i (A: i < kAChunks, B: i < 4).
  const int ch = tid & 7, crow = tid >> 3;

  for (int64_t item = blockIdx.x; item < n_items; item += gridDim.x) {
    const int64_t tile = item / n_blocks, nblk = item % n_blocks;
    const int4 td = reinterpret_cast<const int4*>(p.tiles)[tile];
    const int e = td.x, pos0 = td.y, cnt = td.z;

    const uint16_t* asrc[kAChunks];
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const int tok = min(crow + 32 * i, cnt - 1);
      const int64_t r = GU ? p.sorted_slot[pos0 + tok] / p.K : pos0 + tok;
      asrc[i] = act + r * p.Kd + ch * 8;
    }
    // Weight chunk ch of a row at k-block 0 in either layout (dequant_bits.h); k-block ks is
    // 128 bytes of the row, two layout steps further.
    const uint8_t* bsrc[kBChunks];
#pragma unroll
    for (int i = 0; i < kBChunks; ++i) {
      const int row = crow + 32 * i;
      if constexpr (GU) {  // n8 block b of the CTA: even = gate, odd = up, columns (b/2)*8..
        const int b = row >> 3;
        const int64_t wr = nblk * 64 + (b >> 1) * 8 + (row & 7);
        bsrc[i] = static_cast<const uint8_t*>(p.w[b & 1][e]) +
                  grouped::packed_data_offset(p.packed, p.Kd * 2, wr, ch * 16);
      } else {
        bsrc[i] = static_cast<const uint8_t*>(p.w[0][e]) +
                  grouped::packed_data_offset(p.packed, p.Kd * 2, nblk * kBN + row, ch * 16);
      }
    }
    const int64_t b_kstep = 2 * grouped::packed_data_kstep(p.packed);
    const uint32_t a_dst = swz(crow, ch), b_dst = kAStage + swz(crow, ch);
    auto load_stage = [&](int64_t ks, int stage) {
      const uint32_t base = smem_s + stage * kStageBytes<BM>;
#pragma unroll
      for (int i = 0; i < kAChunks; ++i)
        cp_async16(base + a_dst + i * 32 * kRowBytes, asrc[i] + ks * kBK);
#pragma unroll
      for (int i = 0; i < kBChunks; ++i)
        cp_async16(base + b_dst + i * 32 * kRowBytes, bsrc[i] + ks * b_kstep);
    };

    float acc[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.f;

    __syncthreads();  // every warp is done with the previous item's stages
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < ksteps) load_stage(s, s);
      cp_async_commit();
    }
    // ldmatrix lane addresses: A rows wm*WM + mt*16 + (lane & 15), chunk 2*kk + (lane >> 4);
    // B rows wn*32 + np*16 + (lane & 7) + ((lane >> 4) << 3), chunk 2*kk + ((lane >> 3) & 1).
    const int a_row = wm * WM + (lane & 15), a_ch = lane >> 4;
    const int b_row = wn * 32 + (lane & 7) + ((lane >> 4) << 3), b_ch = (lane >> 3) & 1;

    int stage = 0;
    for (int64_t ks = 0; ks < ksteps; ++ks) {
      cp_async_wait<kStages - 2>();
      __syncthreads();  // stage `stage` is visible to all; the one read last step is free
      {
        const int64_t nk = ks + kStages - 1;
        const int ns = stage == 0 ? kStages - 1 : stage - 1;
        if (nk < ksteps) load_stage(nk, ns);
        cp_async_commit();
      }
      const uint32_t sa = smem_s + stage * kStageBytes<BM>, sb = sa + kAStage;
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        uint32_t af[MT][4], bf[NT / 2][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
          ldmatrix_x4(af[mt], sa + swz(a_row + mt * 16, 2 * kk + a_ch));
#pragma unroll
        for (int np = 0; np < NT / 2; ++np)
          ldmatrix_x4(bf[np], sb + swz(b_row + np * 16, 2 * kk + b_ch));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
            mma_bf16(acc[mt][nt], af[mt], bf[nt >> 1][(nt & 1) * 2], bf[nt >> 1][(nt & 1) * 2 + 1]);
      }
      stage = stage + 1 == kStages ? 0 : stage + 1;
    }
    cp_async_wait<0>();

    // Epilogue. Accumulator (mt, nt, i): token wm*WM + mt*16 + g + 8*(i >= 2), weight row
    // wn*32 + nt*8 + 2c + (i & 1) of the CTA's 128.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int tok = wm * WM + mt * 16 + g + 8 * hh;
        if (tok >= cnt) continue;
        if constexpr (GU) {
          __nv_bfloat16* h = static_cast<__nv_bfloat16*>(p.out) +
                             static_cast<int64_t>(pos0 + tok) * p.N + nblk * 64 + 2 * c;
#pragma unroll
          for (int j = 0; j < NT / 2; ++j) {
            float hv[2];
#pragma unroll
            for (int q = 0; q < 2; ++q) {
              const float gv = acc[mt][2 * j][2 * hh + q], uv = acc[mt][2 * j + 1][2 * hh + q];
              hv[q] = gv / (1.f + __expf(-gv)) * uv;
            }
            *reinterpret_cast<__nv_bfloat162*>(h + (wn * 2 + j) * 8) =
                __floats2bfloat162_rn(hv[0], hv[1]);
          }
        } else {
          const int64_t slot = p.sorted_slot[pos0 + tok];
          const float wv = p.slot_w[slot];
          float* o = static_cast<float*>(p.out) + slot * p.N + nblk * kBN + wn * 32 + 2 * c;
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
            *reinterpret_cast<float2*>(o + nt * 8) =
                make_float2(wv * acc[mt][nt][2 * hh], wv * acc[mt][nt][2 * hh + 1]);
        }
      }
  }
  grouped::pdl_end(p.defer_wait);
}

}  // namespace moe::cuda::tile_gemm
