// CudaOps entries: embedding, linear, norms, elementwise, RoPE, SwiGLU, cache writes.
#include <algorithm>
#include <cstdlib>

#include "backends/cuda/cublaslt_gemm.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernels/cache_write/cache_write.h"
#include "backends/cuda/kernels/elementwise/elementwise.h"
#include "backends/cuda/kernels/embed/embed.h"
#include "backends/cuda/kernels/linear/linear.h"
#include "backends/cuda/kernels/norm/norm.h"
#include "backends/cuda/kernels/rope/rope.h"
#include "backends/cuda/op_checks.h"

namespace moe::cuda {

void CudaOps::embed(TensorView y, ConstTensorView ids, ConstTensorView table) {
  check_f32(y, 2, "embed.y");
  check_i32(ids, 1, "embed.ids");
  MOE_CHECK(ids.dim(0) == y.dim(0))
      << "embed: ids " << ids.shape().to_string() << " y " << y.shape().to_string();
  MOE_CHECK(table.rank() == 2 && table.dim(1) == y.dim(1) && table.is_contiguous())
      << "embed.table " << table.shape().to_string() << " for y " << y.shape().to_string();
  begin_op();
  EmbedParams p;
  p.y = y.data<float>();
  p.y_stride = y.stride(0);
  p.ids = ids.data<int32_t>();
  p.table = table.raw();
  p.wt = weight_type(table.dtype(), "embed.table");
  p.T = y.dim(0);
  p.V = table.dim(0);
  p.D = y.dim(1);
  launch_embed(p, stream_);
}

void CudaOps::linear(TensorView y, ConstTensorView x, const ops::Weight& weight) {
  const WeightArgs w = weight_args(weight, "linear.w");
  check_f32(y, 2, "linear.y");
  check_f32(x, 2, "linear.x");
  MOE_CHECK(x.dim(1) == w.K && y.dim(1) == w.N && x.dim(0) == y.dim(0))
      << "linear: x " << x.shape().to_string() << " w [" << w.N << ", " << w.K << "] y "
      << y.shape().to_string();
  begin_op();
  LinearParams p;
  p.y = y.data<float>();
  p.y_stride = y.stride(0);
  p.x = x.data<float>();
  p.x_stride = x.stride(0);
  p.w = w.data;
  p.wt = w.wt;
  p.w_scale = w.scale;
  p.w_block = w.block;
  p.w_global_scale = w.global_scale;
  p.M = x.dim(0);
  p.N = w.N;
  p.K = w.K;
  if ((p.wt == kWBF16 || p.wt == kWF16) && p.K % 128 == 0) {
    // cuBLASLt: x rounded to the weight dtype in scratch (rows of K, 256-byte aligned), f32
    // accumulation, output straight into y's rows. Only for K a multiple of 128 (every real
    // model width), like the grouped MoE kernels' rounded path: the tiny test fixtures keep the
    // exact f32 tile kernel and their 1e-4 agreement with transformers (docs/numerics.md).
    const int64_t ld = p.K;
    TensorView xr = scratch({p.M, ld}, p.wt == kWBF16 ? DType::kBF16 : DType::kF16);  // [M, K]
    LtGemmArgs a;
    a.y = p.y;
    a.y_stride = p.y_stride;
    a.x = xr.raw();
    a.x_stride = ld;
    a.w = p.w;
    a.wt = p.wt;
    a.M = p.M;
    a.N = p.N;
    a.K = p.K;
    if (gemm_->supports(a)) {
      RoundRowsParams r;
      r.dst = xr.raw();
      r.dst_stride = ld;
      r.x = p.x;
      r.x_stride = p.x_stride;
      r.wt = p.wt;
      r.M = p.M;
      r.K = p.K;
      launch_round_rows(r, stream_);
      gemm_->matmul(a, stream_);
      ++linear_cublaslt_calls_;
      return;
    }
    // No cuBLASLt algorithm for this shape / alignment: the exact tile kernel below.
  } else if (linear_gemv_supported(p) && p.M <= linear_gemv_max_m_) {
    LinearGemvParams g = plan_linear_gemv(p, info_.sm_count);
    if (g.splits > 1) g.partial = scratch({partial_floats(g)}, DType::kF32).data<float>();
    launch_linear_gemv(g, stream_);
    return;
  } else if (linear_dequant_supported(p) && linear_quantized_cublaslt(p)) {
    return;
  }
  launch_linear(p, stream_);
}

// FP8 block / NVFP4 weights above the small-M kernel's range: x rounded to BF16 once, then per
// chunk of weight rows (kDequantChunkBytes of BF16, so a chunk stays in L2 for its GEMM) the
// rows dequantized into scratch and one cuBLASLt GEMM into y's columns (NVFP4's global scale as
// alpha). False, with nothing enqueued, if cuBLASLt has no algorithm for the chunk shapes.
bool CudaOps::linear_quantized_cublaslt(const LinearParams& p) {
  constexpr int64_t kDequantChunkBytes = int64_t{24} << 20;
  const int64_t chunk =
      std::min<int64_t>(p.N, std::max<int64_t>(64, kDequantChunkBytes / (2 * p.K) / 64 * 64));
  const int64_t last = p.N % chunk == 0 ? chunk : p.N % chunk;
  TensorView xr = scratch({p.M, p.K}, DType::kBF16);
  TensorView wr = scratch({chunk, p.K}, DType::kBF16);
  LtGemmArgs a;
  a.y_stride = p.y_stride;
  a.x = xr.raw();
  a.x_stride = p.K;
  a.w = wr.raw();
  a.wt = kWBF16;
  a.M = p.M;
  a.K = p.K;
  a.alpha = p.wt == kWNvfp4 ? p.w_global_scale : 1.f;
  for (int64_t rows : {chunk, last}) {  // every chunk has one of these two shapes
    a.N = rows;
    a.y = p.y + (rows == chunk ? 0 : p.N - last);  // alignment of y as the chunk will see it
    if (!gemm_->supports(a)) return false;
  }
  RoundRowsParams r;
  r.dst = xr.raw();
  r.dst_stride = p.K;
  r.x = p.x;
  r.x_stride = p.x_stride;
  r.wt = kWBF16;
  r.M = p.M;
  r.K = p.K;
  launch_round_rows(r, stream_);
  DequantRowsParams d;
  d.lin = p;
  d.dst = wr.raw();
  for (int64_t n0 = 0; n0 < p.N; n0 += chunk) {
    d.n0 = n0;
    d.rows = std::min(chunk, p.N - n0);
    launch_dequant_rows(d, stream_);  // stream order: the previous chunk's GEMM has read wr
    a.N = d.rows;
    a.y = p.y + n0;
    gemm_->matmul(a, stream_);
  }
  ++linear_cublaslt_calls_;
  return true;
}

void CudaOps::rms_norm(TensorView y, ConstTensorView x, ConstTensorView gamma, float eps) {
  check_f32(y, 2, "rms_norm.y");
  check_f32(x, 2, "rms_norm.x");
  MOE_CHECK(gamma.numel() == x.dim(1) && y.shape() == x.shape() && gamma.is_contiguous())
      << "rms_norm: x " << x.shape().to_string() << " y " << y.shape().to_string() << " gamma "
      << gamma.shape().to_string();
  begin_op();
  NormParams p;
  p.y = y.data<float>();
  p.y_stride = y.stride(0);
  p.x = x.data<float>();
  p.x_stride = x.stride(0);
  p.gamma = gamma.raw();
  p.gamma_wt = weight_type(gamma.dtype(), "rms_norm.gamma");
  p.T = x.dim(0);
  p.N = x.dim(1);
  p.eps = eps;
  launch_rms_norm(p, stream_);
}

void CudaOps::layer_norm(TensorView y, ConstTensorView x, ConstTensorView gamma,
                         ConstTensorView beta, float eps) {
  check_f32(y, 2, "layer_norm.y");
  check_f32(x, 2, "layer_norm.x");
  MOE_CHECK(gamma.numel() == x.dim(1) && beta.numel() == x.dim(1) && y.shape() == x.shape())
      << "layer_norm: x " << x.shape().to_string() << " gamma " << gamma.shape().to_string()
      << " beta " << beta.shape().to_string();
  begin_op();
  NormParams p;
  p.y = y.data<float>();
  p.y_stride = y.stride(0);
  p.x = x.data<float>();
  p.x_stride = x.stride(0);
  p.gamma = gamma.raw();
  p.gamma_wt = weight_type(gamma.dtype(), "layer_norm.gamma");
  p.beta = beta.raw();
  p.beta_wt = weight_type(beta.dtype(), "layer_norm.beta");
  p.T = x.dim(0);
  p.N = x.dim(1);
  p.eps = eps;
  launch_layer_norm(p, stream_);
}

void CudaOps::add_inplace(TensorView y, ConstTensorView x) {
  check_f32(y, 2, "add.y");
  check_f32(x, 2, "add.x");
  MOE_CHECK(y.shape() == x.shape())
      << "add: " << y.shape().to_string() << " vs " << x.shape().to_string();
  begin_op();
  ElementwiseParams p;
  p.op = ElementwiseOp::kAdd;
  p.y = y.data<float>();
  p.y_stride = y.stride(0);
  p.a = x.data<float>();
  p.a_stride = x.stride(0);
  p.T = y.dim(0);
  p.N = y.dim(1);
  launch_elementwise(p, stream_);
}

void CudaOps::scale_inplace(TensorView y, float s) {
  check_f32(y, 2, "scale.y");
  begin_op();
  ElementwiseParams p;
  p.op = ElementwiseOp::kScale;
  p.y = y.data<float>();
  p.y_stride = y.stride(0);
  p.s = s;
  p.T = y.dim(0);
  p.N = y.dim(1);
  launch_elementwise(p, stream_);
}

void CudaOps::silu_mul(TensorView y, ConstTensorView gate, ConstTensorView up) {
  check_f32(y, 2, "silu_mul.y");
  check_f32(gate, 2, "silu_mul.gate");
  check_f32(up, 2, "silu_mul.up");
  MOE_CHECK(gate.shape() == y.shape() && up.shape() == y.shape())
      << "silu_mul: y " << y.shape().to_string() << " gate " << gate.shape().to_string() << " up "
      << up.shape().to_string();
  begin_op();
  ElementwiseParams p;
  p.op = ElementwiseOp::kSiluMul;
  p.y = y.data<float>();
  p.y_stride = y.stride(0);
  p.a = gate.data<float>();
  p.a_stride = gate.stride(0);
  p.b = up.data<float>();
  p.b_stride = up.stride(0);
  p.T = y.dim(0);
  p.N = y.dim(1);
  launch_elementwise(p, stream_);
}

void CudaOps::rope(TensorView x, ConstTensorView positions, const ops::RopeParams& rp) {
  check_f32(x, 3, "rope.x");
  const int64_t T = x.dim(0), R = x.dim(2), half = R / 2;
  MOE_CHECK(R % 2 == 0 && static_cast<int64_t>(rp.inv_freq.size()) == half)
      << "rope: R " << R << ", inv_freq of " << rp.inv_freq.size();
  MOE_CHECK(half <= kMaxRopeHalf) << "rope: R " << R << " (supported: <= " << 2 * kMaxRopeHalf
                                  << ")";
  MOE_CHECK(positions.dtype() == DType::kI32 && positions.numel() == T)
      << "rope.positions " << positions.shape().to_string() << " for " << T << " tokens";
  begin_op();
  RopeKernelParams p;
  p.x = x.data<float>();
  p.s0 = x.stride(0);
  p.s1 = x.stride(1);
  p.T = T;
  p.heads = x.dim(1);
  p.R = R;
  p.positions = positions.data<int32_t>();
  p.interleaved = rp.style == ops::RopeStyle::kInterleaved;
  p.attention_factor = rp.attention_factor;
  for (int64_t i = 0; i < half; ++i) p.inv_freq[i] = rp.inv_freq[i];
  launch_rope(p, stream_);
}

void CudaOps::cache_write(ops::PagedCacheView cache, ConstTensorView src,
                          const ops::BatchLayout& b) {
  check_f32(src, 2, "cache_write.src");
  MOE_CHECK(cache.data.dtype() == DType::kF32 && cache.data.rank() == 3 &&
            cache.data.dim(2) == src.dim(1) && src.dim(0) == b.num_tokens)
      << "cache_write: cache " << cache.data.shape().to_string() << " src "
      << src.shape().to_string() << " for " << b.num_tokens << " tokens";
  begin_op();
  CacheWriteParams p;
  p.cache = cache.data.data<float>();
  p.src = src.data<float>();
  p.src_stride = src.stride(0);
  p.W = src.dim(1);
  p.b = layout_params(b, cache.data);
  launch_cache_write(p, stream_);
}

}  // namespace moe::cuda
