// CudaOps entries: embedding, linear, norms, elementwise, RoPE, SwiGLU, cache writes.
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
  launch_linear(p, stream_);
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
