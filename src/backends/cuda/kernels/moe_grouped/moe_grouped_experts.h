// Host side of the grouped routed-expert path: resolves ops::ExpertWeights into kernel
// parameters (format checks at the boundary), sizes the scratch, and issues the four launches.
// Used by CudaOps::moe_experts and by bench/moe and `moengine tune-moe`.
#pragma once

#include <span>
#include <string>

#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"
#include "ops/ops.h"

namespace moe::cuda {

// Weights of all experts of one layer in kernel form (pointers into the weights' memory).
struct GroupedExperts {
  GroupedFmt fmt = GroupedFmt::kBf16;
  int64_t D = 0, I = 0, E = 0;
  MoeGemmParams gate_up;  // w[0]/w[1] = gate/up per expert (+ scales)
  MoeGemmParams down;     // w[0] = down per expert (+ scales)
};

// Largest power of two <= 16 dividing every weight and scale pointer of p's experts (null scale
// pointers count as aligned); resolve_grouped_experts stores it in weight_align.
int grouped_weight_align(const MoeGemmParams& p);

// Fills `out` if the grouped kernels take these experts (BF16 dense, FP8 block-128 or NVFP4;
// all experts alike; D and I multiples of the format's k-step and of 32); else false with the
// reason in *why (the caller falls back or fails). Shape/format mismatches between experts are
// MOE_CHECK failures.
bool resolve_grouped_experts(std::span<const ops::ExpertWeights> experts, int64_t D,
                             GroupedExperts* out, std::string* why);

struct GroupedScratch {
  void* xa = nullptr;              // [T, D] 16-bit
  int32_t* sorted_slot = nullptr;  // [T*K]
  int32_t* tiles = nullptr;        // [grouped_max_tiles(...), 4]
  int32_t* num_tiles = nullptr;    // [2]: streaming tiles, big (warpgroup-MMA) tiles
  void* h = nullptr;               // [T*K, I] 16-bit
  float* out = nullptr;            // [T*K, D]
  // Stream-K workspace of the pipelined GEMMs (sizes: grouped_sk_sizes(launch); none needed
  // otherwise): counters() int32 (zeroed by the group kernel) and partial_floats f32.
  int32_t* sk_counters = nullptr;
  float* sk_partials = nullptr;
};
// Rows of GroupedScratch::tiles for tile_tokens-wide tiles (with the hybrid's big-tile list).
int64_t grouped_max_tiles(int64_t T, int64_t K, int64_t E, int tile_tokens);

// y[t] = sum_k weights[t, k] * E_{ids[t, k]}(x[t]). x, y: [T, D] f32 (row strides x_stride,
// y_stride), ids/route_w: [T, K]. Asynchronous on `stream`; no host synchronisation.
void run_grouped_experts(const GroupedExperts& ge, float* y, int64_t y_stride, const float* x,
                         int64_t x_stride, const int32_t* ids, int64_t ids_stride,
                         const float* route_w, int64_t route_w_stride, int64_t T, int64_t K,
                         const GroupedScratch& s, const GroupedLaunch& l, Stream stream);

}  // namespace moe::cuda
