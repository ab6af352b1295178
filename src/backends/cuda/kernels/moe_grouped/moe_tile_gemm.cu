// Launchers of the tile GEMMs (sm80_moe_tile_gemm.cuh, sm90_moe_wgmma_gemm.cuh): check shapes and
// alignment and map the token tile (8 * nb), format and row block onto the template instances;
// persistent grids sized from the device's occupancy (moe_grouped_launch.h).
#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_launch.h"
#include "backends/cuda/kernels/moe_grouped/sm80_moe_tile_gemm.cuh"
#include "backends/cuda/kernels/moe_grouped/sm90_moe_wgmma_gemm.cuh"
#include "backends/cuda/kernels/moe_grouped/sm90_moe_wgmma_ws.cuh"

namespace moe::cuda {
namespace {

bool aligned16(const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; }

template <int BM>
void launch_bm(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  auto go = [&](auto k) {
    launch_persistent(
        k, p, tile_gemm::kThreads, grouped_tile_smem_bytes(BM), l.sm_count, l.ctas_per_sm,
        p.gate_up ? "moe_grouped/tile_gate_up" : "moe_grouped/tile_down", stream, l.pdl);
  };
  p.gate_up ? go(tile_gemm::moe_tile_gemm_kernel<BM, true>)
            : go(tile_gemm::moe_tile_gemm_kernel<BM, false>);
}

// A warp-specialized kernel (sm90_moe_wgmma_ws.cuh) over p's items: one CTA per SM, or (PAIRS)
// 2-CTA clusters over moe_group's pair units.
template <bool PAIRS>
void launch_ws(void (*k)(MoeGemmParams), const MoeGemmParams& p, const GroupedLaunch& l,
               Stream stream, const char* name) {
  using namespace wgmma_gemm;
  if constexpr (PAIRS) {
    MOE_CHECK((p.gate_up ? p.N / 128 : p.N / 256) % 2 == 0 && p.N % 256 == 0)
        << name << ": an even number of 256-row n-blocks (N " << p.N << ")";
    MOE_CUDA_CHECK(
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytesWs), name);
    MOE_CHECK(l.sm_count >= 2) << name << ": needs 2 SMs";
    launch_k(k, dim3(l.sm_count / 2 * 2), dim3(kWsThreads), kSmemBytesWs, stream, l.pdl, p);
    MOE_CUDA_CHECK_LAUNCH(name);
  } else {
    launch_persistent(k, p, kWsThreads, kSmemBytesWs, l.sm_count, 1, name, stream, l.pdl);
  }
}

// BF16 with weight tensor maps (GroupedLaunch::bf16_tma; not split-K): the warp-specialized
// kernel's pairs (p.pairs) or single CTAs (bf16_ws) at 256 rows, else the 256-thread kernel.
template <int BN>
void launch_wgmma_bf16_tma(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  using namespace wgmma_gemm;
  constexpr GroupedFmt F = GroupedFmt::kBf16;
  if constexpr (BN == 256) {
    if (p.pairs)
      return launch_ws<true>(
          p.gate_up ? moe_wgmma_bf16pair_kernel<true> : moe_wgmma_bf16pair_kernel<false>, p, l,
          stream,
          p.gate_up ? "moe_grouped/wgmma_bf16pair_gate_up" : "moe_grouped/wgmma_bf16pair_down");
    if (l.bf16_ws >= 1)
      return launch_ws<false>(
          p.gate_up ? moe_wgmma_bf16ws_kernel<true> : moe_wgmma_bf16ws_kernel<false>, p, l, stream,
          p.gate_up ? "moe_grouped/wgmma_bf16ws_gate_up" : "moe_grouped/wgmma_bf16ws_down");
  }
  void (*k)(MoeGemmParams) = moe_wgmma_gemm_kernel<F, BN, false, false, true>;
  if constexpr (BN == 256)
    if (p.gate_up) k = moe_wgmma_gemm_kernel<F, BN, true, false, true>;
  launch_persistent(k, p, kThreads, kSmemBytes<BN> + kTmaBarBytes, l.sm_count, l.ctas_per_sm,
                    p.gate_up ? "moe_grouped/wgmma_gate_up" : "moe_grouped/wgmma_down", stream,
                    l.pdl);
}

// The warpgroup-MMA kernel: 256 weight rows per CTA (gate_up: 128 gate + 128 up, N % 128); down
// takes 128 where D is not a multiple of 256.
template <GroupedFmt F, int BN>
void launch_wgmma_bn(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  if constexpr (F == GroupedFmt::kBf16)
    if (p.tmap != nullptr && p.split_partials == nullptr)  // split-K keeps cp.async
      return launch_wgmma_bf16_tma<BN>(p, l, stream);
  auto go = [&](auto k) {
    launch_persistent(
        k, p, wgmma_gemm::kThreads, wgmma_gemm::kSmemBytes<BN>, l.sm_count, l.ctas_per_sm,
        p.gate_up ? "moe_grouped/wgmma_gate_up" : "moe_grouped/wgmma_down", stream, l.pdl);
  };
  if constexpr (BN == 256) {
    if (p.gate_up && p.split_partials != nullptr)  // split-K (MoeGemmParams::split_partials)
      go(wgmma_gemm::moe_wgmma_gemm_kernel<F, BN, true, false, false, true>);
    else
      p.gate_up ? go(wgmma_gemm::moe_wgmma_gemm_kernel<F, BN, true>)
                : go(wgmma_gemm::moe_wgmma_gemm_kernel<F, BN, false>);
  } else
    go(wgmma_gemm::moe_wgmma_gemm_kernel<F, BN, false>);
}

template <GroupedFmt F>
void launch_wgmma_fmt(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  if (p.gate_up || p.N % 256 == 0) return launch_wgmma_bn<F, 256>(p, l, stream);
  launch_wgmma_bn<F, 128>(p, l, stream);
}

// FP8 weights with FP8 activations (p.act_scale): 256 weight rows per CTA like the F16 kernel
// (gate_up: 128 gate + 128 up, whole 128-row scale blocks), 128 for a down GEMM whose D is not a
// multiple of 256.
// With tensor maps (p.tmap, GroupedLaunch::wgmma_tma) the weights come by TMA, at 256 rows from
// the warp-specialized kernel (GroupedLaunch::wgmma_ws).
// The warp-specialized FP8 kernel (PAIRS: the 2-CTA cluster one) for p's GEMM (gate_up or down)
// and instance (MoeGemmParams::narrow).
template <bool PAIRS>
void (*ws_kernel(const MoeGemmParams& p))(MoeGemmParams) {
  using namespace wgmma_gemm;
  constexpr void (*k[2][2])(MoeGemmParams) = {
      {PAIRS ? moe_wgmma_f8pair_kernel<false, false> : moe_wgmma_f8ws_kernel<false, false>,
       PAIRS ? moe_wgmma_f8pair_kernel<false, true> : moe_wgmma_f8ws_kernel<false, true>},
      {PAIRS ? moe_wgmma_f8pair_kernel<true, false> : moe_wgmma_f8ws_kernel<true, false>,
       PAIRS ? moe_wgmma_f8pair_kernel<true, true> : moe_wgmma_f8ws_kernel<true, true>}};
  if (!PAIRS && p.gate_up && p.split_partials != nullptr)  // split-K (single-CTA gate_up)
    return p.narrow ? moe_wgmma_f8ws_kernel<true, true, true>
                    : moe_wgmma_f8ws_kernel<true, false, true>;
  return k[p.gate_up][p.narrow];
}

template <int BN>
void launch_wgmma_f8_bn(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  using wgmma_gemm::moe_wgmma_gemm_kernel;
  constexpr GroupedFmt F = GroupedFmt::kFp8Block;
  const bool tma = p.tmap != nullptr;
  auto go = [&](auto k) {
    launch_persistent(k, p, wgmma_gemm::kThreads,
                      tma ? wgmma_gemm::kSmemBytesF8Tma<BN> : wgmma_gemm::kSmemBytesF8<BN>,
                      l.sm_count, l.ctas_per_sm,
                      p.gate_up ? "moe_grouped/wgmma_f8_gate_up" : "moe_grouped/wgmma_f8_down",
                      stream, l.pdl);
  };
  if constexpr (BN == 256) {
    if (tma && p.pairs)  // pair units (moe_group): 2-CTA clusters sharing weight tiles
      return launch_ws<true>(
          ws_kernel<true>(p), p, l, stream,
          p.gate_up ? "moe_grouped/wgmma_f8pair_gate_up" : "moe_grouped/wgmma_f8pair_down");
    if (tma && l.wgmma_ws)
      return launch_ws<false>(
          ws_kernel<false>(p), p, l, stream,
          p.gate_up ? "moe_grouped/wgmma_f8ws_gate_up" : "moe_grouped/wgmma_f8ws_down");
    const bool split = p.gate_up && p.split_partials != nullptr;
    if (tma)
      split       ? go(moe_wgmma_gemm_kernel<F, BN, true, true, true, true>)
      : p.gate_up ? go(moe_wgmma_gemm_kernel<F, BN, true, true, true>)
                  : go(moe_wgmma_gemm_kernel<F, BN, false, true, true>);
    else
      split       ? go(moe_wgmma_gemm_kernel<F, BN, true, true, false, true>)
      : p.gate_up ? go(moe_wgmma_gemm_kernel<F, BN, true, true>)
                  : go(moe_wgmma_gemm_kernel<F, BN, false, true>);
  } else {
    tma ? go(moe_wgmma_gemm_kernel<F, BN, false, true, true>)
        : go(moe_wgmma_gemm_kernel<F, BN, false, true>);
  }
}
void launch_wgmma_f8(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  MOE_CHECK(!p.pairs || (p.tmap != nullptr && (p.gate_up || p.N % 256 == 0)))
      << "moe_wgmma_gemm: pair units need tensor maps and 256-row n-blocks (N " << p.N << ")";
  MOE_CHECK(p.Kd % 128 == 0 && p.N % 128 == 0) << "moe_wgmma_gemm (FP8 activations): N " << p.N
                                               << " and K " << p.Kd << " must be multiples of 128";
  if (p.gate_up || p.N % 256 == 0) return launch_wgmma_f8_bn<256>(p, l, stream);
  launch_wgmma_f8_bn<128>(p, l, stream);
}

// NVFP4 weights with FP8 activations (GroupedLaunch::nvfp4_f8): the warp-specialized kernel whose
// producer dequantizes the weights to E4M3 (moe_wgmma_f4ws_kernel), 256 weight rows per CTA.
void launch_wgmma_f4(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  MOE_CHECK(p.Kd % 128 == 0 && (p.gate_up ? p.N % 128 : p.N % 256) == 0)
      << "moe_wgmma_gemm (NVFP4 in FP8): K " << p.Kd << " must be a multiple of 128 and N " << p.N
      << " of " << (p.gate_up ? 128 : 256);
  MOE_CHECK(!p.pairs && p.tmap == nullptr && p.split_partials == nullptr && p.weight_align >= 4)
      << "moe_wgmma_gemm (NVFP4 in FP8): no pairs, tensor maps or split-K, 4-byte aligned scales";
  using wgmma_gemm::moe_wgmma_f4p2_kernel;
  using wgmma_gemm::moe_wgmma_f4ws_kernel;
  constexpr void (*k[2][2])(MoeGemmParams) = {
      {moe_wgmma_f4ws_kernel<false, false>, moe_wgmma_f4ws_kernel<false, true>},
      {moe_wgmma_f4ws_kernel<true, false>, moe_wgmma_f4ws_kernel<true, true>}};
  constexpr void (*k2[2])(MoeGemmParams) = {moe_wgmma_f4p2_kernel<false>,
                                            moe_wgmma_f4p2_kernel<true>};
  launch_persistent(p.f4p2 ? k2[p.gate_up] : k[p.gate_up][p.narrow], p, wgmma_gemm::kWsThreads,
                    p.f4p2 ? wgmma_gemm::kSmemBytesF4P2 : wgmma_gemm::kSmemBytesF4, l.sm_count, 1,
                    p.gate_up ? "moe_grouped/wgmma_f4ws_gate_up" : "moe_grouped/wgmma_f4ws_down",
                    stream, l.pdl);
}

void launch_wgmma(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  MOE_CHECK(8 * l.nb == wgmma_gemm::kBM)
      << "moe_wgmma_gemm: " << 8 * l.nb << "-token tiles (supported: " << wgmma_gemm::kBM << ")";
  MOE_CHECK(!p.gate_up || p.N % 128 == 0)
      << "moe_wgmma_gemm: I " << p.N << " must be a multiple of 128";
  if (p.act_scale != nullptr) {
    if (static_cast<GroupedFmt>(p.fmt) == GroupedFmt::kNvfp4) return launch_wgmma_f4(p, l, stream);
    MOE_CHECK(static_cast<GroupedFmt>(p.fmt) == GroupedFmt::kFp8Block)
        << "moe_wgmma_gemm: FP8 activations need FP8 or NVFP4 weights (format " << p.fmt << ")";
    MOE_CHECK(p.tmap == nullptr || (p.tmap_e > 0 && reinterpret_cast<uintptr_t>(p.tmap) % 64 == 0))
        << "moe_wgmma_gemm: tensor maps must be 64-byte aligned, with their expert count";
    return launch_wgmma_f8(p, l, stream);
  }
  switch (static_cast<GroupedFmt>(p.fmt)) {
    case GroupedFmt::kBf16:
      return launch_wgmma_fmt<GroupedFmt::kBf16>(p, l, stream);
    case GroupedFmt::kFp8Block:
      return launch_wgmma_fmt<GroupedFmt::kFp8Block>(p, l, stream);
    case GroupedFmt::kNvfp4:
      return launch_wgmma_fmt<GroupedFmt::kNvfp4>(p, l, stream);
  }
  MOE_CHECK(false) << "moe_wgmma_gemm: format " << p.fmt;
}

template <GroupedFmt F>
int wgmma_regs() {
  using namespace wgmma_gemm;
  int r = std::max({kernel_regs(moe_wgmma_gemm_kernel<F, 256, true>),
                    kernel_regs(moe_wgmma_gemm_kernel<F, 256, true, false, false, true>),
                    kernel_regs(moe_wgmma_gemm_kernel<F, 256, false>),
                    kernel_regs(moe_wgmma_gemm_kernel<F, 128, false>)});
  if constexpr (F == GroupedFmt::kBf16)  // GroupedLaunch::bf16_tma
    r = std::max({r, kernel_regs(moe_wgmma_gemm_kernel<F, 256, true, false, true>),
                  kernel_regs(moe_wgmma_gemm_kernel<F, 256, false, false, true>),
                  kernel_regs(moe_wgmma_gemm_kernel<F, 128, false, false, true>),
                  kernel_regs(moe_wgmma_bf16ws_kernel<true>),
                  kernel_regs(moe_wgmma_bf16ws_kernel<false>),
                  kernel_regs(moe_wgmma_bf16pair_kernel<true>),
                  kernel_regs(moe_wgmma_bf16pair_kernel<false>)});
  if constexpr (F == GroupedFmt::kFp8Block)
    r = std::max(
        {r, kernel_regs(moe_wgmma_gemm_kernel<F, 256, true, true>),
         kernel_regs(moe_wgmma_gemm_kernel<F, 256, false, true>),
         kernel_regs(moe_wgmma_gemm_kernel<F, 128, false, true>),
         kernel_regs(moe_wgmma_gemm_kernel<F, 256, true, true, true>),
         kernel_regs(moe_wgmma_gemm_kernel<F, 256, true, true, false, true>),
         kernel_regs(moe_wgmma_gemm_kernel<F, 256, true, true, true, true>),
         kernel_regs(moe_wgmma_gemm_kernel<F, 256, false, true, true>),
         kernel_regs(moe_wgmma_gemm_kernel<F, 128, false, true, true>),
         kernel_regs(moe_wgmma_f8ws_kernel<true>), kernel_regs(moe_wgmma_f8ws_kernel<false>),
         kernel_regs(moe_wgmma_f8pair_kernel<true>), kernel_regs(moe_wgmma_f8pair_kernel<false>),
         kernel_regs(moe_wgmma_f8ws_kernel<true, true>),
         kernel_regs(moe_wgmma_f8ws_kernel<false, true>),
         kernel_regs(moe_wgmma_f8pair_kernel<true, true>),
         kernel_regs(moe_wgmma_f8pair_kernel<false, true>),
         kernel_regs(moe_wgmma_f8ws_kernel<true, false, true>),
         kernel_regs(moe_wgmma_f8ws_kernel<true, true, true>)});
  if constexpr (F == GroupedFmt::kNvfp4)
    r = std::max({r, kernel_regs(moe_wgmma_f4ws_kernel<true>),
                  kernel_regs(moe_wgmma_f4ws_kernel<false>),
                  kernel_regs(moe_wgmma_f4ws_kernel<true, true>),
                  kernel_regs(moe_wgmma_f4ws_kernel<false, true>)});
  return r;
}

}  // namespace

