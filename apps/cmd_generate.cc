// moengine generate: load a checkpoint, prefill the prompt, decode with the chosen sampler.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "backends/reference/reference_ops.h"
#ifdef MOE_HAVE_CUDA
#include "backends/cuda/device_info.h"
#endif
#include "cli_args.h"
#include "commands.h"
#include "model/loader.h"
#include "runtime/generate.h"
#include "text/chat_template.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace moe::apps {

int cmd_generate(int argc, char** argv, int first) {
  const std::string cmd = "generate";
  auto args = CliArgs::parse(
      argc, argv, first,
      {"--model-path", "--prompt-ids", "--prompt", "--chat", "--max-new-tokens", "--temperature",
       "--top-p", "--top-k", "--seed", "--device", "--threads", "--output-format"},
      {"--ignore-eos"});
  if (!args.ok()) return fail(cmd, args.status());
  auto path = args->required("--model-path");
  if (!path.ok()) return fail(cmd, path.status());
  const int prompt_flags = args->has("--prompt-ids") + args->has("--prompt") + args->has("--chat");
  if (prompt_flags != 1)
    return fail(cmd, invalid_argument("give exactly one of --prompt-ids 1,2,3, --prompt TEXT or "
                                      "--chat MESSAGE"));
  auto max_new = args->get_int("--max-new-tokens", 16, 1, 1 << 20);
  if (!max_new.ok()) return fail(cmd, max_new.status());
  auto temperature = args->get_double("--temperature", 0.0, 0.0, 100.0);
  if (!temperature.ok()) return fail(cmd, temperature.status());
  auto top_p = args->get_double("--top-p", 1.0, 1e-6, 1.0);
  if (!top_p.ok()) return fail(cmd, top_p.status());
  auto top_k = args->get_int("--top-k", 0, 0, INT32_MAX);
  if (!top_k.ok()) return fail(cmd, top_k.status());
  auto seed = args->get_int("--seed", 0, 0, INT64_MAX);
  if (!seed.ok()) return fail(cmd, seed.status());
  auto threads = args->get_int("--threads", 0, 0, 1024);
  if (!threads.ok()) return fail(cmd, threads.status());
  const std::string device = args->optional("--device").value_or("cpu");
  const std::string format = args->optional("--output-format").value_or("text");
  if (format != "text" && format != "json")
    return fail(cmd,
                invalid_argument("--output-format must be text or json, got '" + format + "'"));
  if (device == "cuda") {
#ifdef MOE_HAVE_CUDA
    auto dev = cuda::query_device(0);
    if (!dev.ok()) return fail(cmd, dev.status().with_context("--device cuda"));
    return fail(cmd, unimplemented("--device cuda: found " + cuda::describe(*dev) +
                                   ", but the CUDA model backend is not implemented yet; use "
                                   "--device cpu"));
#else
    return fail(cmd, unimplemented("--device cuda: this build has no CUDA (configure with nvcc "
                                   "available and -DMOE_CUDA=ON); use --device cpu"));
#endif
  }
  if (device != "cpu")
    return fail(cmd, invalid_argument("--device must be cpu or cuda, got '" + device + "'"));

  ThreadPool pool(static_cast<int>(*threads));
  reference::ReferenceOps ops(pool);
  auto loaded = model::load_model(*path, ops);
  if (!loaded.ok()) return fail(cmd, loaded.status());
  model::Model& m = *loaded->model;
  const model::ModelConfig& cfg = m.config();
  // Text in and out needs the model's tokenizer (tokenizer.json); ids need none.
  std::optional<text::Tokenizer> tokenizer;
  const bool has_tokenizer =
      std::filesystem::exists(std::filesystem::path(*path) / "tokenizer.json");
  if (has_tokenizer || !args->has("--prompt-ids")) {
    auto tok = text::Tokenizer::from_dir(*path);
    if (!tok.ok()) return fail(cmd, tok.status());
    tokenizer = std::move(tok).value();
  }
  std::vector<int64_t> prompt;
  if (args->has("--prompt-ids")) {
    auto p = args->get_int_list("--prompt-ids");
    if (!p.ok()) return fail(cmd, p.status());
    prompt = *p;
  } else {
    std::string text = args->optional("--prompt").value_or("");
    text::EncodeOptions enc;
    if (args->has("--chat")) {
      auto tmpl = text::ChatTemplate::from_model_dir(*path);
      if (!tmpl.ok()) return fail(cmd, tmpl.status());
      nlohmann::ordered_json req;
      req["messages"] = {{{"role", "user"}, {"content", *args->optional("--chat")}}};
      req["add_generation_prompt"] = true;
      auto rendered = tmpl->apply(req);
      if (!rendered.ok()) return fail(cmd, rendered.status());
      text = *rendered;
    } else {
      enc.parse_special = false;  // user text: "<|user|>" typed by a user is ordinary text
    }
    for (int32_t id : tokenizer->encode(text, enc)) prompt.push_back(id);
    if (prompt.empty()) return fail(cmd, invalid_argument("the prompt encodes to no tokens"));
  }
  std::vector<int32_t> ids;
  for (int64_t id : prompt) {
    if (id < 0 || id >= cfg.vocab_size)
      return fail(cmd, invalid_argument("--prompt-ids: token id " + std::to_string(id) +
                                        " is outside the vocabulary [0, " +
                                        std::to_string(cfg.vocab_size) + ")"));
    ids.push_back(static_cast<int32_t>(id));
  }
  const int64_t total = static_cast<int64_t>(ids.size()) + *max_new;
  if (total > cfg.max_position_embeddings)
    return fail(
        cmd, invalid_argument("prompt (" + std::to_string(ids.size()) + ") + --max-new-tokens (" +
                              std::to_string(*max_new) + ") exceeds max_position_embeddings " +
                              std::to_string(cfg.max_position_embeddings)));
  const int64_t page = 16;
  const int64_t kv_bytes =
      model::KvCache::bytes_per_token(cfg) * ((total + page - 1) / page) * page;
  if (kv_bytes > (int64_t{8} << 30))
    return fail(cmd, resource_exhausted("the KV cache for " + std::to_string(total) +
                                        " tokens needs " + std::to_string(kv_bytes >> 20) +
                                        " MiB on the CPU backend; lower --max-new-tokens"));
  model::KvCache cache(cfg, (total + page - 1) / page, page, ops);
  HostArena ws;

  runtime::GenerateOptions opt;
  opt.max_new_tokens = *max_new;
  opt.sampling.temperature = static_cast<float>(*temperature);
  opt.sampling.top_p = static_cast<float>(*top_p);
  opt.sampling.top_k = *top_k;
  opt.sampling.seed = static_cast<uint64_t>(*seed);
  opt.ignore_eos = args->has("--ignore-eos");
  opt.eos_token_ids = cfg.eos_token_ids;
  // Text mode with a tokenizer streams the text as it is generated.
  std::optional<text::Detokenizer> detok;
  if (tokenizer) detok.emplace(*tokenizer, text::DecodeOptions{.skip_special_tokens = true});
  if (format == "text" && detok) {
    opt.on_token = [&](int32_t id) {
      std::string piece;
      if (detok->push(id, &piece).ok() && !piece.empty()) {
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
      }
    };
  }
  auto r = runtime::generate(m, ops, ws, cache, ids, opt);
  if (!r.ok()) return fail(cmd, r.status());
  std::string text;
  if (tokenizer) {
    auto decoded =
        tokenizer->decode(r->generated, text::DecodeOptions{.skip_special_tokens = true});
    if (decoded.ok()) text = *decoded;
  }
  if (format == "text" && detok) {
    std::string tail;
    detok->finish(&tail);
    std::printf("%s\n", tail.c_str());
  }

  const double prefill_tps = r->prefill_seconds > 0 ? r->prefill_tokens / r->prefill_seconds : 0;
  const double decode_tps = r->decode_seconds > 0 ? r->decode_steps / r->decode_seconds : 0;
  if (format == "json") {
    nlohmann::ordered_json j;
    j["prompt_ids"] = prompt;
    j["generated_ids"] = r->generated;
    j["text"] = text;
    j["prefill_tokens_per_s"] = prefill_tps;
    j["decode_tokens_per_s"] = decode_tps;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string s;
    for (int32_t id : r->generated) s += (s.empty() ? "" : ",") + std::to_string(id);
    std::printf("generated_ids: %s\n", s.c_str());
    std::printf("stopped: %s\n", r->stopped_at_eos ? "eos" : "max-new-tokens");
    std::printf(
        "prefill: %lld tokens, %.1f tokens/s; decode: %lld steps, %.1f tokens/s (%s, %d threads)\n",
        static_cast<long long>(r->prefill_tokens), prefill_tps,
        static_cast<long long>(r->decode_steps), decode_tps, std::string(ops.name()).c_str(),
        pool.size());
  }
  return 0;
}

}  // namespace moe::apps
