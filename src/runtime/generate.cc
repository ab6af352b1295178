#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

namespace moe::runtime {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Result<GenerateResult> generate(model::Model& model, ops::Ops& ops, Workspace& ws,
                                model::KvCache& cache, std::span<const int32_t> prompt,
                                const GenerateOptions& opt) {
  if (prompt.empty()) return invalid_argument("the prompt is empty: give at least one token id");
  const int64_t V = model.config().vocab_size;
  Tensor logits = ops.allocate({1, V}, DType::kF32, false);
  Tensor next = ops.allocate({1}, DType::kI32, false);
  model::KvCache::Sequence seq;
  GenerateResult r;
  r.prefill_tokens = static_cast<int64_t>(prompt.size());
  std::vector<int32_t> step_tokens(prompt.begin(), prompt.end());
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < opt.max_new_tokens; ++i) {
    model::SequenceInput in{step_tokens, &seq};
    Status st =
        model.forward(ops, ws, cache, std::span<model::SequenceInput>(&in, 1), logits.view());
    if (!st.ok()) {
      cache.release(seq);
      return st;
    }
    if (i == 0) {
      r.prefill_seconds = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
    } else {
      ++r.decode_steps;
    }
    uint64_t step = static_cast<uint64_t>(i);
    ops.sample(next.view(), logits.view(), std::span<const ops::SamplingParams>(&opt.sampling, 1),
               std::span<const uint64_t>(&step, 1));
    int32_t id = 0;
    ops.copy_to_host(&id, next.cview());
    r.generated.push_back(id);
    if (opt.on_token) opt.on_token(id);
    if (!opt.ignore_eos && std::count(opt.eos_token_ids.begin(), opt.eos_token_ids.end(), id)) {
      r.stopped_at_eos = true;
      break;
    }
    step_tokens.assign(1, id);
  }
  if (r.decode_steps > 0) r.decode_seconds = seconds_since(t0);
  cache.release(seq);
  return r;
}

}  // namespace moe::runtime
