// Launchers of the grouped routed-expert kernels: one switch maps (format, tokens per tile,
// gate_up/down) onto the template instances; grids are persistent and sized from the device.
#include <algorithm>
#include <cmath>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/moe_grouped/moe_group_kernels.cuh"
#include "backends/cuda/kernels/moe_grouped/moe_grouped.cuh"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_launch.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_rules.h"

namespace moe::cuda {

bool grouped_pipe_bulk(const MoeGemmParams& p, const GroupedLaunch& l) {
  // NOTE: measured on the H200 (2026-11-30, glm5 / dsv3 NVFP4, 8 warps x 2 CTAs per SM): with
  // 8-token tiles the bulk copies lose to per-lane cp.async (T 8 / 64: 69.8 / 74.7% against
  // 75.4 / 80.0% of 4.8 TB/s), with 16-token tiles they win (T 256: 62.3% against 57.4-59.5%;
  // the lanes' copy instructions go to the dequantization instead). With 16-token tiles the
  // per-lane two-step stages come first where the launch has them (grouped_pipe_two_step).
  return l.nb >= 2 && static_cast<GroupedFmt>(p.fmt) == GroupedFmt::kNvfp4 && p.packed &&
         l.cc >= 90 && p.weight_align >= 16;
}

double grouped_expected_tiles(int64_t T, int64_t K, int64_t E, bool shared, int tile_tokens) {
  const int64_t er = E - (shared ? 1 : 0), kr = K - (shared ? 1 : 0);
  double tiles = shared ? static_cast<double>((T + tile_tokens - 1) / tile_tokens) : 0.0;
  if (er <= 0 || kr <= 0 || T <= 0) return tiles;
  const double q = std::min(1.0, static_cast<double>(kr) / static_cast<double>(er));
  const double mean = static_cast<double>(T) * q;
  if (q >= 1.0 || mean > 200.0)  // many tokens per expert: ceil(n / t) ~ n / t + 1/2
    return tiles + static_cast<double>(er) * (mean / tile_tokens + 0.5);
  // Binomial pmf by its recurrence from P(0) = (1 - q)^T (mean <= 200: no underflow to 0 before
  // the mass, log-space start).
  double pmf = std::exp(static_cast<double>(T) * std::log1p(-q)), per = 0.0, mass = 0.0;
  for (int64_t n = 0; n <= T && mass < 1.0 - 1e-12; ++n) {
    per += pmf * static_cast<double>((n + tile_tokens - 1) / tile_tokens);
    mass += pmf;
    pmf *= static_cast<double>(T - n) / static_cast<double>(n + 1) * q / (1.0 - q);
  }
  return tiles + static_cast<double>(er) * per;
}

bool grouped_pipe_r2(const GroupedLaunch& l, GroupedFmt f, int64_t N, bool gate_up,
                     double expected_tiles) {
  const int64_t rows2 = grouped_pipe_r2_rows(gate_up);
  if (!grouped_pipe_r2_kernel(l, f) || N % rows2 != 0) return false;
  if (gate_up && l.pipe_two_step) return false;
  const double warps = static_cast<double>(l.sm_count) * l.ctas_per_sm * l.warps_per_cta;
  return expected_tiles * static_cast<double>(N / rows2) >= kGroupedPipeR2MinRounds * warps;
}

namespace {

// The cp.async pipeline copies nvfp4 scales in 4-byte words: every scale matrix must be 4-byte
// aligned (rows are Kd/16 bytes, a multiple of 8); otherwise the register-streaming kernel runs.
bool pipe_aligned(const MoeGemmParams& p) {
  return static_cast<GroupedFmt>(p.fmt) != GroupedFmt::kNvfp4 || p.weight_align >= 4;
}

// fn(kernel, dynamic shared memory bytes) with the GEMM instance for (F, NB), gate_up or down,
// the cp.async ring or register streaming (64-token tiles always stream) and, for the NVFP4 ring
// with 16-token tiles or wider, bulk copies: the one map from a launch's choices to a kernel, for
// the launcher and for grouped_gemm_regs.
// r2: the NVFP4 ring's items of two sub-blocks (nb 1, GroupedLaunch::pipe_r2); two_step: its
// stages of two k-steps (nb 1 or 2, packed, not r2: grouped_pipe_two_step; taken over bulk).
template <GroupedFmt F, int NB, typename Fn>
void with_gemm_kernel(bool gate_up, bool pipe, bool bulk, bool r2, bool two_step, int warps_per_cta,
                      Fn&& fn, bool dyn = false) {
  using namespace grouped;
  if constexpr (NB != 8) {
    if (pipe) {
      const int smem = warps_per_cta * grouped_pipe_warp_bytes(F, false);
      const int smem_bulk = warps_per_cta * grouped_pipe_warp_bytes(F, true);
      if constexpr (F == GroupedFmt::kNvfp4 && NB == 1)
        if (r2)
          return gate_up ? fn(moe_gemm_pipe_kernel<F, NB, true, false, 2>, smem)
                         : fn(moe_gemm_pipe_kernel<F, NB, false, false, 2>, smem);
      if constexpr (F == GroupedFmt::kNvfp4 && NB == 1)
        if (two_step && dyn)
          return gate_up ? fn(moe_gemm_pipe_kernel<F, NB, true, false, 1, 2, true>, smem)
                         : fn(moe_gemm_pipe_kernel<F, NB, false, false, 1, 2, true>, smem);
      if constexpr (F == GroupedFmt::kNvfp4 && NB <= 2)
        if (two_step)  // (nb 2: before the bulk copies, per-lane two-step stages win there too)
          return gate_up ? fn(moe_gemm_pipe_kernel<F, NB, true, false, 1, 2>, smem)
                         : fn(moe_gemm_pipe_kernel<F, NB, false, false, 1, 2>, smem);
      if constexpr (F == GroupedFmt::kNvfp4 && NB >= 2)
        if (bulk)
          return gate_up ? fn(moe_gemm_pipe_kernel<F, NB, true, true>, smem_bulk)
                         : fn(moe_gemm_pipe_kernel<F, NB, false, true>, smem_bulk);
      return gate_up ? fn(moe_gemm_pipe_kernel<F, NB, true>, smem)
                     : fn(moe_gemm_pipe_kernel<F, NB, false>, smem);
    }
  }
  gate_up ? fn(moe_gemm_kernel<F, NB, true>, 0) : fn(moe_gemm_kernel<F, NB, false>, 0);
}

template <GroupedFmt F, int NB>
void launch_gemm_nb(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  const int threads = l.warps_per_cta * 32;
  MOE_CHECK(threads >= 32 && threads <= grouped::kGemmMaxThreads)
      << "moe_gemm: " << l.warps_per_cta << " warps per CTA (supported: 1.."
      << grouped::kGemmMaxThreads / 32 << ")";
  const char* name = p.gate_up ? "moe_grouped/gate_up" : "moe_grouped/down";
  const bool pipe = NB != 8 && l.pipelined && pipe_aligned(p);
  MOE_CHECK(!pipe || (p.sk_partials != nullptr && p.sk_counters != nullptr))
      << name << ": the pipelined kernel needs its stream-K workspace (grouped_sk_sizes)";
  const bool r2 = l.pipe_r2 == 1 && p.N % grouped_pipe_r2_rows(p.gate_up) == 0;
  const bool two_step = grouped_pipe_two_step(l, F, p.packed, r2);
  with_gemm_kernel<F, NB>(
      p.gate_up, pipe, grouped_pipe_bulk(p, l), r2, two_step, l.warps_per_cta,
      [&](auto k, int smem) {
        launch_persistent(k, p, threads, smem, l.sm_count, l.ctas_per_sm, name, stream, l.pdl);
      },
      p.sk_claim != nullptr);
}

// fn.template operator()<F, NB>() for format f and nb mma column blocks (the instances exist for
// nb 1, 2, 4; 8 for BF16).
template <typename Fn>
void with_gemm_instance(GroupedFmt f, int nb, Fn&& fn) {
  auto by_nb = [&]<GroupedFmt F>() {
    switch (nb) {
      case 1:
        return fn.template operator()<F, 1>();
      case 2:
        return fn.template operator()<F, 2>();
      case 4:
        return fn.template operator()<F, 4>();
      case 8:
        if constexpr (F == GroupedFmt::kBf16) return fn.template operator()<F, 8>();
        [[fallthrough]];
      default:
        MOE_CHECK(false) << "moe_gemm: " << nb
                         << " mma column blocks (supported: 1, 2, 4; 8 for BF16)";
    }
  };
  switch (f) {
    case GroupedFmt::kBf16:
      return by_nb.template operator()<GroupedFmt::kBf16>();
    case GroupedFmt::kFp8Block:
      return by_nb.template operator()<GroupedFmt::kFp8Block>();
    case GroupedFmt::kNvfp4:
      return by_nb.template operator()<GroupedFmt::kNvfp4>();
  }
  MOE_CHECK(false) << "moe_gemm: format " << static_cast<int>(f)
                   << " (supported: BF16, FP8 block, NVFP4)";
}

}  // namespace

int64_t grouped_k_multiple(GroupedFmt f) {
  switch (f) {
    case GroupedFmt::kBf16:  // 32 would do; 128 keeps tiny test models on the f32 path
    case GroupedFmt::kFp8Block:
      return 128;  // whole scale blocks
    case GroupedFmt::kNvfp4:
      return grouped::Fmt<GroupedFmt::kNvfp4>::kStepK;
  }
  return 128;
}

GroupedSkSizes grouped_sk_sizes(const GroupedLaunch& l) {
  GroupedSkSizes z;
  if (!l.pipelined || l.tc || l.nb >= 8) return z;
  // The grid has at most sm_count * ctas_per_sm CTAs (fewer when occupancy is lower).
  z.warps = static_cast<int64_t>(l.sm_count) * l.ctas_per_sm * l.warps_per_cta;
  // 2 slots x lanes x accumulators (2 matrices x nb x 4; twice that with nb 1 for the NVFP4
  // ring's items of two sub-blocks, GroupedLaunch::pipe_r2)
  z.partial_floats = z.warps * 2 * 32 * (2 * l.nb * 4) * (l.nb == 1 ? 2 : 1);
  return z;
}

namespace {
void check_pack(uint8_t* dst, const uint8_t* src, int64_t n, const char* what) {
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  MOE_CHECK(d + n <= s || s + n <= d) << what << ": dst and src overlap";
}
}  // namespace

void launch_pack_data(uint8_t* dst, const uint8_t* src, int64_t N, int64_t row_bytes,
                      Stream stream) {
  MOE_CHECK(N > 0 && N % 16 == 0 && row_bytes > 0 && row_bytes % 64 == 0)
      << "pack_data: " << N << " rows of " << row_bytes
      << " bytes (needs N % 16 == 0, row bytes % 64 == 0)";
  check_pack(dst, src, N * row_bytes, "pack_data");
  MOE_CHECK(reinterpret_cast<uintptr_t>(dst) % 16 == 0 &&
            reinterpret_cast<uintptr_t>(src) % 16 == 0)
      << "pack_data: needs 16-byte aligned buffers";
  const int64_t units = N * row_bytes / 16;
  const int64_t blocks = std::clamp<int64_t>((units + 255) / 256, 1, 4096);
  grouped::pack_data_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(dst, src, N,
                                                                               row_bytes);
  MOE_CUDA_CHECK_LAUNCH("moe_grouped/pack_data");
}

void launch_nvfp4_pack_scales(uint8_t* dst, const uint8_t* src, int64_t N, int64_t Kd,
                              Stream stream) {
  MOE_CHECK(N > 0 && N % 16 == 0 && Kd > 0 && Kd % 128 == 0)
      << "nvfp4_pack_scales: [" << N << ", " << Kd << "] (needs N % 16 == 0, Kd % 128 == 0)";
  const int64_t n = N * Kd / 16;
  check_pack(dst, src, n, "nvfp4_pack_scales");
  const int64_t blocks = std::clamp<int64_t>((n + 255) / 256, 1, 4096);
  grouped::nvfp4_pack_scales_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(dst, src, N,
                                                                                       Kd);
  MOE_CUDA_CHECK_LAUNCH("moe_grouped/nvfp4_pack_scales");
}

void launch_moe_group(const MoeGroupParams& p, Stream stream, bool pdl, int64_t ring_smem) {
  MOE_CHECK(p.E >= 1 && p.E <= kMaxGroupedExperts && p.E <= grouped::kGroupThreads)
      << "moe_group: " << p.E << " experts (supported: 1.." << kMaxGroupedExperts << ")";
  MOE_CHECK(p.zero_count == 0 || p.zero != nullptr) << "moe_group: zero_count without a buffer";
  MOE_CHECK(p.zero2_count == 0 || p.zero2 != nullptr) << "moe_group: zero2_count without a buffer";
  MOE_CHECK(p.T >= 0 && p.K >= 1 && p.T * p.K < (int64_t{1} << 31))
      << "moe_group: " << p.T << " tokens x " << p.K << " slots (at most 2^31 - 1 slots)";
  MOE_CHECK(p.T * p.D / 8 < (int64_t{1} << 31))
      << "moe_group: " << p.T << " tokens x D " << p.D << " (at most 2^34 values)";
  MOE_CHECK(p.D % 8 == 0 && p.x_stride % 4 == 0 && reinterpret_cast<uintptr_t>(p.x) % 16 == 0)
      << "moe_group: x needs D % 8 == 0 and 16-byte aligned rows (D " << p.D << ", stride "
      << p.x_stride << ")";
  MOE_CHECK(p.xq == nullptr ||
            (p.D % 128 == 0 && p.xq_scale != nullptr && reinterpret_cast<uintptr_t>(p.xq) % 8 == 0))
      << "moe_group: FP8 activations need D % 128 == 0 (D " << p.D
      << "), scales and 8-byte aligned codes";
  MOE_CHECK(!p.one_warp ||
            (p.T * p.K <= 32 && !p.pair_units && (p.big_min <= 0 || p.big_min > p.T * p.K)))
      << "moe_group: the one-warp grouping takes at most 32 slots, no pair units and no big tiles";
  MOE_CHECK(p.big_tile == kGroupedBigTile || p.big_tile == kGroupedF4p2Tile)
      << "moe_group: big tiles of " << p.big_tile
      << " tokens (128, or 64 for the F4 two-producer kernel)";
  MOE_CHECK(p.big2_min <= 0 || (p.big_min > 0 && p.big_tile == kGroupedF4p2Tile &&
                                p.big2_tiles != nullptr && p.num_big2 != nullptr))
      << "moe_group: a third list (big2_min " << p.big2_min
      << ") needs big tiles of 64 tokens (big_min " << p.big_min << ", big_tile " << p.big_tile
      << ") and its list and count";
  MOE_CHECK(!p.pair_units || (p.tile_tokens == 128 && p.big_min == 0))
      << "moe_group: pair units need 128-token tiles and no big tiles (tile_tokens "
      << p.tile_tokens << ", big_min " << p.big_min << ")";
  const int64_t units = p.T * p.D / 8;
  const int64_t conv_blocks =
      std::clamp<int64_t>((units + grouped::kGroupThreads - 1) / grouped::kGroupThreads, 1, 1024);
  MoeGroupParams q = p;
  const int64_t need = grouped_group_scratch_bytes(p.T * p.K, p.E);
  q.chunks = need > 0 && p.chunk_hist != nullptr && p.chunk_hist_bytes >= need
                 ? static_cast<int>(need / (4 * p.E))
                 : 0;
  if (q.chunks > 0) {
    launch_k(grouped::moe_group_count_kernel, dim3(q.chunks), dim3(grouped::kGroupThreads), 0,
             stream, pdl, q);
    MOE_CUDA_CHECK_LAUNCH("moe_grouped/group_count");
  }
  // GroupedLaunch::group_yields: a carveout (percent of the SM's most, rounded up to a size the
  // SM has) that holds one block of this kernel beside the ring's CTAs.
  int pct = -1;
  if (ring_smem > 0) {
    int dev = 0, smem_sm = 0;
    MOE_CUDA_CHECK(cudaGetDevice(&dev), "moe_grouped/group");
    MOE_CUDA_CHECK(
        cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev),
        "moe_grouped/group");
    // (the kernel's static shared memory: the same on every device of a build, looked up once)
    static const int64_t group_static =
        kernel_attributes(grouped::moe_group_kernel).sharedSizeBytes;
    if (smem_sm > 0)
      pct = static_cast<int>(std::min<int64_t>(
          100, ((ring_smem + group_static + 1024) * 100 + smem_sm - 1) / smem_sm));
  }
  launch_k_carveout(grouped::moe_group_kernel, dim3(static_cast<unsigned>(1 + conv_blocks)),
                    dim3(grouped::kGroupThreads), 0, stream, pdl, pct, q);
  MOE_CUDA_CHECK_LAUNCH("moe_grouped/group");
  if (q.chunks > 0) {
    launch_k(grouped::moe_group_place_kernel, dim3(q.chunks), dim3(grouped::kGroupThreads), 0,
             stream, pdl, q);
    MOE_CUDA_CHECK_LAUNCH("moe_grouped/group_place");
  }
}

