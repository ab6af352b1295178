// Launchers of the small-M quantized linear (linear_gemv.cuh), its split-K reduction, and the
// f32 -> BF16/F16 row rounding that feeds the cuBLASLt path.
#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/linear/linear_gemv.cuh"

namespace moe::cuda {
namespace {

// Rows of x per CTA: the smallest of 1, 2, 4, 8 that covers M (M > 8: groups of 8).
int gemv_mt(int64_t M) { return M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : 8; }

template <int kFmt, int kMT>
void launch_gemv_mt(const LinearGemvParams& g, bool vec, dim3 grid, Stream stream) {
  if (vec)
    linear_gemv_kernel<kFmt, kMT, true><<<grid, kGemvThreads, 0, stream>>>(g);
  else
    linear_gemv_kernel<kFmt, kMT, false><<<grid, kGemvThreads, 0, stream>>>(g);
}

template <int kFmt>
void launch_gemv_fmt(const LinearGemvParams& g, int mt, bool vec, dim3 grid, Stream stream) {
  switch (mt) {
    case 1:
      return launch_gemv_mt<kFmt, 1>(g, vec, grid, stream);
    case 2:
      return launch_gemv_mt<kFmt, 2>(g, vec, grid, stream);
    case 4:
      return launch_gemv_mt<kFmt, 4>(g, vec, grid, stream);
    case 8:
      return launch_gemv_mt<kFmt, 8>(g, vec, grid, stream);
    default:
      MOE_CHECK(false) << "linear_gemv: " << mt << " rows per CTA (supported: 1, 2, 4, 8)";
  }
}

}  // namespace

bool linear_gemv_supported(const LinearParams& p) {
  if (p.M < 1 || p.M > kLinearGemvMaxM || p.N < 1 || p.K < 1) return false;
  if (p.wt == kWNvfp4) return p.K % 16 == 0;
  if (p.wt == kWFp8Block) return p.w_block > 0 && p.w_block % 16 == 0;
  return false;
}

LinearGemvParams plan_linear_gemv(const LinearParams& p, int sm_count) {
  MOE_CHECK(linear_gemv_supported(p))
      << "linear_gemv: unsupported problem M " << p.M << " wt " << p.wt << " block " << p.w_block;
  LinearGemvParams g;
  g.lin = p;
  const int64_t ctas = ceil_div(p.M, gemv_mt(p.M)) * ceil_div(p.N, kGemvRowsPerCta);
  const int64_t chunks = ceil_div(p.K, kGemvChunk);
  // Aim for >= 3 CTAs per SM (a CTA holds 16 rows x 1 KiB of weights in flight), splitting K
  // when the rows alone are too few; at most 16 splits and never an empty one.
  const int64_t want = std::max<int64_t>(3 * std::max(sm_count, 1), 1);
  int64_t splits = std::clamp<int64_t>(ceil_div(want, ctas), 1, std::min<int64_t>(chunks, 16));
  g.chunks_per_split = ceil_div(chunks, splits);
  g.splits = static_cast<int>(ceil_div(chunks, g.chunks_per_split));
  return g;
}

void launch_linear_gemv(const LinearGemvParams& g, Stream stream) {
  const LinearParams& p = g.lin;
  MOE_CHECK(linear_gemv_supported(p)) << "linear_gemv: unsupported problem";
  MOE_CHECK(g.splits == 1 || g.partial) << "linear_gemv: " << g.splits << " splits, no scratch";
  const int mt = gemv_mt(p.M);
  const int64_t row_blocks = ceil_div(p.N, kGemvRowsPerCta);
  MOE_CHECK(row_blocks <= 65535 && g.splits <= 65535)
      << "linear_gemv: N " << p.N << " gives " << row_blocks << " row blocks";
  const dim3 grid(static_cast<unsigned>(ceil_div(p.M, mt)), static_cast<unsigned>(row_blocks),
                  static_cast<unsigned>(g.splits));
  const uintptr_t w_addr = reinterpret_cast<uintptr_t>(p.w);
  if (p.wt == kWNvfp4) {
    const bool vec = p.K % 32 == 0 && w_addr % 16 == 0;
    launch_gemv_fmt<kWNvfp4>(g, mt, vec, grid, stream);
  } else {
    const bool vec = p.K % 16 == 0 && w_addr % 16 == 0;
    launch_gemv_fmt<kWFp8Block>(g, mt, vec, grid, stream);
  }
  MOE_CUDA_CHECK_LAUNCH("linear (gemv)");
  if (g.splits > 1) {
    const int64_t n = p.M * p.N;
    linear_splitk_reduce_kernel<<<static_cast<unsigned>(ceil_div(n, 256)), 256, 0, stream>>>(g);
    MOE_CUDA_CHECK_LAUNCH("linear (split-K reduce)");
  }
}

void launch_round_rows(const RoundRowsParams& p, Stream stream) {
  const int64_t n = p.M * p.K;
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(ceil_div(n, 256));
  if (p.wt == kWBF16)
    round_rows_kernel<__nv_bfloat16><<<blocks, 256, 0, stream>>>(p);
  else if (p.wt == kWF16)
    round_rows_kernel<__half><<<blocks, 256, 0, stream>>>(p);
  else
    MOE_CHECK(false) << "round_rows: weight type code " << p.wt << " (supported: BF16, F16)";
  MOE_CUDA_CHECK_LAUNCH("linear (round x)");
}

}  // namespace moe::cuda
