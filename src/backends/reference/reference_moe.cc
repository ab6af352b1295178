// Reference ops: noaux_tc router and routed experts.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "backends/reference/kernels_cpu.h"
#include "backends/reference/reference_ops.h"

namespace moe::reference {

void ReferenceOps::moe_route(TensorView ids, TensorView weights, ConstTensorView logits,
                             ConstTensorView bias, const ops::MoeRouteParams& p) {
  check_f32(logits, 2, "moe_route.logits");
  const int64_t T = logits.dim(0), E = logits.dim(1), K = p.top_k, G = p.n_group;
  MOE_CHECK(ids.dtype() == DType::kI32 && ids.dim(0) == T && ids.dim(1) == K);
  MOE_CHECK(weights.dtype() == DType::kF32 && weights.dim(0) == T && weights.dim(1) == K);
  MOE_CHECK(bias.numel() == E && G >= 1 && E % G == 0 && p.topk_group <= G && K <= E);
  const int64_t per_group = E / G;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t t = 0; t < T; ++t) {
    const float* lg = logits.data<float>() + t * logits.stride(0);
    std::vector<float> s(E), choice(E);
    for (int64_t e = 0; e < E; ++e) {
      s[e] = 1.0f / (1.0f + std::exp(-lg[e]));
      choice[e] = s[e] + load_f32(bias.raw(), bias.dtype(), e);
    }
    if (G > 1) {
      // Group score = sum of the two best choice values; keep the topk_group best groups.
      std::vector<float> gscore(G);
      for (int64_t g = 0; g < G; ++g) {
        std::vector<float> v(choice.begin() + g * per_group, choice.begin() + (g + 1) * per_group);
        std::partial_sort(v.begin(), v.begin() + std::min<int64_t>(2, per_group), v.end(),
                          std::greater<float>());
        gscore[g] = v[0] + (per_group > 1 ? v[1] : 0.f);
      }
      std::vector<int64_t> gorder(G);
      std::iota(gorder.begin(), gorder.end(), 0);
      std::stable_sort(gorder.begin(), gorder.end(),
                       [&](int64_t a, int64_t c) { return gscore[a] > gscore[c]; });
      std::vector<bool> keep(G, false);
      for (int64_t i = 0; i < p.topk_group; ++i) keep[gorder[i]] = true;
      for (int64_t e = 0; e < E; ++e)
        if (!keep[e / per_group]) choice[e] = kNegInf;
    }
    std::vector<int64_t> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t c) { return choice[a] > choice[c]; });
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += s[order[k]];
    int32_t* id = ids.data<int32_t>() + t * ids.stride(0);
    float* w = weights.data<float>() + t * weights.stride(0);
    for (int64_t k = 0; k < K; ++k) {
      id[k] = static_cast<int32_t>(order[k]);
      double v = s[order[k]];
      if (p.norm_topk_prob) v /= (sum + 1e-20);
      w[k] = static_cast<float>(v * p.routed_scaling_factor);
    }
  }
}

void ReferenceOps::moe_experts(TensorView y, ConstTensorView x, ConstTensorView ids,
                               ConstTensorView weights, std::span<const ops::ExpertWeights> experts,
                               const ops::ExpertWeights* shared) {
  check_f32(y, 2, "moe_experts.y");
  check_f32(x, 2, "moe_experts.x");
  const int64_t T = x.dim(0), D = x.dim(1), K = ids.dim(1);
  MOE_CHECK(y.shape() == x.shape() && ids.dim(0) == T && weights.dim(1) == K);
  auto check_expert = [&](const ops::ExpertWeights& ew) {
    const int64_t I = ew.gate.rows();
    MOE_CHECK(ew.gate.cols() == D && ew.up.rows() == I && ew.up.cols() == D &&
              ew.down.rows() == D && ew.down.cols() == I)
        << "moe_experts: expert gate [" << ew.gate.rows() << ", " << ew.gate.cols() << "] up ["
        << ew.up.rows() << ", " << ew.up.cols() << "] down [" << ew.down.rows() << ", "
        << ew.down.cols() << "] for D " << D;
  };
  if (shared) check_expert(*shared);
  pool_.parallel_for(T, [&](int64_t t0, int64_t t1) {
    std::vector<float> h, row, acc(D);
    // acc += wk * expert(x row).
    auto add_expert = [&](const ops::ExpertWeights& ew, const float* xr, float wk) {
      const int64_t I = ew.gate.rows();
      h.resize(I);
      row.resize(std::max(D, I));
      for (int64_t i = 0; i < I; ++i) {
        weight_row_f32(ew.gate, i, row.data());
        float g = static_cast<float>(dot_f32(xr, row.data(), D));
        weight_row_f32(ew.up, i, row.data());
        float u = static_cast<float>(dot_f32(xr, row.data(), D));
        h[i] = g / (1.0f + std::exp(-g)) * u;
      }
      for (int64_t d = 0; d < D; ++d) {
        weight_row_f32(ew.down, d, row.data());
        acc[d] += wk * static_cast<float>(dot_f32(h.data(), row.data(), I));
      }
    };
    for (int64_t t = t0; t < t1; ++t) {
      const float* xr = x.data<float>() + t * x.stride(0);
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t k = 0; k < K; ++k) {
        int32_t e = ids.data<int32_t>()[t * ids.stride(0) + k];
        MOE_CHECK(e >= 0 && e < static_cast<int64_t>(experts.size())) << "expert id " << e;
        check_expert(experts[e]);
        add_expert(experts[e], xr, weights.data<float>()[t * weights.stride(0) + k]);
      }
      if (shared) add_expert(*shared, xr, 1.f);
      float* yr = y.data<float>() + t * y.stride(0);
      for (int64_t d = 0; d < D; ++d) yr[d] = acc[d];
    }
  });
}

}  // namespace moe::reference