int64_t grouped_group_scratch_bytes(int64_t TK, int64_t E) {
  if (TK <= grouped::kGroupMultiBlockSlots) return 0;
  return (TK + grouped::kGroupChunkSlots - 1) / grouped::kGroupChunkSlots * E * 4;
}

int64_t grouped_fp8_act_data_bytes(int64_t T, int64_t D, int64_t I, int64_t KS) {
  return (std::max(T * D, T * KS * I) + 15) / 16 * 16;
}

int64_t grouped_fp8_h_offset(int64_t T, int64_t D, int64_t I, int64_t KS) {
  return grouped_fp8_act_data_bytes(T, D, I, KS) +
         (std::max(T * D, T * KS * I) / 128 * 4 + 15) / 16 * 16;
}

int64_t grouped_fp8_act_bytes(const GroupedLaunch& l, GroupedFmt f, int64_t T, int64_t D, int64_t I,
                              int64_t KS) {
  const bool wgmma = l.wgmma || grouped_hybrid(l, T);
  // NVFP4 in FP8: the warp-specialized kernel's 256-row CTAs (down: D % 256 == 0), no split-K
  // (the hybrid keeps its F16 kernel where it splits gate_up).
  const bool fmt =
      f == GroupedFmt::kFp8Block || (f == GroupedFmt::kNvfp4 && l.nvfp4_f8 && D % 256 == 0 &&
                                     (l.wgmma || !grouped_hybrid_split_k(l, f, T, I)));
  if (!l.fp8_act || !fmt || !wgmma || T <= 0) return 0;
  if (!l.wgmma && l.wgmma_hquant)  // the hybrid's fused h codes and scales after x's region
    return grouped_fp8_h_offset(T, D, I, KS) + (T * KS * I + 15) / 16 * 16 + T * KS * I / 128 * 4;
  return grouped_fp8_act_data_bytes(T, D, I, KS) + std::max(T * D, T * KS * I) / 128 * 4;
}

