// Reference ops: embedding, linear, norms, elementwise, RoPE, SwiGLU, cache writes.
#include <cmath>
#include <cstring>

#include "backends/reference/kernels_cpu.h"
#include "backends/reference/reference_ops.h"
#include "tensor/quant/fp8_block.h"
#include "tensor/quant/nvfp4.h"

namespace moe::reference {

std::vector<float> to_f32(ConstTensorView w) {
  MOE_CHECK(w.is_contiguous()) << "to_f32 of a strided view";
  std::vector<float> out(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i) out[i] = load_f32(w.raw(), w.dtype(), i);
  return out;
}

void check_f32(ConstTensorView v, int rank, const char* what) {
  MOE_CHECK(v.dtype() == DType::kF32) << what << ": expected F32, got " << dtype_name(v.dtype());
  MOE_CHECK(v.rank() == rank) << what << ": expected rank " << rank << ", got "
                              << v.shape().to_string();
  MOE_CHECK(v.stride(-1) == 1) << what << ": innermost dimension must be contiguous";
}

void ReferenceOps::copy_from_host(TensorView dst, const void* src) {
  MOE_CHECK(dst.is_contiguous()) << "copy_from_host into a strided view";
  std::memcpy(dst.raw(), src, dst.nbytes());
}

void ReferenceOps::copy_to_host(void* dst, ConstTensorView src) {
  MOE_CHECK(src.is_contiguous()) << "copy_to_host from a strided view";
  std::memcpy(dst, src.raw(), src.nbytes());
}

void ReferenceOps::embed(TensorView y, ConstTensorView ids, ConstTensorView table) {
  check_f32(y, 2, "embed.y");
  MOE_CHECK(ids.dtype() == DType::kI32 && ids.rank() == 1 && ids.dim(0) == y.dim(0));
  MOE_CHECK(table.rank() == 2 && table.dim(1) == y.dim(1) && table.is_contiguous());
  const int32_t* id = ids.data<int32_t>();
  int64_t d = y.dim(1);
  size_t esz = dtype_size(table.dtype());
  for (int64_t t = 0; t < y.dim(0); ++t) {
    MOE_CHECK(id[t] >= 0 && id[t] < table.dim(0)) << "token id " << id[t] << " out of range";
    const void* row = static_cast<const std::byte*>(table.raw()) + id[t] * d * esz;
    float* out = y.data<float>() + t * y.stride(0);
    for (int64_t k = 0; k < d; ++k) out[k] = load_f32(row, table.dtype(), k);
  }
}

namespace {
void check_row_major(const ops::Weight& w) {
  MOE_CHECK(w.layout == ops::WeightLayout::kRowMajor)
      << "weight " << w.data.shape().to_string()
      << ": in the cuda grouped MoE kernels' packed layout (the reference backend reads the "
         "checkpoint's row-major data and scales)";
}
}  // namespace

void weight_row_f32(const ops::Weight& w, int64_t n, float* out) {
  MOE_CHECK(w.data.is_contiguous() && w.data.rank() == 2)
      << "weight " << w.data.shape().to_string();
  check_row_major(w);
  switch (w.format) {
    case ops::WeightFormat::kDense: {
      const int64_t K = w.cols();
      const void* row = static_cast<const std::byte*>(w.data.raw()) +
                        n * K * static_cast<int64_t>(dtype_size(w.data.dtype()));
      for (int64_t k = 0; k < K; ++k) out[k] = load_f32(row, w.data.dtype(), k);
      return;
    }
    case ops::WeightFormat::kFp8Block: {  // data [N, K] F8_E4M3, scale [ceil(N/b), ceil(K/b)] F32
      const int64_t K = w.cols(), b = w.block;
      MOE_CHECK(w.data.dtype() == DType::kF8E4M3 && w.scale.dtype() == DType::kF32 && b > 0 &&
                w.scale.is_contiguous() && w.scale.rank() == 2 &&
                w.scale.dim(0) == quant::ceil_div(w.rows(), b) &&
                w.scale.dim(1) == quant::ceil_div(K, b))
          << "fp8 block weight " << w.data.shape().to_string() << " scale "
          << w.scale.shape().to_string();
      const uint8_t* q = static_cast<const uint8_t*>(w.data.raw()) + n * K;
      const float* s = static_cast<const float*>(w.scale.raw()) + (n / b) * w.scale.dim(1);
      quant::fp8_block_dequantize_row(q, s, K, b, out);
      return;
    }
    case ops::WeightFormat::kNvfp4: {  // data [N, K/2] U8, scale [N, K/16] F8_E4M3
      const int64_t K = w.cols();
      MOE_CHECK(w.data.dtype() == DType::kU8 && w.scale.dtype() == DType::kF8E4M3 &&
                w.scale.is_contiguous() && w.scale.rank() == 2 && w.scale.dim(0) == w.rows() &&
                w.scale.dim(1) * quant::kNvfp4Group == K)
          << "nvfp4 weight " << w.data.shape().to_string() << " scale "
          << w.scale.shape().to_string();
      const uint8_t* p = static_cast<const uint8_t*>(w.data.raw()) + n * (K / 2);
      const uint8_t* s = static_cast<const uint8_t*>(w.scale.raw()) + n * w.scale.dim(1);
      quant::nvfp4_dequantize_row(p, s, w.global_scale, K, out);
      return;
    }
  }
  MOE_CHECK(false) << "unknown weight format " << static_cast<int>(w.format);
}

void ReferenceOps::linear(TensorView y, ConstTensorView x, const ops::Weight& w) {
  check_f32(y, 2, "linear.y");
  check_f32(x, 2, "linear.x");
  const int64_t T = x.dim(0), N = w.rows(), K = w.cols();
  MOE_CHECK(x.dim(1) == K && y.dim(1) == N && x.dim(0) == y.dim(0))
      << "linear: x " << x.shape().to_string() << " w " << N << "x" << K << " y "
      << y.shape().to_string();
  check_row_major(w);
  if (w.format == ops::WeightFormat::kDense) {  // read the stored row directly
    MOE_CHECK(w.data.is_contiguous()) << "linear: strided weight";
    const size_t row_bytes = static_cast<size_t>(K) * dtype_size(w.data.dtype());
    pool_.parallel_for(N, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        const void* wr = static_cast<const std::byte*>(w.data.raw()) + n * row_bytes;
        for (int64_t t = 0; t < T; ++t) {
          const float* xr = x.data<float>() + t * x.stride(0);
          y.data<float>()[t * y.stride(0) + n] =
              static_cast<float>(dot_row(xr, wr, w.data.dtype(), K));
        }
      }
    });
    return;
  }
  pool_.parallel_for(N, [&](int64_t n0, int64_t n1) {
    std::vector<float> row(K);
    for (int64_t n = n0; n < n1; ++n) {
      weight_row_f32(w, n, row.data());
      for (int64_t t = 0; t < T; ++t) {
        const float* xr = x.data<float>() + t * x.stride(0);
        y.data<float>()[t * y.stride(0) + n] = static_cast<float>(dot_f32(xr, row.data(), K));
      }
    }
  });
}

