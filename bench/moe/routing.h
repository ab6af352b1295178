// moe_bench's layer shapes and routing (host only): the measured shapes, the global top-K ids
// of each routing kind, and what the measured GPU's kernels see of them (expert parallel: the
// busiest rank's assignments). See the top of moe_bench.cu for the kinds and the EP model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace moe::bench {

struct LayerShape {
  std::string name;
  int64_t D, I, E, K;  // E: experts on the measured GPU
  int64_t E_global;    // experts routed over (E < E_global: expert parallel)
};

inline bool find_shape(std::string name, LayerShape* out) {
  if (name == "tp8") name = "glm5-tp8";
  if (name == "ep8") name = "glm5-ep8";
  for (const LayerShape& s :
       {LayerShape{"glm5", 6144, 2048, 256, 8, 256}, LayerShape{"dsv3", 7168, 2048, 256, 8, 256},
        LayerShape{"glm5-tp8", 6144, 256, 256, 8, 256},
        LayerShape{"dsv3-tp8", 7168, 256, 256, 8, 256},
        LayerShape{"glm5-ep8", 6144, 2048, 32, 8, 256},
        LayerShape{"dsv3-ep8", 7168, 2048, 32, 8, 256}})
    if (s.name == name) return *out = s, true;
  return false;
}

// Global routing: ids [T, K], K distinct experts of E per token.
//   uniform: partial Fisher-Yates (the same draws as earlier runs of this bench);
//   zipf<s>: Plackett-Luce draw without replacement with popularity 1/(rank+1)^s (Gumbel top-K);
//   hot<N>:  every token takes K distinct experts of the N hottest (N >= K);
//   balanced: slot t K + k takes expert perm[(t K + k) mod E], so every expert holds T K / E slots
//            (rounded down or up) and a token K distinct ones (K <= E): a perfectly balanced
//            router, the tile GEMMs' best case (no expert's count short of a whole tile by chance).
// Popularity rank r is expert perm[r] (a fixed random permutation, the same for every T).
inline bool global_routing(const std::string& kind, int64_t T, int64_t E, int64_t K, uint32_t seed,
                           std::vector<int32_t>* out) {
  std::mt19937 rng(seed);
  std::vector<int32_t>& ids = *out;
  ids.assign(T * K, 0);
  std::vector<int32_t> all(E), perm(E);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(77));
  if (kind == "uniform") {
    for (int64_t t = 0; t < T; ++t) {
      std::iota(all.begin(), all.end(), 0);
      for (int64_t k = 0; k < K; ++k) {  // partial Fisher-Yates
        std::uniform_int_distribution<int64_t> d(k, E - 1);
        std::swap(all[k], all[d(rng)]);
        ids[t * K + k] = all[k];
      }
    }
    return true;
  }
  if (kind.rfind("zipf", 0) == 0) {
    char* end = nullptr;
    const double sz = std::strtod(kind.c_str() + 4, &end);
    if (end == kind.c_str() + 4 || *end != 0 || !(sz >= 0) || sz > 10) return false;
    std::vector<double> logp(E), key(E);
    for (int64_t r = 0; r < E; ++r) logp[r] = -sz * std::log(static_cast<double>(r + 1));
    std::uniform_real_distribution<double> u(1e-12, 1.0);
    std::vector<int32_t> order(E);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t r = 0; r < E; ++r) key[r] = logp[r] - std::log(-std::log(u(rng)));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + K, order.end(),
                        [&](int32_t a, int32_t b) { return key[a] > key[b]; });
      for (int64_t k = 0; k < K; ++k) ids[t * K + k] = perm[order[k]];
    }
    return true;
  }
  if (kind == "balanced") {
    if (K > E) return false;
    for (int64_t i = 0; i < T * K; ++i) ids[i] = perm[i % E];
    return true;
  }
  if (kind.rfind("hot", 0) == 0) {
    const int64_t n = std::atoll(kind.c_str() + 3);
    if (n < K || n > E) return false;
    std::vector<int32_t> hot(perm.begin(), perm.begin() + n);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t k = 0; k < K; ++k) {
        std::uniform_int_distribution<int64_t> d(k, n - 1);
        std::swap(hot[k], hot[d(rng)]);
        ids[t * K + k] = hot[k];
      }
    }
    return true;
  }
  return false;
}

// What the measured GPU's kernels see: rows x k ids in [0, E), and the experts it touches.
struct LocalRouting {
  std::vector<int32_t> ids;
  int64_t rows = 0, k = 0, unique = 0, rank = 0;
};

inline LocalRouting local_routing(const LayerShape& sh, const std::vector<int32_t>& global,
                                  int64_t T) {
  LocalRouting r;
  if (sh.E == sh.E_global) {
    r.ids = global;
    r.rows = T;
    r.k = sh.K;
  } else {  // expert parallel: the busiest rank's assignments, one row each (see the top)
    std::vector<int64_t> per_rank(sh.E_global / sh.E, 0);
    for (int32_t e : global) ++per_rank[e / sh.E];
    r.rank = std::max_element(per_rank.begin(), per_rank.end()) - per_rank.begin();
    for (int32_t e : global)
      if (e / sh.E == r.rank) r.ids.push_back(static_cast<int32_t>(e - r.rank * sh.E));
    r.rows = static_cast<int64_t>(r.ids.size());
    r.k = 1;
  }
  r.unique = static_cast<int64_t>(std::set<int32_t>(r.ids.begin(), r.ids.end()).size());
  return r;
}

}  // namespace moe::bench
