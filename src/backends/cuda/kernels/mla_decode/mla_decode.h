// Absorbed-form MLA attention in three stages that each read their operand once per call:
// (a) q absorption q~ = W_UK^T q_nope (kv_b's W_UK read once, all tokens), (b) a flash-decoding
// core over the paged latent cache where each key tile is loaded once into shared memory for a
// group of heads (online softmax, split over keys, partials combined without atomics), (c) the
// V projection out = W_UV o^ (kv_b's W_UV read once). Plain C++: no CUDA headers.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

constexpr int kMlaDecodeThreads = 256;  // every stage
constexpr int kMlaKeyTile = 16;         // keys per shared-memory tile in the core
constexpr int kMlaMaxSplits = 64;       // key splits per (token, head group)

struct MlaDecodeParams {
  float* out = nullptr;  // [T, H, Dv]
  int64_t out_s0 = 0, out_s1 = 0;
  const float* q = nullptr;  // [T, H, Dn + R]
  int64_t q_s0 = 0, q_s1 = 0;
  const float* cache = nullptr;  // [pages, P, L + R], contiguous
  const void* kv_b = nullptr;  // [H * (Dn + Dv), L], dtype wt: per head W_UK [Dn, L], W_UV [Dv, L]
  int wt = kWF32;
  const int32_t* selected = nullptr;  // [T, sel_k] key positions (-1 padded) or null
  int64_t sel_stride = 0, sel_k = 0;
  int64_t H = 0, Dn = 0, R = 0, Dv = 0, L = 0;
  float softmax_scale = 1.f;
  LayoutParams b;
  int64_t n_keys = 0;  // key slots a token may scan: sel_k, or max_pages * P

  // Scratch (op arena), sized by mla_decode_scratch_floats().
  float* qa = nullptr;       // [T, H, L + R] (q~ | q_pe) * softmax_scale * log2(e)
  float* ohat = nullptr;     // [T, H, L] attended latent (normalised)
  float* part_o = nullptr;   // [T, H, splits, L] unnormalised partial o^ (splits > 1)
  float* part_ml = nullptr;  // [T, H, splits, 2] running max (log2 domain) and exp-sum

  // Plan (mla_decode_plan).
  int heads_per_block = 16;  // 8 or 16
  int units = 1;             // o^ register tiles per thread in the core: 1, 2 or 4
  int splits = 1;            // key splits per (token, head group), 1..kMlaMaxSplits
  int64_t ld = 0;            // shared-memory row of a key / query: L + R rounded up to 4 floats
  bool vec16 = false;        // 16-byte cache copies ((L + R) % 4 == 0, 16-byte aligned cache)
};

// The device limits the plan depends on (from DeviceInfo, passed explicitly).
struct MlaDecodeDevice {
  int sm_count = 1;
  int64_t smem_per_sm = 0;
  int64_t smem_per_block_optin = 0;
};

// Fills p's plan fields from the shapes and the device: head group, register tiling, key splits
// (enough (token, group, split) blocks for every SM to hold its resident blocks). MOE_CHECKs
// that every stage's shared memory fits smem_per_block_optin and the dims are supported.
void mla_decode_plan(MlaDecodeParams& p, const MlaDecodeDevice& dev);

// Scratch floats for qa, ohat, part_o, part_ml (in that order) of a planned p.
struct MlaDecodeScratch {
  int64_t qa = 0, ohat = 0, part_o = 0, part_ml = 0;
};
MlaDecodeScratch mla_decode_scratch_floats(const MlaDecodeParams& p);

// Shared memory per block of each stage (bytes).
int64_t mla_q_absorb_smem_bytes(const MlaDecodeParams& p);
int64_t mla_decode_core_smem_bytes(const MlaDecodeParams& p);
int64_t mla_v_project_smem_bytes(const MlaDecodeParams& p);

// The three (four with splits > 1) launches on `stream`; no host synchronisation, no allocation.
void launch_mla_decode(const MlaDecodeParams& p, Stream stream);

}  // namespace moe::cuda