void launch_moe_quant_rows(const void* h, int64_t I, const int32_t* tiles, const int32_t* num_tiles,
                           int64_t max_tiles, uint8_t* q, float* qs, int sm_count, Stream stream,
                           bool pdl) {
  MOE_CHECK(I > 0 && I % 128 == 0) << "moe_quant_rows: I " << I << " (needs I % 128 == 0)";
  MOE_CHECK(reinterpret_cast<uintptr_t>(h) % 16 == 0 && reinterpret_cast<uintptr_t>(q) % 16 == 0 &&
            reinterpret_cast<uintptr_t>(qs) % 4 == 0)
      << "moe_quant_rows: needs 16-byte aligned h and q, 4-byte aligned scales";
  const int64_t blocks =
      std::clamp<int64_t>(max_tiles * grouped::kQuantRowsUnits, 1, 8 * std::max(sm_count, 1));
  launch_k(grouped::moe_quant_rows_kernel, dim3(static_cast<unsigned>(blocks)), dim3(256), 0,
           stream, pdl, static_cast<const uint16_t*>(h), I, tiles, num_tiles, q, qs);
  MOE_CUDA_CHECK_LAUNCH("moe_grouped/quant_rows");
}

void launch_moe_x_pos(const uint8_t* xq, const int32_t* sorted_slot, int64_t rows, int K, int64_t D,
                      uint8_t* xs, int sm_count, Stream stream, bool pdl) {
  MOE_CHECK(D % 16 == 0 && reinterpret_cast<uintptr_t>(xq) % 16 == 0 &&
            reinterpret_cast<uintptr_t>(xs) % 16 == 0)
      << "moe_x_pos: needs D % 16 == 0 and 16-byte aligned codes";
  const int64_t blocks =
      std::clamp<int64_t>((rows * (D / 16) + 255) / 256, 1, 8 * std::max(sm_count, 1));
  launch_k(grouped::moe_x_pos_kernel, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream,
           pdl, reinterpret_cast<const uint4*>(xq), sorted_slot, rows, K, D / 16,
           reinterpret_cast<uint4*>(xs));
  MOE_CUDA_CHECK_LAUNCH("moe_grouped/x_pos");
}

