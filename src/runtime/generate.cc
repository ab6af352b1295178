#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

namespace moe::runtime {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Generator::Generator(model::Model& model, ops::Ops& ops, Workspace& ws, model::KvCache& cache)
    : model_(model), ops_(ops), ws_(ws), cache_(cache) {
  logits_ = ops.allocate({1, model.config().vocab_size}, DType::kF32, false);
  next_ = ops.allocate({1}, DType::kI32, false);
}

Status Generator::warm_up(int64_t prompt_len, const GenerateOptions& opt) {
  if (prompt_len < 1) return invalid_argument("warm_up: the prompt length must be at least 1");
  GenerateOptions w = opt;
  w.max_new_tokens = std::min<int64_t>(opt.max_new_tokens, 3);  // prefill + <= 2 decode steps
  w.ignore_eos = true;
  w.on_token = nullptr;
  const std::vector<int32_t> ids(static_cast<size_t>(prompt_len), 0);
  auto r = run(ids, w, prompt_len + std::max<int64_t>(opt.max_new_tokens, 1) - 1, false);
  return r.ok() ? Status() : r.status();
}

Result<GenerateResult> Generator::generate(std::span<const int32_t> prompt,
                                           const GenerateOptions& opt) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  return run(prompt, opt, n + std::max<int64_t>(opt.max_new_tokens, 1) - 1, true);
}

Result<GenerateResult> Generator::run(std::span<const int32_t> prompt, const GenerateOptions& opt,
                                      int64_t reserve_tokens, bool stream) {
  if (prompt.empty()) return invalid_argument("the prompt is empty: give at least one token id");
  GenerateResult r;
  r.prefill_tokens = static_cast<int64_t>(prompt.size());
  if (opt.max_new_tokens < 1) return r;
  // Every token that enters the cache has its page from the start: the page-table width (a
  // shape of the decode step) stays fixed, as a captured step requires.
  model::KvCache::Sequence seq;
  MOE_RETURN_IF_ERROR(cache_.reserve(seq, reserve_tokens));
  std::vector<int32_t> step_tokens(prompt.begin(), prompt.end());
  model::SequenceInput in{step_tokens, &seq};
  uint64_t step_index = 0;  // index of the token being sampled, mixed into the seed
  // Forward + sample; the executor may run it on a stand-in Ops (graph refresh), so everything
  // it touches is reached through `o` or is host state read at call time.
  const DecodeStep step = [&](ops::Ops& o) -> Status {
    MOE_RETURN_IF_ERROR(
        model_.forward(o, ws_, cache_, std::span<model::SequenceInput>(&in, 1), logits_.view()));
    o.sample(next_.view(), logits_.cview(), std::span<const ops::SamplingParams>(&opt.sampling, 1),
             std::span<const uint64_t>(&step_index, 1));
    return Status();
  };
  auto t0 = std::chrono::steady_clock::now();
  Status st;
  for (int64_t i = 0; i < opt.max_new_tokens; ++i) {
    step_index = static_cast<uint64_t>(i);
    in.tokens = step_tokens;
    if (i == 0 || !opt.decode_executor)
      st = step(ops_);  // the prefill always runs eagerly
    else
      st = opt.decode_executor(step);
    if (!st.ok()) break;
    int32_t id = 0;
    ops_.copy_to_host(&id, next_.cview());  // waits for the step
    if (i == 0) {
      r.prefill_seconds = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
    } else {
      ++r.decode_steps;
    }
    r.generated.push_back(id);
    if (stream && opt.on_token) opt.on_token(id);
    if (!opt.ignore_eos && std::count(opt.eos_token_ids.begin(), opt.eos_token_ids.end(), id)) {
      r.stopped_at_eos = true;
      break;
    }
    step_tokens.assign(1, id);
  }
  if (r.decode_steps > 0) r.decode_seconds = seconds_since(t0);
  cache_.release(seq);
  if (!st.ok()) return st;
  return r;
}

Result<GenerateResult> generate(model::Model& model, ops::Ops& ops, Workspace& ws,
                                model::KvCache& cache, std::span<const int32_t> prompt,
                                const GenerateOptions& opt) {
  return Generator(model, ops, ws, cache).generate(prompt, opt);
}

}  // namespace moe::runtime
