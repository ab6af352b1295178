// Grouped routed experts: weight resolution and the launch sequence (see the header).
#include "backends/cuda/kernels/moe_grouped/moe_grouped_experts.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "backends/cuda/kernels/moe_grouped/dequant_bits.h"
#include "backends/cuda/kernels/moe_grouped/moe_grouped_rules.h"
#include "backends/cuda/kernels/moe_grouped/stream_k.h"
#include "core/check.h"

namespace moe::cuda {
namespace {

struct Mat {
  const void* data;
  const void* scale;
  float gs;
  bool packed;  // data (and nvfp4 scales) in the packed layout
};

// Empty if w is a contiguous [N, Kd] matrix of format f; else what differs.
std::string mismatch(const ops::Weight& w, GroupedFmt f, int64_t N, int64_t Kd) {
  if (w.rows() != N || w.cols() != Kd || !w.data.is_contiguous())
    return w.data.shape().to_string() + " (expected " + std::to_string(N) + " x " +
           std::to_string(Kd) + ", contiguous)";
  switch (f) {
    case GroupedFmt::kBf16:
      if (w.format == ops::WeightFormat::kDense && w.data.dtype() == DType::kBF16) return {};
      return "is not BF16";
    case GroupedFmt::kFp8Block:
      if (w.format == ops::WeightFormat::kFp8Block && w.data.dtype() == DType::kF8E4M3 &&
          w.block == 128 && w.scale.dtype() == DType::kF32 && w.scale.is_contiguous() &&
          w.scale.rank() == 2 && w.scale.dim(0) == (N + 127) / 128 &&
          w.scale.dim(1) == (Kd + 127) / 128)
        return {};
      return "fp8 block weight " + w.data.shape().to_string() + " scale " +
             w.scale.shape().to_string() + " block " + std::to_string(w.block) +
             " (expected F8_E4M3 data, F32 scale per 128 x 128)";
    case GroupedFmt::kNvfp4:
      if (w.format == ops::WeightFormat::kNvfp4 && w.data.dtype() == DType::kU8 &&
          w.scale.dtype() == DType::kF8E4M3 && w.scale.is_contiguous() && w.scale.rank() == 2 &&
          w.scale.dim(0) == N && w.scale.dim(1) * 16 == Kd)
        return {};
      return "nvfp4 weight " + w.data.shape().to_string() + " scale " +
             w.scale.shape().to_string() + " (expected U8 [N, K/2] data, F8_E4M3 [N, K/16] scale)";
  }
  return "unknown format";
}

// Validates one matrix [N, Kd] of format f (like expert 0's) and returns its pointers.
Mat matrix(const ops::Weight& w, GroupedFmt f, int64_t N, int64_t Kd, const char* what, int64_t e) {
  const std::string bad = mismatch(w, f, N, Kd);
  MOE_CHECK(bad.empty()) << "moe_experts: expert " << e << " " << what << " " << bad
                         << " (all experts must match expert 0)";
  return {w.data.raw(), w.scale.raw(), f == GroupedFmt::kNvfp4 ? w.global_scale : 1.f,
          w.layout == ops::WeightLayout::kPacked};
}

// weight_align of both GEMMs after the tables change.
void set_weight_align(GroupedExperts* ge) {
  ge->gate_up.weight_align = ge->down.weight_align =
      std::min(grouped_weight_align(ge->gate_up), grouped_weight_align(ge->down));
}

// Expert e's pointers in the tables.
void put_expert(GroupedExperts* out, int64_t e, const Mat& g, const Mat& u, const Mat& d) {
  out->gate_up.w[0][e] = g.data;
  out->gate_up.s[0][e] = g.scale;
  out->gate_up.gs[0][e] = g.gs;
  out->gate_up.w[1][e] = u.data;
  out->gate_up.s[1][e] = u.scale;
  out->gate_up.gs[1][e] = u.gs;
  out->down.w[0][e] = d.data;
  out->down.s[0][e] = d.scale;
  out->down.gs[0][e] = d.gs;
}

}  // namespace

int grouped_weight_align(const MoeGemmParams& p) {
  int align = 16;
  for (int m = 0; m < (p.gate_up ? 2 : 1); ++m)
    for (int e = 0; e < kMaxGroupedExperts && p.w[m][e] != nullptr; ++e)
      for (const void* ptr : {p.w[m][e], p.s[m][e]})
        while (reinterpret_cast<uintptr_t>(ptr) % align != 0) align /= 2;
  return align;
}

bool resolve_grouped_experts(std::span<const ops::ExpertWeights> experts, int64_t D,
                             GroupedExperts* out, std::string* why) {
  const int64_t E = static_cast<int64_t>(experts.size());
  if (E < 1 || E > kMaxGroupedExperts) {
    *why = "expert count " + std::to_string(E) + " (grouped path: 1.." +
           std::to_string(kMaxGroupedExperts) + ")";
    return false;
  }
  const ops::Weight& g0 = experts[0].gate;
  GroupedFmt f;
  switch (g0.format) {
    case ops::WeightFormat::kDense:
      if (g0.data.dtype() != DType::kBF16) {
        *why = "dense weights that are not BF16";
        return false;
      }
      f = GroupedFmt::kBf16;
      break;
    case ops::WeightFormat::kFp8Block:
      f = GroupedFmt::kFp8Block;
      break;
    case ops::WeightFormat::kNvfp4:
      f = GroupedFmt::kNvfp4;
      break;
    default:
      *why = "unknown weight format";
      return false;
  }
  const int64_t I = g0.rows(), km = grouped_k_multiple(f);
  if (D % km != 0 || I % km != 0 || D % 32 != 0 || I % 32 != 0) {
    *why = "D " + std::to_string(D) + " and I " + std::to_string(I) + " must be multiples of " +
           std::to_string(std::max<int64_t>(km, 32));
    return false;
  }
  out->fmt = f;
  out->D = D;
  out->I = I;
  out->E = E;
  for (MoeGemmParams* p : {&out->gate_up, &out->down}) {
    p->fmt = static_cast<int>(f);
    p->gate_up = p == &out->gate_up;
    p->N = p->gate_up ? I : D;
    p->Kd = p->gate_up ? D : I;
  }
  for (int64_t e = 0; e < E; ++e) {
    const Mat g = matrix(experts[e].gate, f, I, D, "gate", e);
    const Mat u = matrix(experts[e].up, f, I, D, "up", e);
    const Mat d = matrix(experts[e].down, f, D, I, "down", e);
    // One layout per layer (prepare_experts packs all of a layer's experts or none).
    if (e == 0) out->gate_up.packed = out->down.packed = g.packed;
    MOE_CHECK(g.packed == out->gate_up.packed && u.packed == g.packed && d.packed == g.packed)
        << "moe_experts: expert " << e << " mixes packed and row-major weights (expert 0: "
        << (out->gate_up.packed ? "packed" : "row-major") << ")";
    put_expert(out, e, g, u, d);
  }
  set_weight_align(out);
  return true;
}

bool add_grouped_shared_expert(const ops::ExpertWeights& s, GroupedExperts* ge, std::string* why) {
  if (ge->shared) {
    *why = "a shared expert is already in the tables";
    return false;
  }
  if (ge->E + 1 > kMaxGroupedExperts) {
    *why = std::to_string(ge->E) + " routed experts leave no room for the shared one";
    return false;
  }
  const int64_t E = ge->E;
  const ops::Weight* m[3] = {&s.gate, &s.up, &s.down};
  const char* names[3] = {"gate", "up", "down"};
  for (int i = 0; i < 3; ++i) {
    const bool down = i == 2;
    std::string bad = mismatch(*m[i], ge->fmt, down ? ge->D : ge->I, down ? ge->I : ge->D);
    if (bad.empty() && (m[i]->layout == ops::WeightLayout::kPacked) != ge->gate_up.packed)
      bad = std::string(ge->gate_up.packed ? "row-major" : "packed") + " (routed: the other)";
    if (!bad.empty()) {
      *why = std::string("shared expert ") + names[i] + " " + bad + " (routed experts: I " +
             std::to_string(ge->I) + ", D " + std::to_string(ge->D) + ")";
      return false;
    }
  }
  const Mat g = matrix(s.gate, ge->fmt, ge->I, ge->D, "gate", E);
  const Mat u = matrix(s.up, ge->fmt, ge->I, ge->D, "up", E);
  const Mat d = matrix(s.down, ge->fmt, ge->D, ge->I, "down", E);
  put_expert(ge, E, g, u, d);
  ge->E = E + 1;
  ge->shared = true;
  set_weight_align(ge);
  return true;
}

bool resolve_grouped_shared_alone(const ops::ExpertWeights& s, int64_t D, GroupedExperts* out,
                                  std::string* why) {
  if (!resolve_grouped_experts(std::span<const ops::ExpertWeights>(&s, 1), D, out, why))
    return false;
  out->shared = true;  // expert 0 = E-1 takes every token's only slot
  return true;
}

namespace {
// A share in thousandths for the grouping kernel's gates (MoeGroupParams::big_min_share,
// big2_min_share): rounded up, 1..1000; 0 (no gate) for a share of 0 or less.
int share_thousandths(double share) {
  return share > 0 ? static_cast<int>(std::clamp(std::ceil(share * 1000), 1.0, 1000.0)) : 0;
}

// Tiles of one list: every expert's last tile may be partial.
int64_t list_tiles(int64_t TK, int64_t E, int tile_tokens) {
  return std::max<int64_t>(1, (TK + tile_tokens - 1) / tile_tokens + std::min(E, TK));
}

// cuTensorMapEncodeTiled through the runtime's driver entry point (no link against libcuda).
PFN_cuTensorMapEncodeTiled_v12000 tmap_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// GroupedLaunch::down_act_tma: the 2-D map of down's E4M3 activations (rows x cols bytes,
// row-major, 16-byte aligned) in boxes of box_rows rows (the kernel's tile: 128, P2's 64) x 128
// bytes, 128-byte swizzled (the layout the producers' cp.async gives the stage: grouped::swz);
// rows past the end read as zeros.
bool encode_act_tmap(const void* base, int64_t rows, int64_t cols, int box_rows,
                     unsigned char* out) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tmap_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols)};
  const cuuint32_t box[2] = {128, static_cast<cuuint32_t>(box_rows)}, elem[2] = {1, 1};
  CUtensorMap map;
  if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides, box,
             elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    return false;
  std::memcpy(out, &map, 128);
  return true;
}

