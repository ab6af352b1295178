// Projection y = x · w^T with f32 activations and weights in any ops::WeightFormat (dense
// f32/bf16/f16, FP8 block, NVFP4: W8A16 / W4A16, dequantized in the kernel), f32 accumulation.
// Kernels here: the tile GEMM (any problem), the small-M FP8 / NVFP4 kernel, and the x rounding
// for the cuBLASLt path (CudaOps::linear picks; cublaslt_gemm.h runs the dense BF16/F16 GEMM).
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

struct LinearParams {
  float* y = nullptr;  // [M, N], row stride y_stride
  int64_t y_stride = 0;
  const float* x = nullptr;  // [M, K], row stride x_stride
  int64_t x_stride = 0;
  const void* w = nullptr;        // [N, K] contiguous, dtype wt (NVFP4: [N, K/2] packed codes)
  int wt = kWF32;                 // WType
  const void* w_scale = nullptr;  // FP8 block: [ceil(N/block), ceil(K/block)] f32;
                                  // NVFP4: [N, K/16] F8_E4M3
  int64_t w_block = 128;          // FP8 block edge
  float w_global_scale = 1.f;     // NVFP4 weight_scale_2
  int64_t M = 0, N = 0, K = 0;
};

// The 64x64 SIMT tile kernel (linear.cuh): every weight format, any M.
void launch_linear(const LinearParams& p, Stream stream);

// Small-M path for FP8 block and NVFP4 weights (linear_gemv.cuh): each weight row streamed once
// with 16-byte loads, up to kLinearGemvMaxM rows of x. Split-K over grid.z when the output rows
// alone give too few CTAs, partial sums reduced in a fixed order (deterministic).
constexpr int64_t kLinearGemvMaxM = 16;
struct LinearGemvParams {
  LinearParams lin;
  float* partial = nullptr;  // [splits, M, N] f32 scratch when splits > 1
  int splits = 1;
  int64_t chunks_per_split = 0;  // K chunks (kGemvChunk wide) per split
};
// Whether the small-M path takes `p` (format, M <= kLinearGemvMaxM, FP8 block edge % 16 == 0).
bool linear_gemv_supported(const LinearParams& p);
// Splits for `p` on a device with `sm_count` SMs; partial_floats() says the scratch it needs.
LinearGemvParams plan_linear_gemv(const LinearParams& p, int sm_count);
inline int64_t partial_floats(const LinearGemvParams& g) {
  return g.splits > 1 ? g.splits * g.lin.M * g.lin.N : 0;
}
void launch_linear_gemv(const LinearGemvParams& g, Stream stream);

// dst [M, K] (row stride dst_stride, dtype wt: BF16 or F16) = x [M, K] f32 rounded to nearest
// even: the activation operand of the cuBLASLt path.
struct RoundRowsParams {
  void* dst = nullptr;
  int64_t dst_stride = 0;
  const float* x = nullptr;
  int64_t x_stride = 0;
  int wt = kWBF16;
  int64_t M = 0, K = 0;
};
void launch_round_rows(const RoundRowsParams& p, Stream stream);

// Rows [n0, n0 + rows) of an FP8 block / NVFP4 weight dequantized into dst [rows, K] BF16
// (linear_dequant.cu): the weight operand of the cuBLASLt path for quantized weights at larger
// M. NVFP4 rows are exact and exclude weight_scale_2 (the GEMM's alpha); FP8 rows are rounded.
struct DequantRowsParams {
  LinearParams lin;
  void* dst = nullptr;
  int64_t n0 = 0, rows = 0;
};
// Format NVFP4, or FP8 block with a block edge that is a multiple of 8; K % 128 == 0.
bool linear_dequant_supported(const LinearParams& p);
void launch_dequant_rows(const DequantRowsParams& d, Stream stream);

}  // namespace moe::cuda
