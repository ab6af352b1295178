// Token sampling per row: greedy (argmax, lowest id on ties) or temperature / top-k / top-p with
// the counter-based draw of ops/sampling_rng.h, reproducing the reference's arithmetic (f64
// probabilities over the logits in stable descending order). Rows travel in the parameters.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace moe::cuda {

constexpr int kMaxSampleRows = 64;  // rows per launch; the launcher loops over chunks

struct SampleRow {
  float temperature = 0.f, top_p = 1.f;
  int64_t top_k = 0;
  uint64_t seed = 0, step = 0;
};

struct SampleParams {
  int32_t* out = nullptr;         // [S]
  const float* logits = nullptr;  // [S, V]
  int64_t logits_stride = 0;
  int64_t S = 0, V = 0;
  SampleRow rows[kMaxSampleRows];
  // Scratch for the sorted rows: [S, v_pad] keys and ids, v_pad = power of two >= V.
  float* keys = nullptr;
  int32_t* ids = nullptr;
  int64_t v_pad = 0;
};

void launch_sample(const SampleParams& p, Stream stream);

}  // namespace moe::cuda
