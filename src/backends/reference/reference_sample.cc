// Reference ops: sampling (greedy, temperature, top-k, top-p), seeded and counter-based so that
// every backend draws the same token for the same (seed, step, logits).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "backends/reference/kernels_cpu.h"
#include "backends/reference/reference_ops.h"
#include "ops/sampling_rng.h"

namespace moe::reference {

void ReferenceOps::sample(TensorView out, ConstTensorView logits,
                          std::span<const ops::SamplingParams> params,
                          std::span<const uint64_t> steps) {
  check_f32(logits, 2, "sample.logits");
  const int64_t S = logits.dim(0), V = logits.dim(1);
  MOE_CHECK(out.dtype() == DType::kI32 && out.numel() == S);
  MOE_CHECK(static_cast<int64_t>(params.size()) == S && static_cast<int64_t>(steps.size()) == S);
  for (int64_t s = 0; s < S; ++s) {
    const float* lg = logits.data<float>() + s * logits.stride(0);
    const ops::SamplingParams& p = params[s];
    int32_t chosen = 0;
    if (p.temperature <= 0.f || p.top_k == 1) {
      for (int64_t v = 1; v < V; ++v)
        if (lg[v] > lg[chosen]) chosen = static_cast<int32_t>(v);
    } else {
      std::vector<int64_t> order(V);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t c) { return lg[a] > lg[c]; });
      int64_t keep = p.top_k > 0 ? std::min<int64_t>(p.top_k, V) : V;
      std::vector<double> prob(keep);
      double mx = lg[order[0]] / p.temperature, sum = 0;
      for (int64_t i = 0; i < keep; ++i)
        sum += (prob[i] = std::exp(lg[order[i]] / p.temperature - mx));
      for (double& v : prob) v /= sum;
      if (p.top_p < 1.f) {  // smallest prefix whose mass reaches top_p
        double cum = 0;
        int64_t n = 0;
        while (n < keep && cum < p.top_p) cum += prob[n++];
        keep = std::max<int64_t>(n, 1);
        double mass = 0;
        for (int64_t i = 0; i < keep; ++i) mass += prob[i];
        for (int64_t i = 0; i < keep; ++i) prob[i] /= mass;
      }
      double u = ops::sampling_uniform(p.seed, steps[s]);
      double cum = 0;
      chosen = static_cast<int32_t>(order[keep - 1]);
      for (int64_t i = 0; i < keep; ++i) {
        cum += prob[i];
        if (u < cum) {
          chosen = static_cast<int32_t>(order[i]);
          break;
        }
      }
    }
    out.data<int32_t>()[s] = chosen;
  }
}

}  // namespace moe::reference