// grouped_x_pos_counts
std::atomic<int64_t> x_pos_calls{0}, x_pos_copies{0}, f4_down_tma_calls{0}, x_pos_scatters{0};
std::atomic<int64_t> box64_gemms{0};          // GroupedXPosCounts::box64
std::atomic<int64_t> early_gate_up_calls{0};  // grouped_early_gate_up_calls
std::atomic<int64_t> early_down_calls{0};     // grouped_early_down_calls
std::atomic<int64_t> f4p2_calls{0};           // grouped_f4p2_calls
std::atomic<int64_t> f4p2_split_calls{0};     // grouped_f4p2_split_calls
std::atomic<int64_t> deferred_launches{0};    // grouped_deferred_launches
std::atomic<int64_t> bf16_tma_gemms{0};       // grouped_bf16_tma_gemms
}  // namespace

GroupedXPosCounts grouped_x_pos_counts() {
  return {x_pos_calls.load(), x_pos_copies.load(), f4_down_tma_calls.load(), x_pos_scatters.load(),
          box64_gemms.load()};
}
int64_t grouped_early_gate_up_calls() { return early_gate_up_calls.load(); }
int64_t grouped_early_down_calls() { return early_down_calls.load(); }
int64_t grouped_f4p2_calls() { return f4p2_calls.load(); }
int64_t grouped_bf16_tma_gemms() { return bf16_tma_gemms.load(); }
int64_t grouped_f4p2_split_calls() { return f4p2_split_calls.load(); }
int64_t grouped_deferred_launches() { return deferred_launches.load(); }