void ReferenceOps::rms_norm(TensorView y, ConstTensorView x, ConstTensorView gamma, float eps) {
  check_f32(y, 2, "rms_norm.y");
  check_f32(x, 2, "rms_norm.x");
  int64_t n = x.dim(1);
  MOE_CHECK(gamma.numel() == n && y.dim(1) == n && y.dim(0) == x.dim(0));
  for (int64_t t = 0; t < x.dim(0); ++t) {
    const float* xr = x.data<float>() + t * x.stride(0);
    float* yr = y.data<float>() + t * y.stride(0);
    double ss = dot_f32(xr, xr, n);
    float inv = static_cast<float>(1.0 / std::sqrt(ss / n + eps));
    for (int64_t k = 0; k < n; ++k) yr[k] = load_f32(gamma.raw(), gamma.dtype(), k) * (xr[k] * inv);
  }
}

void ReferenceOps::layer_norm(TensorView y, ConstTensorView x, ConstTensorView gamma,
                              ConstTensorView beta, float eps) {
  check_f32(y, 2, "layer_norm.y");
  check_f32(x, 2, "layer_norm.x");
  int64_t n = x.dim(1);
  MOE_CHECK(gamma.numel() == n && beta.numel() == n && y.dim(1) == n);
  for (int64_t t = 0; t < x.dim(0); ++t) {
    const float* xr = x.data<float>() + t * x.stride(0);
    float* yr = y.data<float>() + t * y.stride(0);
    double mean = 0, var = 0;
    for (int64_t k = 0; k < n; ++k) mean += xr[k];
    mean /= n;
    for (int64_t k = 0; k < n; ++k) var += (xr[k] - mean) * (xr[k] - mean);
    var /= n;
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t k = 0; k < n; ++k)
      yr[k] = static_cast<float>((xr[k] - mean) * inv * load_f32(gamma.raw(), gamma.dtype(), k) +
                                 load_f32(beta.raw(), beta.dtype(), k));
  }
}

