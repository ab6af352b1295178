// Dequantization of FP8 block / NVFP4 weight rows into BF16 scratch: the weight operand of the
// cuBLASLt path for quantized weights at M above the small-M kernel's range (linear.h).
// NVFP4: e2m1 * fp8(scale) is exact in BF16 (at most 2 + 4 significant bits, exponents within
// range); weight_scale_2 is applied as the GEMM's alpha. FP8 block: fp8(q) * scale_inv rounded
// to nearest even BF16 (8 significant bits: relative error <= 2^-9 per weight).
#include <cuda_bf16.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/linear/linear.h"
#include "backends/cuda/kernels/quant_weight.cuh"

namespace moe::cuda {
namespace {

constexpr int kDequantThreads = 256;
constexpr int kDequantVec = 8;  // weights per thread: one 16-byte BF16 store

__global__ void __launch_bounds__(kDequantThreads) dequant_rows_kernel(const DequantRowsParams d) {
  const LinearParams& p = d.lin;
  const int64_t groups = p.K / kDequantVec;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * kDequantThreads + threadIdx.x;
  if (g >= d.rows * groups) return;
  const int64_t r = g / groups, n = d.n0 + r, k0 = (g % groups) * kDequantVec;
  alignas(16) __nv_bfloat16 out[kDequantVec];
  if (p.wt == kWNvfp4) {
    const uint32_t codes = *reinterpret_cast<const uint32_t*>(static_cast<const uint8_t*>(p.w) +
                                                              n * (p.K / 2) + k0 / 2);
    const float s =
        fp8_e4m3_to_f32(static_cast<const uint8_t*>(p.w_scale)[n * (p.K / 16) + k0 / 16]);
#pragma unroll
    for (int i = 0; i < kDequantVec; ++i)
      out[i] = __float2bfloat16_rn(e2m1_to_f32(codes >> (4 * i)) * s);
  } else {  // kWFp8Block
    const uint2 codes =
        *reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(p.w) + n * p.K + k0);
    const int64_t scale_cols = (p.K + p.w_block - 1) / p.w_block;
    const float s =
        static_cast<const float*>(p.w_scale)[(n / p.w_block) * scale_cols + k0 / p.w_block];
#pragma unroll
    for (int i = 0; i < kDequantVec; ++i) {
      const uint32_t word = i < 4 ? codes.x : codes.y;
      out[i] =
          __float2bfloat16_rn(fp8_e4m3_to_f32(static_cast<uint8_t>(word >> (8 * (i % 4)))) * s);
    }
  }
  *reinterpret_cast<uint4*>(static_cast<__nv_bfloat16*>(d.dst) + r * p.K + k0) =
      *reinterpret_cast<const uint4*>(out);
}

}  // namespace

bool linear_dequant_supported(const LinearParams& p) {
  return (p.wt == kWNvfp4 || (p.wt == kWFp8Block && p.w_block % kDequantVec == 0)) &&
         p.K % 128 == 0;
}

void launch_dequant_rows(const DequantRowsParams& d, Stream stream) {
  MOE_CHECK(linear_dequant_supported(d.lin))
      << "dequant_rows: format " << d.lin.wt << ", K " << d.lin.K << ", block " << d.lin.w_block;
  const int64_t n = d.rows * (d.lin.K / kDequantVec);
  if (n == 0) return;
  dequant_rows_kernel<<<static_cast<unsigned>(ceil_div(n, kDequantThreads)), kDequantThreads, 0,
                        stream>>>(d);
  MOE_CUDA_CHECK_LAUNCH("linear (dequantize rows)");
}

}  // namespace moe::cuda
