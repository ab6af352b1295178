// DSA lightning indexer: per token, scores of all causal keys of its sequence, then the exact
// top-k positions (descending score, ties to the lower position), -1 padded.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

struct DsaIndexTopkParams {
  int32_t* out = nullptr;  // [T, top_k], row stride out_stride
  int64_t out_stride = 0, top_k = 0;
  const float* q = nullptr;  // [T, Hi, Di]
  int64_t q_s0 = 0, q_s1 = 0;
  const float* w = nullptr;  // [T, Hi]
  int64_t w_stride = 0;
  const float* k_cache = nullptr;  // [pages, P, Di]
  int64_t Hi = 0, Di = 0;
  LayoutParams b;
  // Scratch: [T, n_pad] scores and positions; n_pad = power of two >= max_pages * P.
  double* score = nullptr;
  int32_t* pos = nullptr;
  int64_t n_pad = 0;
};

void launch_dsa_index_topk(const DsaIndexTopkParams& p, Stream stream);

}  // namespace moe::cuda