int grouped_hybrid_min_tiles(const GroupedLaunch& l, GroupedFmt f, int64_t D, int64_t I) {
  if (!(l.hybrid_min_bytes > 0) || D <= 0 || I <= 0) return 0;
  // gate_up (2 I rows of D) + down (D rows of I), plus NVFP4's one scale byte per 16 weights (FP8's
  // per-128x128 scales are negligible).
  const double weights = 3.0 * static_cast<double>(D) * static_cast<double>(I);
  const double expert_bytes = static_cast<double>(2 * I * grouped::grouped_row_bytes(f, D) +
                                                  D * grouped::grouped_row_bytes(f, I)) +
                              (f == GroupedFmt::kNvfp4 ? weights / 16 : 0.0);
  return static_cast<int>(
      std::min(1e9, std::max(1.0, std::ceil(l.hybrid_min_bytes / expert_bytes))));
}

int grouped_hybrid_min_share(const GroupedLaunch& l) {
  return l.hybrid_min_bytes > 0 ? share_thousandths(l.hybrid_min_share) : 0;
}

int64_t grouped_max_tiles(int64_t T, int64_t K, int64_t E, int tile_tokens) {
  // The streaming list, then room for the hybrid's big-tile list (of its smaller tiles:
  // MoeGroupParams::big_tile) and for its third list of 128-token tiles (MoeGroupParams::big2_min).
  return list_tiles(T * K, E, tile_tokens) + list_tiles(T * K, E, kGroupedF4p2Tile) +
         list_tiles(T * K, E, kGroupedBigTile);
}

