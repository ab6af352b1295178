// generate(): prefill a prompt, then decode one token per step until max_new_tokens or an
// end-of-sequence id. Batch of one; the step functions underneath take ragged batches. Decode
// steps (forward + sampling) can run through a caller's executor, e.g. as CUDA graph replays.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/model.h"
#include "ops/ops.h"

namespace moe::runtime {

// One decode step: the forward of the last sampled token and the sampling of the next one,
// enqueued on the Ops it is given. For a given generation its op sequence, shapes and
// workspace addresses are the same every step (the sequence's pages are reserved up front, so
// the page-table width is fixed); only the copied-in inputs change (ids, positions, lengths,
// page table) and the sampling step counter.
using DecodeStep = std::function<Status(ops::Ops& ops)>;
// Runs a decode step: by default directly on the generation's Ops; a CUDA caller passes e.g.
// `[&](const DecodeStep& s) { return runner.run(1, s); }` (DecodeGraphRunner). The executor
// must run `step` exactly once, on the generation's backend or a stand-in for it, and leave the
// sampled id in stream order before returning.
using DecodeExecutor = std::function<Status(const DecodeStep& step)>;

struct GenerateOptions {
  int64_t max_new_tokens = 16;
  ops::SamplingParams sampling;
  bool ignore_eos = false;
  std::vector<int64_t> eos_token_ids;  // stop at any of these (unless ignore_eos)
  // Called with each generated id as soon as it is sampled (streaming); may be empty.
  std::function<void(int32_t)> on_token;
  // Runs every decode step (not the prefill, which always runs eagerly); empty = directly.
  DecodeExecutor decode_executor;
};

struct GenerateResult {
  std::vector<int32_t> generated;  // new ids (the stopping eos id included)
  double prefill_seconds = 0;
  double decode_seconds = 0;
  int64_t prefill_tokens = 0;
  int64_t decode_steps = 0;  // forward passes after the prefill
  bool stopped_at_eos = false;
};

// Generates on one model / backend / workspace / KV cache, all owned by the caller and outliving
// the Generator. It owns the step's outputs (logits [1, V] f32 and the sampled id [1] i32,
// allocated once in `ops`' memory), so a decode executor that captured them (a CUDA graph) can
// replay them in every later generate() of this Generator. Each generation uses a fresh sequence
// with pages for prompt + max_new_tokens - 1 tokens reserved before the prefill, released
// before returning (also on error). Not thread-safe.
class Generator {
 public:
  Generator(model::Model& model, ops::Ops& ops, Workspace& ws, model::KvCache& cache);

  // Sizes the workspace and the backend's op scratch for generate() of a `prompt_len`-token
  // prompt with `opt`, so that the generation itself allocates nothing: a throwaway sequence
  // with the same page reservation gets a prefill of `prompt_len` ids (all 0) and up to two
  // decode steps through opt.decode_executor (a graph executor warms up and captures there),
  // then is released. No callback runs; the KV pages it wrote are overwritten before any read.
  Status warm_up(int64_t prompt_len, const GenerateOptions& opt);

  Result<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& opt);

 private:
  Result<GenerateResult> run(std::span<const int32_t> prompt, const GenerateOptions& opt,
                             int64_t reserve_tokens, bool stream);

  model::Model& model_;
  ops::Ops& ops_;
  Workspace& ws_;
  model::KvCache& cache_;
  Tensor logits_;  // [1, V] f32
  Tensor next_;    // [1] i32
};

// One generation with a Generator made for it.
Result<GenerateResult> generate(model::Model& model, ops::Ops& ops, Workspace& ws,
                                model::KvCache& cache, std::span<const int32_t> prompt,
                                const GenerateOptions& opt);

}  // namespace moe::runtime
