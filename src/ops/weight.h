// Weight: a matrix as the checkpoint stores it, dense or block-quantized. Ops that take weights
// (linear, moe_experts) accept every format; backends may dequantize in registers (cuda) or per
// row (reference). Formats: glm5-model.md §4 and docs/formats.md.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace moe::ops {

enum class WeightFormat : uint8_t {
  kDense,     // data [N, K] BF16 / F16 / F32
  kFp8Block,  // data [N, K] F8_E4M3; scale [ceil(N/block), ceil(K/block)] F32 (weight_scale_inv):
              // W[n, k] = fp8(data[n, k]) * scale[n / block, k / block]
  kNvfp4,     // data [N, K/2] U8, two E2M1 codes per byte, low nibble = even k;
              // scale [N, K/16] F8_E4M3 (weight_scale); W = e2m1 * fp8(scale) * global_scale
};

// Arrangement of a quantized weight's data and scale bytes in memory (the tensors keep the
// shapes above either way).
enum class WeightLayout : uint8_t {
  kRowMajor,  // as the checkpoint stores them
  kPacked,    // data (and kNvfp4 scales) permuted into blocks of 16 rows x 64 bytes in mma lane
              // order (N % 16 == 0, row bytes % 64 == 0), made by the cuda backend's
              // prepare_experts for its grouped MoE kernels; only those read it, every other op
              // refuses it (backends/cuda/kernels/moe_grouped/dequant_bits.h)
};

struct Weight {
  WeightFormat format = WeightFormat::kDense;
  ConstTensorView data;
  ConstTensorView scale;  // empty for kDense
  WeightLayout layout = WeightLayout::kRowMajor;
  int64_t block = 128;       // kFp8Block: block edge
  float global_scale = 1.f;  // kNvfp4: weight_scale_2
  float input_scale = 1.f;   // kNvfp4: input_scale (W4A4 activation scale; W4A16 ignores it)

  Weight() = default;
  Weight(ConstTensorView dense) : data(dense) {}  // NOLINT: a dense matrix is a Weight

  int64_t rows() const { return data.dim(0); }  // N (output features)
  int64_t cols() const {                        // K (input features)
    return format == WeightFormat::kNvfp4 ? data.dim(1) * 2 : data.dim(1);
  }
};

}  // namespace moe::ops
