// moengine generate: load a checkpoint, prefill the prompt, decode with the chosen sampler, on
// the CPU (reference backend) or one GPU (--device cuda: CudaOps on device 0, arenas sized by a
// warm-up before the timed run, decode steps replayed as CUDA graphs unless --eager).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backends/reference/reference_ops.h"
#ifdef MOE_HAVE_CUDA
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/decode_graph_runner.h"
#include "backends/cuda/device_arena.h"
#include "backends/cuda/device_info.h"
#endif
#include "cli_args.h"
#include "commands.h"
#include "io/checkpoint.h"
#include "model/loader.h"
#include "runtime/generate.h"
#include "text/chat_template.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace moe::apps {
namespace {

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

// Device memory the forward's workspace and the ops' scratch need for a step of T tokens over
// `ctx` cached tokens: an upper estimate from the model's widths (the arena grows to the real
// high-water mark). Activations are f32: residual, norm and block outputs; attention q, kv and
// out; FFN intermediates (dense, or K routed experts plus the shared one); router logits;
// indexer q; attention scores and the indexer's sort rows over the context; the logits.
int64_t workspace_bytes_estimate(const model::ModelConfig& c, int64_t T, int64_t ctx) {
  const int64_t H = c.num_attention_heads, qk = c.qk_head_dim(), Dv = c.v_head_dim;
  int64_t pow2 = 1;
  while (pow2 < ctx) pow2 <<= 1;
  const int64_t ffn = std::max<int64_t>(
      c.intermediate_size,
      c.moe_intermediate_size * (c.num_experts_per_tok + std::max(c.n_shared_experts, 1)));
  const int64_t per_token = 4 * c.hidden_size + c.q_lora_rank + 2 * H * qk + H * Dv +
                            2 * (c.kv_lora_rank + c.qk_rope_head_dim) + 3 * ffn +
                            c.n_routed_experts + int64_t{c.index_n_heads} * c.index_head_dim +
                            2 * pow2 + H * ctx + H * c.kv_lora_rank;
  return 4 * T * per_token + 4 * c.vocab_size + (int64_t{64} << 20);
}

}  // namespace

