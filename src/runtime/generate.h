// generate(): prefill a prompt, then decode one token per step until max_new_tokens or an
// end-of-sequence id. Batch of one; the step functions underneath take ragged batches.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/model.h"
#include "ops/ops.h"

namespace moe::runtime {

struct GenerateOptions {
  int64_t max_new_tokens = 16;
  ops::SamplingParams sampling;
  bool ignore_eos = false;
  std::vector<int64_t> eos_token_ids;  // stop at any of these (unless ignore_eos)
  // Called with each generated id as soon as it is sampled (streaming); may be empty.
  std::function<void(int32_t)> on_token;
};

struct GenerateResult {
  std::vector<int32_t> generated;  // new ids (the stopping eos id included)
  double prefill_seconds = 0;
  double decode_seconds = 0;
  int64_t prefill_tokens = 0;
  int64_t decode_steps = 0;  // forward passes after the prefill
  bool stopped_at_eos = false;
};

// Runs on `cache` with a fresh sequence that is released before returning.
Result<GenerateResult> generate(model::Model& model, ops::Ops& ops, Workspace& ws,
                                model::KvCache& cache, std::span<const int32_t> prompt,
                                const GenerateOptions& opt);

}  // namespace moe::runtime
