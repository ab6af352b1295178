// Host side of the grouped routed-expert path: resolves ops::ExpertWeights into kernel
// parameters (format checks at the boundary), sizes the scratch, and issues the four launches.
// Used by CudaOps::moe_experts and by bench/moe and `moengine tune-moe`.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/kernels/moe_grouped/moe_grouped.h"
#include "ops/ops.h"

namespace moe::cuda {

// Weights of all experts of one layer in kernel form (pointers into the weights' memory).
struct GroupedExperts {
  GroupedFmt fmt = GroupedFmt::kBf16;
  int64_t D = 0, I = 0, E = 0;  // E: experts in the tables (the shared one included)
  bool shared = false;          // expert E-1 is the shared expert (add_grouped_shared_expert)
  // Slots per token of a call whose ids have K routed columns.
  int64_t slots(int64_t K) const { return K + (shared ? 1 : 0); }
  MoeGemmParams gate_up;  // w[0]/w[1] = gate/up per expert (+ scales)
  MoeGemmParams down;     // w[0] = down per expert (+ scales)
  // Device memory holding grouped_weight_tmaps(*this) (owned by the caller; null: none): the FP8
  // warpgroup-MMA GEMM loads weight tiles by TMA with them (GroupedLaunch::wgmma_tma).
  const void* tmaps = nullptr;
};

// Tensor maps of every expert's weights for the FP8 warpgroup-MMA GEMM's TMA loads: [gate E][up
// E][down E] CUtensorMap (128 bytes each) into `out`, for the caller to copy to device memory
// (64-byte aligned) and set ge.tmaps. False with the reason in *why if the experts are not FP8
// block-128, a shape does not tile (N and K multiples of 128), or the driver refuses a map.
bool grouped_weight_tmaps(const GroupedExperts& ge, std::vector<uint8_t>* out, std::string* why);
// grouped_weight_tmaps(ge) copied into device memory from alloc(bytes), complete on return, for
// ge.tmaps; null, without allocating, if ge has no maps (the reason in *why), or if alloc returns
// null or the copy fails.
const void* upload_grouped_tmaps(const GroupedExperts& ge,
                                 const std::function<void*(size_t)>& alloc, std::string* why);
// What tensor maps of `ge` depend on (format, shapes, layout, every weight pointer): maps built
// for one table serve another only if their keys are equal.
std::vector<uintptr_t> grouped_tmap_key(const GroupedExperts& ge);

// Largest power of two <= 16 dividing every weight and scale pointer of p's experts (null scale
// pointers count as aligned); resolve_grouped_experts stores it in weight_align.
int grouped_weight_align(const MoeGemmParams& p);

// Fills `out` if the grouped kernels take these experts (BF16 dense, FP8 block-128 or NVFP4;
// all experts alike; D and I multiples of the format's k-step and of 32); else false with the
// reason in *why (the caller falls back or fails). Shape/format mismatches between experts are
// MOE_CHECK failures.
bool resolve_grouped_experts(std::span<const ops::ExpertWeights> experts, int64_t D,
                             GroupedExperts* out, std::string* why);

// Appends the shared expert `s` (always active, weight 1) to resolved routed experts as expert E
// if it has their shape, format and layout and the tables have room; else false with the reason in
// *why (the caller then runs it on its own). Never fails a check.
bool add_grouped_shared_expert(const ops::ExpertWeights& s, GroupedExperts* ge, std::string* why);

// The shared expert `s` alone (expert 0, the shared one: calls pass K = 0 routed columns, every
// token has one slot on it with weight 1), for calls that run it apart from the routed experts.
// False with the reason if the grouped kernels do not take it.
bool resolve_grouped_shared_alone(const ops::ExpertWeights& s, int64_t D, GroupedExperts* out,
                                  std::string* why);

struct GroupedScratch {
  void* xa = nullptr;              // [T, D] 16-bit
  int32_t* sorted_slot = nullptr;  // [T*slots] (GroupedExperts::slots)
  int32_t* tiles = nullptr;        // [grouped_max_tiles(...), 4]
  int32_t* num_tiles = nullptr;    // [3]: streaming tiles, big (warpgroup-MMA) tiles, 128-token big
                                   // tiles (MoeGroupParams::big2_min)
  void* h = nullptr;               // [T*slots, I] 16-bit
  float* out = nullptr;            // [T*slots, D]
  // Stream-K workspace of the pipelined GEMMs (sizes: grouped_sk_sizes(launch); none needed
  // otherwise): counters() int32 (zeroed by the group kernel) and partial_floats f32.
  int32_t* sk_counters = nullptr;
  float* sk_partials = nullptr;
  float* slot_w = nullptr;  // [T*slots] f32: routing weight per slot
  // FP8 activations of the warpgroup-MMA GEMM (GroupedLaunch::fp8_act): grouped_fp8_act_bytes
  // bytes, 16-byte aligned (none needed when that is 0).
  uint8_t* q = nullptr;
};
// Rows of GroupedScratch::tiles for tile_tokens-wide tiles (with the hybrid's big-tile list).
int64_t grouped_max_tiles(int64_t T, int64_t K, int64_t E, int tile_tokens);

// y[t] = sum_k weights[t, k] * E_{ids[t, k]}(x[t]) (+ the shared expert's S(x[t]) if ge.shared).
// x, y: [T, D] f32 (row strides x_stride, y_stride), ids/route_w: [T, K] (routed experts only).
// Asynchronous on `stream`; no host synchronisation. accumulate: y += that sum.
void run_grouped_experts(const GroupedExperts& ge, float* y, int64_t y_stride, const float* x,
                         int64_t x_stride, const int32_t* ids, int64_t ids_stride,
                         const float* route_w, int64_t route_w_stride, int64_t T, int64_t K,
                         const GroupedScratch& s, const GroupedLaunch& l, Stream stream,
                         bool accumulate = false);

}  // namespace moe::cuda