void run_grouped_experts(const GroupedExperts& ge, float* y, int64_t y_stride, const float* x,
                         int64_t x_stride, const int32_t* ids, int64_t ids_stride,
                         const float* route_w, int64_t route_w_stride, int64_t T, int64_t K,
                         const GroupedScratch& s, const GroupedLaunch& l, Stream stream,
                         bool accumulate) {
  if (T == 0) return;
  const int64_t KS = ge.slots(K);  // slots per token
  MOE_CHECK(s.xa && s.sorted_slot && s.tiles && s.num_tiles && s.h && s.out && s.slot_w)
      << "moe_experts: GroupedScratch needs xa, sorted_slot, tiles, num_tiles, h, out, slot_w";
  MoeGroupParams gp;
  gp.x = x;
  gp.x_stride = x_stride;
  gp.ids = ids;
  gp.ids_stride = ids_stride;
  gp.T = T;
  gp.D = ge.D;
  gp.K = KS;
  gp.E = ge.E;
  gp.shared = ge.shared;
  gp.fmt = static_cast<int>(ge.fmt);
  gp.tile_tokens = 8 * l.nb;
  gp.route_w = route_w;
  gp.route_w_stride = route_w_stride;
  gp.slot_w = s.slot_w;
  gp.xa = s.xa;
  gp.sorted_slot = s.sorted_slot;
  gp.tiles = s.tiles;
  gp.num_tiles = s.num_tiles;
  gp.max_tiles = list_tiles(T * KS, ge.E, gp.tile_tokens);
  // Hybrid: experts with many tokens of this call go to the warpgroup-MMA GEMM.
  const bool hybrid = grouped_hybrid(l, T);
  if (hybrid) {
    gp.big_min = l.wgmma_min_tokens;
    gp.big_min_tiles = grouped_hybrid_min_tiles(l, ge.fmt, ge.D, ge.I);
    gp.big_min_share = grouped_hybrid_min_share(l);
    gp.big_share_min = l.hybrid_share_min_tokens;
    gp.big_tiles = s.tiles + 4 * gp.max_tiles;
    gp.num_big = s.num_tiles + 1;
  }
  // FP8 activations for the warpgroup-MMA GEMM: x quantized by the group kernel; h in gate_up's
  // epilogue (GroupedLaunch::wgmma_hquant: into h's scratch, unused otherwise when every expert is
  // on the warpgroup-MMA GEMM, else after x's region of q), or by moe_quant_rows after gate_up
  // (into x's region: x is no longer needed then).
  // NVFP4 in FP8 copies the scales in 4-byte words: with scale matrices less aligned than that
  // (a checkpoint's own buffers) the F16 kernel runs, in the same scratch.
  const bool f8 = grouped_fp8_act_bytes(l, ge.fmt, T, ge.D, ge.I, KS) > 0 &&
                  (ge.fmt != GroupedFmt::kNvfp4 || ge.gate_up.weight_align >= 4);
  // F4's full launch below l.f4p2_max_mean slots per expert, or the hybrid's big tiles
  // (l.f4p2_big), on the P2 kernel's 64-token tiles. (F4 on the hybrid never splits gate_up:
  // grouped_fp8_act_bytes.)
  const bool f4p2 =
      f8 && ge.fmt == GroupedFmt::kNvfp4 &&
      (l.wgmma ? T * KS < static_cast<int64_t>(l.f4p2_max_mean) * ge.E
               : hybrid && (l.f4p2_big == 2 || (l.f4p2_big == 1 && T <= kGroupedF4p2Tile)));
  // P2 split by expert (GroupedLaunch::f4p2_split): experts of at least that many slots on
  // 128-token tiles for the one-producer kernel, in a list of their own: the full launch's second
  // list, or the hybrid's third (after its 64-token big tiles: MoeGroupParams::big2_min). The
  // scratch holds them: grouped_max_tiles reserves a list of 64-token and one of 128-token tiles
  // after the streaming one.
  const bool f4p2_split = f4p2 && l.f4p2_split > 0 && l.wgmma_hquant;
  if (f4p2) {
    ++f4p2_calls;
    if (hybrid) {
      gp.big_tile = kGroupedF4p2Tile;
    } else {
      gp.tile_tokens = kGroupedF4p2Tile;
      gp.max_tiles = list_tiles(T * KS, ge.E, gp.tile_tokens);
    }
  }
  // The one-producer kernel's list and count with the split.
  const int32_t* split_tiles = nullptr;
  const int32_t* split_num = nullptr;
  // (The hybrid splits only from T >= f4p2_split: an expert holds at most T slots.)
  if (f4p2_split && hybrid && T >= l.f4p2_split) {
    ++f4p2_split_calls;
    gp.big2_min = l.f4p2_split;
    gp.big2_min_share = share_thousandths(l.f4p2_split_share);
    gp.big2_tiles = gp.big_tiles + 4 * list_tiles(T * KS, ge.E, kGroupedF4p2Tile);
    gp.num_big2 = s.num_tiles + 2;
    split_tiles = gp.big2_tiles, split_num = gp.num_big2;
  } else if (f4p2_split && !hybrid) {
    ++f4p2_split_calls;
    gp.big_min = l.f4p2_split;  // (no gate without a share: big_min_tiles 0)
    gp.big_min_share = share_thousandths(l.f4p2_split_share);
    // With a share, only where they hold it of the call's 8-token tiles (no bytes bound).
    if (gp.big_min_share > 0) gp.big_min_tiles = 1000000000;
    gp.big_tile = kGroupedBigTile;
    gp.big_tiles = s.tiles + 4 * gp.max_tiles;
    gp.num_big = s.num_tiles + 1;
    split_tiles = gp.big_tiles, split_num = gp.num_big;
  }
  // Tokens per tile of the warpgroup-MMA GEMM's list (the bound of moe_quant_rows below).
  const int wg_tile = hybrid ? gp.big_tile : gp.tile_tokens;
  uint8_t* q = nullptr;
  float* qs = nullptr;
  uint8_t* hq = nullptr;  // h's E4M3 codes and scales for down (q, qs without wgmma_hquant)
  float* hqs = nullptr;
  if (f8) {
    MOE_CHECK(s.q != nullptr && reinterpret_cast<uintptr_t>(s.q) % 16 == 0)
        << "moe_experts: FP8 activations need GroupedScratch::q (grouped_fp8_act_bytes, 16-byte "
           "aligned)";
    q = s.q;
    qs = reinterpret_cast<float*>(s.q + grouped_fp8_act_data_bytes(T, ge.D, ge.I, KS));
    gp.xq = q;
    gp.xq_scale = qs;
    if (l.wgmma) gp.xa = nullptr;  // every expert's GEMMs read xq: no 16-bit copy of x
    hq = q, hqs = qs;
    if (l.wgmma_hquant) {
      MOE_CHECK(reinterpret_cast<uintptr_t>(s.h) % 16 == 0)
          << "moe_experts: GroupedScratch::h must be 16-byte aligned";
      hq = l.wgmma ? static_cast<uint8_t*>(s.h) : q + grouped_fp8_h_offset(T, ge.D, ge.I, KS);
      hqs = reinterpret_cast<float*>(hq + (T * KS * ge.I + 15) / 16 * 16);
    }
  }
  const bool act_t = grouped_act_transposed(l, ge.fmt, ge.D, ge.I);
  gp.act_t = act_t;
  // 2-CTA clusters sharing weight tiles (GroupedLaunch::wgmma_pairs): the list holds pair units.
  // (BF16: GroupedLaunch::bf16_ws 2 with bf16_tma.)
  const bool bf16_tmaps =
      ge.fmt == GroupedFmt::kBf16 && l.bf16_tma && l.wgmma_tma && ge.tmaps != nullptr;
  const bool pairs = ((f8 && l.wgmma_tma && l.wgmma_pairs && ge.tmaps != nullptr) ||
                      (bf16_tmaps && l.bf16_ws == 2)) &&
                     l.wgmma && !hybrid && gp.tile_tokens == 128 && ge.I % 256 == 0 &&
                     ge.D % 512 == 0;
  gp.pair_units = pairs;
  // A list one warp can build in registers (group_one_warp, early_gate_up): at most 32 slots, no
  // pair units, no big tiles (an expert holds at most T * KS slots).
  const bool warp_list = T * KS <= 32 && !pairs && (gp.big_min <= 0 || gp.big_min > T * KS);
  gp.one_warp = l.group_one_warp && warp_list;
  const GroupedSkSizes sk = grouped_sk_sizes(l);
  if (sk.warps > 0) {
    MOE_CHECK(s.sk_counters != nullptr && s.sk_partials != nullptr)
        << "moe_experts: the pipelined launch needs GroupedScratch::sk_counters / sk_partials";
    gp.zero = s.sk_counters;
    gp.zero_count = sk.counters();
  }
  // Split-K of the hybrid's gate_up (grouped_hybrid_split_k): counters (one per item: big tile x
  // 256-row block) then partial sums, in out (only down writes it, after gate_up).
  float* split_partials = nullptr;
  int64_t split_bytes = 0;
  int32_t* split_counters = nullptr;
  int32_t split_cap = 0;
  if (hybrid && grouped_hybrid_split_k(l, ge.fmt, T, ge.I) &&
      !(f8 && ge.fmt == GroupedFmt::kNvfp4)) {
    // The kernels split only where the items fill at most half their grid (sm_count CTAs), so
    // at most sm_count / 2 items need a counter; fewer when the call cannot have that many: at
    // most T K / big_tile + T K / big_min big tiles (each big expert's last one partial), I / 128
    // items each. Calls with more items than counters run unsplit (ws_split_count).
    const int64_t cap = std::min<int64_t>(
        std::max(1, l.sm_count / 2),
        (T * KS / gp.big_tile + 1 + T * KS / std::max(1, l.wgmma_min_tokens)) * (ge.I / 128));
    const int64_t counter_floats = (cap + 63) / 64 * 64;  // 256-byte aligned partials
    const int64_t bytes = (T * KS * ge.D - counter_floats) * 4;
    if (bytes >= grouped::kWsSplitItemBytes) {
      split_counters = reinterpret_cast<int32_t*>(s.out);
      split_cap = static_cast<int32_t>(cap);
      split_partials = s.out + counter_floats;
      split_bytes = bytes;
      gp.zero2 = split_counters;
      gp.zero2_count = cap;
    }
  }
  // The multi-block grouping's counts live in h, which gate_up writes only after the grouping.
  gp.chunk_hist = reinterpret_cast<int32_t*>(s.h);
  gp.chunk_hist_bytes = T * KS * ge.I * 2;
  // GroupedLaunch::group_yields: gate_up launches when the grouping's blocks exit, and the
  // grouping's carveout holds gate_up's ring CTAs (their shared memory per SM, the driver's 1 KB
  // per CTA included).
  gp.late_trigger = l.group_yields;
  int64_t ring_smem = 0;
  if (l.group_yields && l.pipelined && !l.tc && !l.wgmma)
    ring_smem =
        static_cast<int64_t>(l.ctas_per_sm) *
        (static_cast<int64_t>(l.warps_per_cta) * grouped_pipe_warp_bytes(ge.fmt, true) + 1024);
  // GroupedLaunch::x_pos: x's codes by position in out (free until down writes it); in place
  // when positions are tokens (the shared expert alone: expert 0 = E - 1 takes every token's only
  // slot, whatever the ids say, in token order).
  const uint8_t* xs = nullptr;
  // NVFP4 with FP8 activations (f8) runs on the F4 kernel, which takes the boxes as FP8's
  // warp-specialized kernels do (its weights come from its producers, not tensor maps).
  const bool f4 = f8 && ge.fmt == GroupedFmt::kNvfp4;
  const bool ws_f8 = f8 && ge.fmt == GroupedFmt::kFp8Block && l.wgmma_tma && ge.tmaps != nullptr;
  const bool by_pos = (ws_f8 || f4) && grouped_x_pos(l, T, KS, ge.E, ge.I) && l.down_act_tma &&
                      l.wgmma && !hybrid && split_counters == nullptr;
  const bool in_place = ge.shared && ge.E == 1 && KS == 1;
  // GroupedLaunch::x_pos_scatter: the placement also writes each slot's position, after the copy
  // in out (T K D bytes, 256-byte aligned; out holds 4 T K D), for the copy by token. Not with the
  // one-warp list or one round of placement (T K <= 32), which do not write them.
  uint8_t* const copy = reinterpret_cast<uint8_t*>(s.out);
  if (by_pos && !in_place && l.x_pos_scatter && T * KS > 32 && !gp.one_warp)
    gp.slot_pos = reinterpret_cast<int32_t*>(copy + (T * KS * ge.D + 255) / 256 * 256);
  launch_moe_group(gp, stream, l.pdl, ring_smem);
  if (by_pos) {
    if (in_place) {
      xs = q;
    } else {
      if (gp.slot_pos != nullptr) {
        launch_moe_x_pos_scatter(q, gp.slot_pos, T, static_cast<int>(KS), ge.D, copy, l.sm_count,
                                 stream, l.pdl);
        ++x_pos_scatters;
      } else {
        launch_moe_x_pos(q, s.sorted_slot, T * KS, static_cast<int>(KS), ge.D, copy, l.sm_count,
                         stream, l.pdl);
      }
      xs = copy;
      ++x_pos_copies;
    }
  }

  // Each GEMM: the configured kernel over `tiles`; with the hybrid also the warpgroup-MMA kernel
  // over the big tiles' list.
  GroupedLaunch lb = l;
  lb.nb = kGroupedBigTile / 8;
  lb.warps_per_cta = 8;
  lb.ctas_per_sm = 1;
  lb.pipelined = false;
  lb.tc = lb.wgmma = true;
  lb.pdl = l.pdl || (hybrid && l.hybrid_pdl);  // = l.pdl without the hybrid (wgmma launches)
  if (hybrid && grouped_hybrid_tile_gemm(l, ge.fmt, T)) {
    // BF16 big tiles of <= 64 tokens: the 64-token mma.sync tile GEMM, two CTAs per SM (the
    // list's 128-token tiles then hold <= 64 tokens each).
    lb.nb = kGroupedNarrowTcTile / 8;
    lb.ctas_per_sm = 2;
    lb.wgmma = false;
  }
  // The warpgroup-MMA GEMM's tiles (the whole list with a wgmma launch, else the big tiles).
  const int32_t* wg_tiles = hybrid ? gp.big_tiles : s.tiles;
  const int32_t* wg_num = hybrid ? gp.num_big : s.num_tiles;
  // The activation map of a warpgroup-MMA GEMM in boxes of `rows` (its tile): gate_up's x codes
  // by position (xs), down's h codes (hq); T * KS rows either way.
  auto encode_act = [&](MoeGemmParams& p, int rows) {
    return encode_act_tmap(p.gate_up ? xs : hq, T * KS, p.gate_up ? ge.D : ge.I, rows, p.act_tmap);
  };
  auto gemm = [&](MoeGemmParams& p, const GroupedLaunch& ls, int32_t* sk_counters) {
    p.K = KS;
    p.sk_counters = sk_counters;
    p.sk_partials = s.sk_partials;
    p.sorted_slot = s.sorted_slot;
    if (!l.wgmma) {  // the streaming (or mma.sync tile) GEMM over the streaming list
      p.tiles = s.tiles;
      p.num_tiles = s.num_tiles;
      launch_moe_gemm(p, ls, stream);
      if (!hybrid) return;
    }
    p.tiles = wg_tiles;  // the warpgroup-MMA GEMM, on FP8 activations when f8
    p.num_tiles = wg_num;
    // Weight tiles by TMA: [gate E][up E][down E] maps (FP8 with wgmma_tma; BF16 with
    // GroupedLaunch::bf16_tma, where launch_wgmma_bn takes the kernel: not for split-K).
    if (f8 ? l.wgmma_tma && ge.tmaps != nullptr : bf16_tmaps) {
      p.tmap = static_cast<const uint8_t*>(ge.tmaps) + (p.gate_up ? 0 : 2 * ge.E * 128);
      p.tmap_e = ge.E;
      if (bf16_tmaps) ++bf16_tma_gemms;
    }
    p.pairs = pairs;
    p.bf16_defer = bf16_tmaps && l.bf16_defer;
    if (f8) {
      p.narrow = hybrid ? grouped_hybrid_narrow(l, T) : grouped_wgmma_narrow(l, T, KS, ge.E, f4);
      // GroupedLaunch::narrow_act_box: the FP8 NARROW instance's boxes of 64 rows (two per tile
      // that is not narrow).
      p.act_box64 = l.narrow_act_box && p.narrow && !f4;
      const int box_rows = f4p2 || p.act_box64 ? kGroupedF4p2Tile : kGroupedBigTile;
      p.act = p.gate_up ? q : hq;
      p.act_scale = p.gate_up ? qs : hqs;
      if (p.gate_up && l.wgmma_hquant) p.hq = hq, p.hq_scale = hqs;
      if (!p.gate_up && l.down_act_tma && (ws_f8 || f4)) {
        // A map the driver refuses (it should not: h is 256-byte aligned, I a multiple of 128)
        // leaves down on the producers' gather, which gives the same bits.
        p.act_tma = encode_act(p, box_rows);
        if (p.act_tma && f4) ++f4_down_tma_calls;
      }
      if (p.gate_up && xs != nullptr) {  // x's codes by position (T * KS rows of D bytes)
        p.act_tma = encode_act(p, box_rows);
        if (p.act_tma) ++x_pos_calls;
      }
      p.act_box64 = p.act_box64 && p.act_tma;
      if (p.act_box64) ++box64_gemms;
      p.f4p2 = f4p2;
    }
    const GroupedLaunch& lw = l.wgmma ? l : lb;
    // GroupedLaunch::sibling_defer: a launch after the GEMM's first, with PDL, waits at its end
    // (where its kernel takes MoeGemmParams::defer_wait; the others wait first).
    const bool defer = l.sibling_defer && lw.pdl;
    auto launch = [&](bool deferred) {
      p.defer_wait = deferred;
      deferred_launches += deferred ? 1 : 0;
      launch_moe_gemm(p, lw, stream);
      p.defer_wait = false;
    };
    launch(defer && !l.wgmma);     // (with l.wgmma this launch is the GEMM's first)
    if (split_tiles != nullptr) {  // the big experts' 128-token tiles on the one-producer kernel
      p.tiles = split_tiles;
      p.num_tiles = split_num;
      p.f4p2 = false;
      p.narrow = false;
      p.act_box64 = false;
      if (p.act_tma)  // its activation boxes of 128 rows (P2's are 64; refused: the gather)
        p.act_tma = encode_act(p, kGroupedBigTile);
      launch(defer);
    }
  };
  // The NVFP4 ring's items of two sub-blocks, per GEMM, from the expected tile count (unless the
  // launch says; the count only for launches whose kernel has them).
  GroupedLaunch lg = l, ld = l;
  lg.pdl = l.pdl || l.pdl_light;  // gate_up after the grouping kernel (pdl_light)
  // The hybrid with h quantized in the warpgroup-MMA gate_up's epilogue: the streaming down
  // follows that launch directly (no moe_quant_rows between them), and with PDL its early CTAs
  // cost uniform / zipf decode 1-3% (H200, session 31: TP8 uniform T 128 359.7 -> 351.0 us
  // without; hot experts level to 2.7% slower). So it waits for the warpgroup-MMA launch.
  if (hybrid && f8 && l.wgmma_hquant) ld.pdl = false;
  if (l.pipe_r2 < 0 && grouped_pipe_r2_kernel(l, ge.fmt)) {
    const double tiles = grouped_expected_tiles(T, KS, ge.E, ge.shared, gp.tile_tokens);
    lg.pipe_r2 = grouped_pipe_r2(l, ge.fmt, ge.I, true, tiles);
    ld.pipe_r2 = grouped_pipe_r2(l, ge.fmt, ge.D, false, tiles);
  }
  MoeGemmParams p1 = ge.gate_up;
  p1.act = s.xa;
  p1.act_t = act_t;
  p1.out = s.h;
  p1.split_partials = split_partials;  // (the streaming kernels ignore it)
  p1.split_bytes = split_bytes;
  p1.split_counters = split_counters;
  p1.split_counters_cap = split_cap;
  // GroupedLaunch::ring_dynamic where the GEMM is expected to qualify (stream_k_dynamic: enough
  // rounds of long items, by the expected tiles of uniform routing; the dynamic kernel is right
  // for any count): the NVFP4 ring with 8-token tiles and two-step stages (other rings have no
  // dynamic instance and ignore sk_claim). Measured and dropped (docs/perf.md session 37): items
  // of two sub-blocks (36-48 bytes of spills, level or slower) and 16-token tiles (no spills
  // with the one-register claim queue, but T 192 / 384 3.4 / 0.8% faster, T 256 / 512 3.4 /
  // 1.3-2.2% slower: no rule on rounds separates them).
  const bool dyn_ok =
      l.ring_dynamic && sk.warps > 0 && ge.fmt == GroupedFmt::kNvfp4 && !l.wgmma && l.nb == 1;
  const double dyn_tiles =
      dyn_ok ? grouped_expected_tiles(T, KS, ge.E, ge.shared, gp.tile_tokens) : 0.0;
  const int dyn_w = l.sm_count * l.ctas_per_sm * l.warps_per_cta;
  auto dyn_for = [&](int64_t N, int64_t Kd, int rows) {
    return dyn_ok && grouped::stream_k_dynamic(static_cast<int>(dyn_tiles * (N / rows)), dyn_w,
                                               static_cast<int>(Kd / 128), 1);
  };
  if (lg.pipe_r2 != 1 && dyn_for(ge.I, ge.D, 16)) p1.sk_claim = s.sk_counters + 2 * sk.warps;
  // GroupedLaunch::early_gate_up: the ring kernel works the list out from the ids where one warp
  // can (warp_list) and gate_up waits for the grouping by PDL. The register-streaming kernel and
  // the ring's dynamic instance ignore it.
  auto give_early_list = [&](MoeGemmParams& p) {
    p.early_ids = ids;
    p.early_ids_stride = ids_stride;
    p.early_E = static_cast<int>(ge.E);
    p.early_shared = ge.shared;
    p.early_slots = static_cast<int>(T * KS);
    p.early_tile_tokens = gp.tile_tokens;
  };
  if (l.early_gate_up && lg.pdl && !l.wgmma && warp_list) {
    give_early_list(p1);
    ++early_gate_up_calls;
  }
  gemm(p1, lg, s.sk_counters);
  if (f8 && !l.wgmma_hquant)  // h rows of the warpgroup-MMA tiles -> E4M3 (x's codes are done)
    launch_moe_quant_rows(s.h, ge.I, wg_tiles, wg_num, list_tiles(T * KS, ge.E, wg_tile), q, qs,
                          l.sm_count, stream, lb.pdl);
  MoeGemmParams p2 = ge.down;
  p2.act = s.h;
  p2.act_t = act_t;
  p2.slot_w = s.slot_w;
  p2.out = s.out;
  p2.out_bf16 = grouped_out_bf16(l);
  if (ld.pipe_r2 != 1 && dyn_for(ge.D, ge.I, 32)) p2.sk_claim = s.sk_counters + 2 * sk.warps + 1;
  // GroupedLaunch::early_down_max_slots: down on the ring (fixed shares) the same way, with PDL
  // after gate_up, where gate_up took the early list (no big tiles: gate_up is down's predecessor).
  if (p1.early_ids != nullptr && T * KS <= l.early_down_max_slots && l.pipelined && !hybrid &&
      p2.sk_claim == nullptr) {
    give_early_list(p2);
    ld.pdl = true;
    ++early_down_calls;
  }
  gemm(p2, ld, sk.warps > 0 ? s.sk_counters + sk.warps : nullptr);

  launch_moe_combine(y, y_stride, s.out, p2.out_bf16, ids, ids_stride, T, ge.D, KS, ge.E, ge.shared,
                     accumulate, stream, l.pdl || l.pdl_light);
}