int cmd_generate(int argc, char** argv, int first) {
  const std::string cmd = "generate";
  auto args =
      CliArgs::parse(argc, argv, first,
                     {"--model-path", "--prompt-ids", "--prompt", "--chat", "--max-new-tokens",
                      "--temperature", "--top-p", "--top-k", "--seed", "--device", "--threads",
                      "--output-format", "--gpu-memory", "--moe-tune-cache"},
                     {"--ignore-eos", "--eager", "--moe-f16-activations"});
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
  // --gpu-memory GiB: the most device memory this run may use (default: all that is free).
  auto gpu_memory = args->get_double("--gpu-memory", 0.0, 0.0, 1e6);
  if (!gpu_memory.ok()) return fail(cmd, gpu_memory.status());
  const std::string device = args->optional("--device").value_or("cpu");
  const std::string format = args->optional("--output-format").value_or("text");
  if (format != "text" && format != "json")
    return fail(cmd,
                invalid_argument("--output-format must be text or json, got '" + format + "'"));
  if (device != "cpu" && device != "cuda")
    return fail(cmd, invalid_argument("--device must be cpu or cuda, got '" + device + "'"));
  if (args->has("--moe-f16-activations") && device != "cuda")
    return fail(cmd, invalid_argument("--moe-f16-activations applies to --device cuda (the CPU "
                                      "backend computes MoE experts in f32); drop it or add "
                                      "--device cuda"));
#ifdef MOE_HAVE_CUDA
  std::optional<cuda::DeviceInfo> dev;
  if (device == "cuda") {
    auto info = cuda::query_device(0);
    if (!info.ok())
      return fail(cmd, info.status().with_context("--device cuda (or use --device cpu)"));
    dev = *info;
  }
#else
  if (device == "cuda")
    return fail(cmd, unimplemented("--device cuda: this build has no CUDA (configure with nvcc "
                                   "available and -DMOE_CUDA=ON); use --device cpu"));
#endif

  auto cfg_r = model::load_model_config(*path);
  if (!cfg_r.ok()) return fail(cmd, cfg_r.status());
  const model::ModelConfig& cfg = *cfg_r;
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

  // The backend: the reference on a thread pool, or CudaOps on device 0 with a device arena.
  ThreadPool pool(static_cast<int>(device == "cpu" ? *threads : 1));
  std::unique_ptr<ops::Ops> ops;
  std::unique_ptr<Workspace> ws;
  std::string backend_desc;
#ifdef MOE_HAVE_CUDA
  cuda::CudaOps* cuda_ops_raw = nullptr;
  cuda::DeviceArena* cuda_ws_raw = nullptr;
#endif
  if (device == "cpu") {
    if (kv_bytes > (int64_t{8} << 30))
      return fail(cmd, resource_exhausted("the KV cache for " + std::to_string(total) +
                                          " tokens needs " + std::to_string(kv_bytes >> 20) +
                                          " MiB on the CPU backend; lower --max-new-tokens"));
    ops = std::make_unique<reference::ReferenceOps>(pool);
    ws = std::make_unique<HostArena>();
    backend_desc = "reference, " + std::to_string(pool.size()) + " threads";
  }
#ifdef MOE_HAVE_CUDA
  if (device == "cuda") {
    // Refuse before allocating anything: weights + KV cache + workspace vs free memory.
    auto ckpt = io::Checkpoint::open(*path);
    if (!ckpt.ok()) return fail(cmd, ckpt.status());
    const int64_t weights = static_cast<int64_t>(ckpt->total_bytes());
    const int64_t work = workspace_bytes_estimate(cfg, static_cast<int64_t>(ids.size()), total);
    const int64_t needed = weights + kv_bytes + work;
    int64_t available = dev->free_mem_bytes;
    std::string avail_what = "free on " + cuda::describe(*dev);
    if (*gpu_memory > 0 &&
        static_cast<double>(available) > *gpu_memory * static_cast<double>(int64_t{1} << 30)) {
      available = static_cast<int64_t>(*gpu_memory * static_cast<double>(int64_t{1} << 30));
      avail_what = "allowed by --gpu-memory";
    }
    if (needed > available)
      return fail(
          cmd, resource_exhausted(
                   "the model does not fit in GPU memory: needs " + gib(needed) + " (weights " +
                   gib(weights) + " + KV cache " + gib(kv_bytes) + " for " + std::to_string(total) +
                   " tokens + workspace ~" + gib(work) + "), " + gib(available) + " " + avail_what +
                   "; use a quantized checkpoint (moengine quantize --format nvfp4), "
                   "a shorter prompt or fewer --max-new-tokens, or --device cpu"));
    auto cuda_ops = std::make_unique<cuda::CudaOps>(*dev);
    // MoE launch configurations from `moengine tune-moe`: --moe-tune-cache FILE (an error is
    // fatal), else DIR/moe_tune.json when present (an error is a warning: heuristic configs).
    const std::optional<std::string> tune_flag = args->optional("--moe-tune-cache");
    const std::string tune_path =
        tune_flag.value_or((std::filesystem::path(*path) / "moe_tune.json").string());
    if (tune_flag || std::filesystem::exists(tune_path)) {
      std::vector<std::string> warnings;
      auto tune = cuda::CudaOps::load_moe_tune_cache(tune_path, *dev, &warnings);
      if (!tune.ok() && tune_flag) return fail(cmd, tune.status().with_context("--moe-tune-cache"));
      if (!tune.ok()) warnings.push_back(tune.status().to_string() + "; using heuristic configs");
      for (const std::string& w : warnings)
        std::fprintf(stderr, "moengine %s: warning: %s\n", cmd.c_str(), w.c_str());
      if (tune.ok()) cuda_ops->set_moe_tune_cache(*tune);
    }
    // FP8 experts on the warpgroup-MMA GEMM (prefill, hot experts) quantize activations to E4M3
    // unless --moe-f16-activations.
    cuda_ops->set_moe_fp8_activations(!args->has("--moe-f16-activations"));
    auto cuda_ws = std::make_unique<cuda::DeviceArena>(dev->ordinal, cuda_ops->stream());
    cuda_ops_raw = cuda_ops.get();
    cuda_ws_raw = cuda_ws.get();
    ws = std::move(cuda_ws);
    ops = std::move(cuda_ops);
    backend_desc = "cuda, " + cuda::describe(*dev);
  }
#endif

  auto loaded = model::load_model(*path, *ops);
  if (!loaded.ok()) return fail(cmd, loaded.status());
  model::Model& m = *loaded->model;
  model::KvCache cache(cfg, (total + page - 1) / page, page, *ops);

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
  runtime::Generator gen(m, *ops, *ws, cache);
  // --device cuda: decode steps through a DecodeGraphRunner (one key: batch of one, fixed
  // page-table width), and the arenas sized before the timed run by a warm-up generation of
  // the prompt's length (prefill + two decode steps: eager, then captured), so the generation
  // itself allocates nothing; the growth counters below show it.
  bool cuda_graphs = false;
  int64_t replayed_steps = 0, arena_growths = 0;
  std::string cuda_line;
#ifdef MOE_HAVE_CUDA
  std::unique_ptr<cuda::DecodeGraphRunner> runner;
  if (cuda_ops_raw) {
    cuda_graphs = !args->has("--eager");
    if (cuda_graphs) {
      runner = std::make_unique<cuda::DecodeGraphRunner>(*cuda_ops_raw, *cuda_ws_raw);
      opt.decode_executor = [&](const runtime::DecodeStep& step) {
        Status st = runner->run(1, step);
        replayed_steps += runner->last_mode() == cuda::DecodeGraphRunner::Mode::kReplayed;
        return st;
      };
    }
    Status st = gen.warm_up(static_cast<int64_t>(ids.size()), opt);
    if (!st.ok()) return fail(cmd, st.with_context("warm-up"));
    cuda_ws_raw->reset();  // merge blocks now (between steps), not in the timed prefill
    cuda_ops_raw->settle_scratch();
    cuda_ops_raw->synchronize();
    replayed_steps = 0;
    arena_growths = -(cuda_ws_raw->growths() + cuda_ops_raw->scratch_growths());
  }
#endif
  auto r = gen.generate(ids, opt);
  if (!r.ok()) return fail(cmd, r.status());
#ifdef MOE_HAVE_CUDA
  if (cuda_ops_raw) {
    arena_growths += cuda_ws_raw->growths() + cuda_ops_raw->scratch_growths();
    char buf[64];
    std::snprintf(buf, sizeof buf, "workspace %.1f MiB",
                  static_cast<double>(cuda_ws_raw->capacity()) / (1 << 20));
    cuda_line = std::string("cuda graphs: ") +
                (cuda_graphs ? "on, " + std::to_string(replayed_steps) + " of " +
                                   std::to_string(r->decode_steps) + " decode steps replayed"
                             : "off (--eager)") +
                "; " + buf + ", arena growths during generation: " + std::to_string(arena_growths);
  }
#endif
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
    j["device"] = device;
    if (device == "cuda") {
      j["cuda_graphs"] = cuda_graphs;
      j["graph_replayed_steps"] = replayed_steps;
      j["arena_growths"] = arena_growths;
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string s;
    for (int32_t id : r->generated) s += (s.empty() ? "" : ",") + std::to_string(id);
    std::printf("generated_ids: %s\n", s.c_str());
    std::printf("stopped: %s\n", r->stopped_at_eos ? "eos" : "max-new-tokens");
    std::printf("prefill: %lld tokens, %.1f tokens/s; decode: %lld steps, %.1f tokens/s (%s)\n",
                static_cast<long long>(r->prefill_tokens), prefill_tps,
                static_cast<long long>(r->decode_steps), decode_tps, backend_desc.c_str());
    if (!cuda_line.empty()) std::printf("%s\n", cuda_line.c_str());
  }
  return 0;
}

}  // namespace moe::apps