void ReferenceOps::add_inplace(TensorView y, ConstTensorView x) {
  check_f32(y, 2, "add.y");
  check_f32(x, 2, "add.x");
  MOE_CHECK(y.shape() == x.shape()) << y.shape().to_string() << " vs " << x.shape().to_string();
  for (int64_t t = 0; t < y.dim(0); ++t)
    for (int64_t k = 0; k < y.dim(1); ++k)
      y.data<float>()[t * y.stride(0) + k] += x.data<float>()[t * x.stride(0) + k];
}

void ReferenceOps::scale_inplace(TensorView y, float s) {
  check_f32(y, 2, "scale.y");
  for (int64_t t = 0; t < y.dim(0); ++t)
    for (int64_t k = 0; k < y.dim(1); ++k) y.data<float>()[t * y.stride(0) + k] *= s;
}

void ReferenceOps::rope(TensorView x, ConstTensorView positions, const ops::RopeParams& p) {
  check_f32(x, 3, "rope.x");
  int64_t T = x.dim(0), heads = x.dim(1), R = x.dim(2), half = R / 2;
  MOE_CHECK(R % 2 == 0 && static_cast<int64_t>(p.inv_freq.size()) == half);
  MOE_CHECK(positions.dtype() == DType::kI32 && positions.numel() == T);
  std::vector<float> cs(half), sn(half), tmp(R);
  for (int64_t t = 0; t < T; ++t) {
    // Angles in f32 as PyTorch computes them (inv_freq * position).
    float pos = static_cast<float>(positions.data<int32_t>()[t]);
    for (int64_t i = 0; i < half; ++i) {
      float ang = p.inv_freq[i] * pos;
      cs[i] = std::cos(ang) * p.attention_factor;
      sn[i] = std::sin(ang) * p.attention_factor;
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x.data<float>() + t * x.stride(0) + h * x.stride(1);
      for (int64_t i = 0; i < half; ++i) {
        int64_t a = p.style == ops::RopeStyle::kInterleaved ? 2 * i : i;
        int64_t b = p.style == ops::RopeStyle::kInterleaved ? 2 * i + 1 : i + half;
        tmp[a] = v[a] * cs[i] - v[b] * sn[i];
        tmp[b] = v[b] * cs[i] + v[a] * sn[i];
      }
      for (int64_t i = 0; i < R; ++i) v[i] = tmp[i];
    }
  }
}

void ReferenceOps::silu_mul(TensorView y, ConstTensorView gate, ConstTensorView up) {
  check_f32(y, 2, "silu_mul.y");
  MOE_CHECK(gate.shape() == y.shape() && up.shape() == y.shape());
  for (int64_t t = 0; t < y.dim(0); ++t)
    for (int64_t k = 0; k < y.dim(1); ++k) {
      float g = gate.data<float>()[t * gate.stride(0) + k];
      float u = up.data<float>()[t * up.stride(0) + k];
      y.data<float>()[t * y.stride(0) + k] = g / (1.0f + std::exp(-g)) * u;
    }
}

void ReferenceOps::cache_write(ops::PagedCacheView cache, ConstTensorView src,
                               const ops::BatchLayout& b) {
  check_f32(src, 2, "cache_write.src");
  MOE_CHECK(cache.data.rank() == 3 && cache.data.dim(2) == src.dim(1) &&
            cache.data.dim(1) == b.page_size);
  const int32_t* seq = b.token_seq.data<int32_t>();
  const int32_t* pos = b.positions.data<int32_t>();
  for (int64_t t = 0; t < src.dim(0); ++t) {
    float* dst = cache_slot(cache, b, seq[t], pos[t]);
    const float* s = src.data<float>() + t * src.stride(0);
    for (int64_t k = 0; k < src.dim(1); ++k) dst[k] = s[k];
  }
}

}  // namespace moe::reference