void launch_moe_x_pos_scatter(const uint8_t* xq, const int32_t* slot_pos, int64_t T, int K,
                              int64_t D, uint8_t* xs, int sm_count, Stream stream, bool pdl) {
  MOE_CHECK(D % 16 == 0 && reinterpret_cast<uintptr_t>(xq) % 16 == 0 &&
            reinterpret_cast<uintptr_t>(xs) % 16 == 0)
      << "moe_x_pos_scatter: needs D % 16 == 0 and 16-byte aligned codes";
  const int64_t blocks =
      std::clamp<int64_t>((T * (D / 16) + 255) / 256, 1, 8 * std::max(sm_count, 1));
  launch_k(grouped::moe_x_pos_scatter_kernel, dim3(static_cast<unsigned>(blocks)), dim3(256), 0,
           stream, pdl, reinterpret_cast<const uint4*>(xq), slot_pos, T, K, T * K, D / 16,
           reinterpret_cast<uint4*>(xs));
  MOE_CUDA_CHECK_LAUNCH("moe_grouped/x_pos_scatter");
}

void launch_moe_gemm(const MoeGemmParams& p, const GroupedLaunch& l, Stream stream) {
  if (l.tc) return launch_moe_tile_gemm(p, l, stream);
  const int64_t rows = p.gate_up ? 16 : 32;
  MOE_CHECK(p.N % rows == 0 && p.Kd % grouped_k_multiple(static_cast<GroupedFmt>(p.fmt)) == 0)
      << "moe_gemm: N " << p.N << " must be a multiple of " << rows << " and K " << p.Kd << " of "
      << grouped_k_multiple(static_cast<GroupedFmt>(p.fmt));
  with_gemm_instance(static_cast<GroupedFmt>(p.fmt), l.nb,
                     [&]<GroupedFmt F, int NB>() { launch_gemm_nb<F, NB>(p, l, stream); });
}