int grouped_tile_gemm_regs(GroupedFmt f, const GroupedLaunch& l) {
  if (l.wgmma) {
    switch (f) {
      case GroupedFmt::kBf16:
        return wgmma_regs<GroupedFmt::kBf16>();
      case GroupedFmt::kFp8Block:
        return wgmma_regs<GroupedFmt::kFp8Block>();
      case GroupedFmt::kNvfp4:
        return wgmma_regs<GroupedFmt::kNvfp4>();
    }
    MOE_CHECK(false) << "moe_wgmma_gemm: format " << static_cast<int>(f);
  }
  MOE_CHECK(f == GroupedFmt::kBf16) << "moe_tile_gemm: format " << static_cast<int>(f)
                                    << " (supported: BF16; FP8 and NVFP4 with wgmma)";
  using namespace tile_gemm;
  return 8 * l.nb == 64 ? std::max(kernel_regs(moe_tile_gemm_kernel<64, true>),
                                   kernel_regs(moe_tile_gemm_kernel<64, false>))
                        : std::max(kernel_regs(moe_tile_gemm_kernel<128, true>),
                                   kernel_regs(moe_tile_gemm_kernel<128, false>));
}

void launch_moe_tile_gemm(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  MOE_CHECK(l.wgmma || static_cast<GroupedFmt>(p.fmt) == GroupedFmt::kBf16)
      << "moe_tile_gemm: format " << p.fmt << " (supported: BF16; FP8 and NVFP4 with wgmma)";
  const int64_t nmul = p.gate_up ? 64 : tile_gemm::kBN;
  MOE_CHECK(p.N % nmul == 0 && p.Kd % kGroupedTileK == 0)
      << "moe_tile_gemm: N " << p.N << " must be a multiple of " << nmul << " and K " << p.Kd
      << " of " << kGroupedTileK;
  bool ok = aligned16(p.act) && aligned16(p.out);
  for (int m = 0; m < (p.gate_up ? 2 : 1); ++m)
    for (int e = 0; e < kMaxGroupedExperts && p.w[m][e] != nullptr; ++e)
      ok = ok && aligned16(p.w[m][e]);
  MOE_CHECK(ok) << "moe_tile_gemm: activations, outputs and weights must be 16-byte aligned";
  if (l.wgmma) return launch_wgmma(p, l, stream);
  switch (8 * l.nb) {
    case 64:
      return launch_bm<64>(p, l, stream);
    case 128:
      return launch_bm<128>(p, l, stream);
    default:
      MOE_CHECK(false) << "moe_tile_gemm: " << 8 * l.nb << "-token tiles (supported: 64, 128)";
  }
}

}  // namespace moe::cuda
