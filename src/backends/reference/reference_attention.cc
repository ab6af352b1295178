// Reference ops: MLA attention (naive and weight-absorbed forms) and the DSA lightning indexer
// over paged caches.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "backends/reference/kernels_cpu.h"
#include "backends/reference/reference_ops.h"

namespace moe::reference {
namespace {

// Positions token t may attend to: its `selected` row (-1 padded) or 0..pos.
std::vector<int64_t> attended_positions(ConstTensorView selected, int64_t t, int64_t pos) {
  std::vector<int64_t> keys;
  if (selected.empty()) {
    keys.resize(pos + 1);
    std::iota(keys.begin(), keys.end(), 0);
  } else {
    const int32_t* row = selected.data<int32_t>() + t * selected.stride(0);
    for (int64_t i = 0; i < selected.dim(1); ++i)
      if (row[i] >= 0) {
        MOE_CHECK(row[i] <= pos) << "selected key " << row[i] << " after query position " << pos;
        keys.push_back(row[i]);
      }
    std::sort(keys.begin(), keys.end());
  }
  return keys;
}

// An empty row (a token that attends no key) stays empty: its output is 0.
void softmax_inplace(std::vector<double>& s) {
  if (s.empty()) return;
  double mx = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (double& v : s) sum += (v = std::exp(v - mx));
  for (double& v : s) v /= sum;
}

}  // namespace

void ReferenceOps::dsa_index_topk(TensorView out, ConstTensorView q, ConstTensorView w,
                                  ops::PagedCacheView k_cache, const ops::BatchLayout& b) {
  check_f32(q, 3, "dsa.q");
  check_f32(w, 2, "dsa.w");
  MOE_CHECK(out.dtype() == DType::kI32 && out.rank() == 2 && out.dim(0) == q.dim(0));
  int64_t T = q.dim(0), Hi = q.dim(1), Di = q.dim(2), top_k = out.dim(1);
  MOE_CHECK(k_cache.data.dim(2) == Di && w.dim(1) == Hi);
  const int32_t* seq = b.token_seq.data<int32_t>();
  const int32_t* pos = b.positions.data<int32_t>();
  pool_.parallel_for(T, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t n = pos[t] + 1;
      std::vector<double> score(n);
      for (int64_t j = 0; j < n; ++j) {
        const float* k = cache_slot(k_cache, b, seq[t], j);
        double acc = 0;
        for (int64_t h = 0; h < Hi; ++h) {
          const float* qh = q.data<float>() + t * q.stride(0) + h * q.stride(1);
          double d = static_cast<float>(dot_f32(qh, k, Di));
          acc += static_cast<double>(w.data<float>()[t * w.stride(0) + h]) * std::max(d, 0.0);
        }
        score[j] = acc;
      }
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      int64_t keep = std::min(top_k, n);
      std::partial_sort(
          order.begin(), order.begin() + keep, order.end(),
          [&](int64_t a, int64_t c) { return score[a] != score[c] ? score[a] > score[c] : a < c; });
      int32_t* row = out.data<int32_t>() + t * out.stride(0);
      for (int64_t i = 0; i < top_k; ++i) row[i] = i < keep ? static_cast<int32_t>(order[i]) : -1;
    }
  });
}

void ReferenceOps::mla_attention(TensorView out, ConstTensorView q,
                                 ops::PagedCacheView latent_cache, ConstTensorView kv_b,
                                 ConstTensorView selected, const ops::BatchLayout& b,
                                 const ops::MlaParams& p) {
  check_f32(out, 3, "mla.out");
  check_f32(q, 3, "mla.q");
  const int64_t T = q.dim(0), H = p.heads, Dn = p.nope_dim, R = p.rope_dim, Dv = p.v_dim,
                L = p.latent_dim;
  MOE_CHECK(q.dim(1) == H && q.dim(2) == Dn + R) << "mla.q " << q.shape().to_string();
  MOE_CHECK(out.dim(0) == T && out.dim(1) == H && out.dim(2) == Dv);
  MOE_CHECK(kv_b.rank() == 2 && kv_b.dim(0) == H * (Dn + Dv) && kv_b.dim(1) == L);
  MOE_CHECK(latent_cache.data.dim(2) == L + R);
  if (!selected.empty()) {
    MOE_CHECK(selected.dtype() == DType::kI32 && selected.dim(0) == T);
  }
  const std::vector<float> wkvb = to_f32(kv_b);  // [H, Dn + Dv, L]
  const int32_t* seq = b.token_seq.data<int32_t>();
  const int32_t* pos = b.positions.data<int32_t>();

  pool_.parallel_for(T * H, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / H, h = i % H;
      const float* qh = q.data<float>() + t * q.stride(0) + h * q.stride(1);
      const float* w_uk = wkvb.data() + h * (Dn + Dv) * L;  // [Dn, L]
      const float* w_uv = w_uk + Dn * L;                    // [Dv, L]
      float* o = out.data<float>() + t * out.stride(0) + h * out.stride(1);
      std::vector<int64_t> keys = attended_positions(selected, t, pos[t]);
      std::vector<double> s(keys.size());
      if (p.form == ops::MlaForm::kNaive) {
        // Expand k_nope_h = W_UK c_kv and v_h = W_UV c_kv per key.
        std::vector<float> v(keys.size() * Dv);
        for (size_t j = 0; j < keys.size(); ++j) {
          const float* lat = cache_slot(latent_cache, b, seq[t], keys[j]);
          double acc = 0;
          for (int64_t d = 0; d < Dn; ++d)
            acc += static_cast<double>(qh[d]) * static_cast<float>(dot_f32(w_uk + d * L, lat, L));
          acc += dot_f32(qh + Dn, lat + L, R);
          s[j] = acc * p.softmax_scale;
          for (int64_t d = 0; d < Dv; ++d)
            v[j * Dv + d] = static_cast<float>(dot_f32(w_uv + d * L, lat, L));
        }
        softmax_inplace(s);
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (size_t j = 0; j < keys.size(); ++j) acc += s[j] * v[j * Dv + d];
          o[d] = static_cast<float>(acc);
        }
      } else {
        // Absorbed: q~ = W_UK^T q_nope (L), attend over the latent, then o = W_UV o^.
        std::vector<double> qt(L, 0.0);
        for (int64_t d = 0; d < Dn; ++d)
          for (int64_t c = 0; c < L; ++c) qt[c] += static_cast<double>(qh[d]) * w_uk[d * L + c];
        std::vector<double> ohat(L, 0.0);
        for (size_t j = 0; j < keys.size(); ++j) {
          const float* lat = cache_slot(latent_cache, b, seq[t], keys[j]);
          double acc = 0;
          for (int64_t c = 0; c < L; ++c) acc += qt[c] * lat[c];
          acc += dot_f32(qh + Dn, lat + L, R);
          s[j] = acc * p.softmax_scale;
        }
        softmax_inplace(s);
        for (size_t j = 0; j < keys.size(); ++j) {
          const float* lat = cache_slot(latent_cache, b, seq[t], keys[j]);
          for (int64_t c = 0; c < L; ++c) ohat[c] += s[j] * lat[c];
        }
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t c = 0; c < L; ++c) acc += ohat[c] * w_uv[d * L + c];
          o[d] = static_cast<float>(acc);
        }
      }
    }
  });
}

}  // namespace moe::reference