const void* upload_grouped_tmaps(const GroupedExperts& ge,
                                 const std::function<void*(size_t)>& alloc, std::string* why) {
  std::vector<uint8_t> maps;
  if (!grouped_weight_tmaps(ge, &maps, why)) return nullptr;
  void* d = alloc(maps.size());
  if (d == nullptr) {
    *why = "no device memory for the tensor maps";
    return nullptr;
  }
  // From pageable memory cudaMemcpy may return before the DMA lands; the sync of its (legacy)
  // stream makes the maps complete for kernels on any stream.
  cudaError_t e = cudaMemcpy(d, maps.data(), maps.size(), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaStreamSynchronize(nullptr);
  if (e != cudaSuccess) {
    *why = std::string("copying the tensor maps: ") + cudaGetErrorString(e);
    return nullptr;
  }
  return d;
}

std::vector<uintptr_t> grouped_tmap_key(const GroupedExperts& ge) {
  std::vector<uintptr_t> k = {static_cast<uintptr_t>(ge.fmt), static_cast<uintptr_t>(ge.D),
                              static_cast<uintptr_t>(ge.I), static_cast<uintptr_t>(ge.E),
                              static_cast<uintptr_t>(ge.gate_up.packed)};
  for (int64_t e = 0; e < ge.E; ++e)
    for (const void* w : {ge.gate_up.w[0][e], ge.gate_up.w[1][e], ge.down.w[0][e]})
      k.push_back(reinterpret_cast<uintptr_t>(w));
  return k;
}

bool grouped_weight_tmaps(const GroupedExperts& ge, std::vector<uint8_t>* out, std::string* why) {
  static_assert(sizeof(CUtensorMap) == 128);
  if (ge.fmt != GroupedFmt::kFp8Block && ge.fmt != GroupedFmt::kBf16) {
    *why = "tensor maps are for FP8 block-128 and BF16 experts";
    return false;
  }
  if (ge.D % 128 != 0 || ge.I % 128 != 0) {
    *why = "D and I must be multiples of 128";
    return false;
  }
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tmap_encoder();
  if (encode == nullptr) {
    *why = "the driver has no cuTensorMapEncodeTiled";
    return false;
  }
  out->assign(static_cast<size_t>(3 * ge.E) * 128, 0);
  // A matrix of N rows x Kd bytes (FP8; BF16: 2 Kd) as 4-D (64 bytes of k, 16 rows, N / 16 row
  // blocks, Kd / 64 k blocks), the packed layout's 16-row x 64-byte blocks (dequant_bits.h) or
  // row-major; a box of 128 rows x 128 bytes (FP8 128 k, BF16 64) lands in shared memory as two k
  // halves of [128 rows][64 bytes], 64-byte swizzled (the wgmma kernels' B operand).
  auto encode_one = [&](int idx, const MoeGemmParams& p, int m, int64_t e) {
    const int64_t N = p.N, Kd = grouped::grouped_row_bytes(ge.fmt, p.Kd);
    const cuuint64_t dims[4] = {64, 16, static_cast<cuuint64_t>(N / 16),
                                static_cast<cuuint64_t>(Kd / 64)};
    const cuuint64_t strides[3] = {static_cast<cuuint64_t>(p.packed ? 64 : Kd),
                                   static_cast<cuuint64_t>(p.packed ? (Kd / 64) * 1024 : 16 * Kd),
                                   static_cast<cuuint64_t>(p.packed ? 1024 : 64)};
    const cuuint32_t box[4] = {64, 16, 8, 2}, elem[4] = {1, 1, 1, 1};
    CUtensorMap map;
    const CUresult r =
        encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, const_cast<void*>(p.w[m][e]), dims, strides,
               box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
      *why = "cuTensorMapEncodeTiled failed (" + std::to_string(static_cast<int>(r)) +
             ") for expert " + std::to_string(e);
      return false;
    }
    std::memcpy(out->data() + static_cast<size_t>(idx) * 128, &map, 128);
    return true;
  };
  for (int64_t e = 0; e < ge.E; ++e)
    if (!encode_one(static_cast<int>(e), ge.gate_up, 0, e) ||
        !encode_one(static_cast<int>(ge.E + e), ge.gate_up, 1, e) ||
        !encode_one(static_cast<int>(2 * ge.E + e), ge.down, 0, e))
      return false;
  return true;
}

}  // namespace moe::cuda