namespace {
// The largest attr(kernel) over the GEMM kernels launch `l` may run for format `f`: gate_up and
// down, both copy variants, items of one or two sub-blocks (pipe_r2 is chosen per call), stages
// of one or two k-steps (by the weights' layout).
template <typename Attr>
int max_over_gemm_kernels(GroupedFmt f, const GroupedLaunch& l, Attr&& attr) {
  int v = 0;
  with_gemm_instance(f, l.nb, [&]<GroupedFmt F, int NB>() {
    for (bool gate_up : {true, false})
      for (bool bulk : {false, true})
        for (bool r2 : {false, true})
          for (bool two_step : {false, true})
            with_gemm_kernel<F, NB>(gate_up, l.pipelined, bulk, r2, two_step, l.warps_per_cta,
                                    [&](auto k, int) { v = std::max(v, attr(k)); });
  });
  return v;
}
}  // namespace

int grouped_gemm_regs(GroupedFmt f, const GroupedLaunch& l) {
  if (l.tc) return grouped_tile_gemm_regs(f, l);
  return max_over_gemm_kernels(f, l, [](auto k) { return kernel_regs(k); });
}

int grouped_gemm_static_smem(GroupedFmt f, const GroupedLaunch& l) {
  MOE_CHECK(!l.tc) << "grouped_gemm_static_smem: streaming and ring kernels only";
  return max_over_gemm_kernels(
      f, l, [](auto k) { return static_cast<int>(kernel_attributes(k).sharedSizeBytes); });
}

void launch_moe_combine(float* y, int64_t y_stride, const void* out, bool out_bf16,
                        const int32_t* ids, int64_t ids_stride, int64_t T, int64_t D, int64_t K,
                        int64_t E, bool shared, bool accumulate, Stream stream, bool pdl) {
  MOE_CHECK(D % 4 == 0 && y_stride % 4 == 0) << "moe_combine: D " << D << ", y stride " << y_stride;
  const int64_t n = T * D / 4;
  const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>((n + 255) / 256, 1, 4096));
  auto go = [&](auto k) {
    launch_k(k, dim3(blocks), dim3(256), 0, stream, pdl, y, y_stride, out, ids, ids_stride, T, D, K,
             E, shared, accumulate);
  };
  out_bf16 ? go(grouped::moe_combine_kernel<true>) : go(grouped::moe_combine_kernel<false>);
  MOE_CUDA_CHECK_LAUNCH("moe_grouped/combine");
}

}  // namespace moe::cuda
