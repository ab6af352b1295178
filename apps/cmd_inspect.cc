// moengine inspect: what a checkpoint holds: architecture, layers, parameters, dtypes and bytes
// per role (with each role's storage format: dense, nvfp4, fp8-block), and estimated memory.
#include <cstdio>
#include <map>
#include <string>

#include "cli_args.h"
#include "commands.h"
#include "io/checkpoint.h"
#include "model/kv_cache.h"
#include "model/weight_manifest.h"

namespace moe::apps {
namespace {
std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", b, units[u]);
  return buf;
}
}  // namespace

int cmd_inspect(int argc, char** argv, int first) {
  const std::string cmd = "inspect";
  auto args = CliArgs::parse(argc, argv, first, {"--model-path"}, {});
  if (!args.ok()) return fail(cmd, args.status());
  auto path = args->required("--model-path");
  if (!path.ok()) return fail(cmd, path.status());
  auto cfg = model::load_model_config(*path);
  if (!cfg.ok()) return fail(cmd, cfg.status());
  auto ckpt = io::Checkpoint::open(*path);
  if (!ckpt.ok()) return fail(cmd, ckpt.status());
  Status valid = model::validate_checkpoint(*cfg, *ckpt);
  if (!valid.ok()) return fail(cmd, valid);

  int moe_layers = 0;
  for (int l = 0; l < cfg->num_hidden_layers; ++l) moe_layers += cfg->is_moe_layer(l);
  std::printf("architecture: %s\n", std::string(model::arch_name(cfg->arch)).c_str());
  std::printf("layers: %d (%d dense, %d MoE), hidden %lld, heads %d, vocab %lld\n",
              cfg->num_hidden_layers, cfg->num_hidden_layers - moe_layers, moe_layers,
              static_cast<long long>(cfg->hidden_size), cfg->num_attention_heads,
              static_cast<long long>(cfg->vocab_size));
  std::printf("experts: %d routed (top-%d, %d groups keep %d), %d shared, intermediate %lld\n",
              cfg->n_routed_experts, cfg->num_experts_per_tok, cfg->n_group, cfg->topk_group,
              cfg->n_shared_experts, static_cast<long long>(cfg->moe_intermediate_size));
  std::printf("attention: MLA q_lora %lld, kv_lora %lld, nope %d, rope %d (%s), v %d%s\n",
              static_cast<long long>(cfg->q_lora_rank), static_cast<long long>(cfg->kv_lora_rank),
              cfg->qk_nope_head_dim, cfg->qk_rope_head_dim,
              cfg->rope.type == model::RopeType::kYarn ? "yarn" : "default", cfg->v_head_dim,
              cfg->has_indexer ? (", DSA indexer " + std::to_string(cfg->index_n_heads) + "x" +
                                  std::to_string(cfg->index_head_dim) + " top-" +
                                  std::to_string(cfg->index_topk))
                                     .c_str()
                               : "");
  if (cfg->quant.format != io::QuantFormat::kNone) {
    std::printf("quantization: %s (%s), %zu exclusion patterns%s\n",
                std::string(io::quant_format_name(cfg->quant.format)).c_str(),
                cfg->quant.source.c_str(), cfg->quant.exclude.size(),
                cfg->quant.format == io::QuantFormat::kFp8Block
                    ? (", block " + std::to_string(cfg->quant.block)).c_str()
                    : "");
  }
  struct RoleStats {
    int64_t params = 0;
    uint64_t bytes = 0;
    std::map<std::string, int> dtypes;
    std::map<std::string, int> formats;
  };
  std::map<std::string, RoleStats> roles;
  int64_t params = 0;
  uint64_t bytes = 0;
  for (const model::WeightSpec& s : model::weight_manifest(*cfg)) {
    const io::Checkpoint::Entry* e = ckpt->find(s.name);
    RoleStats& r = roles[std::string(model::role_name(s.role))];
    r.params += s.params();
    r.bytes += e->info->end - e->info->begin;
    r.dtypes[std::string(dtype_name(e->info->dtype))]++;
    if (s.part == model::TensorPart::kWeight) {
      r.formats[s.format == ops::WeightFormat::kDense
                    ? std::string("dense")
                    : std::string(io::quant_format_name(s.format == ops::WeightFormat::kNvfp4
                                                            ? io::QuantFormat::kNvfp4
                                                            : io::QuantFormat::kFp8Block))]++;
    }
    params += s.params();
    bytes += e->info->end - e->info->begin;
  }
  std::printf("parameters: %lld (%.3f %s), weights %s\n", static_cast<long long>(params),
              params >= 1e9 ? params / 1e9 : params / 1e6, params >= 1e9 ? "B" : "M",
              human_bytes(static_cast<double>(bytes)).c_str());
  std::printf("%-22s %14s %12s %8s  %-16s %s\n", "role", "params", "bytes", "B/param", "format",
              "dtypes");
  for (const auto& [name, r] : roles) {
    std::string dts, fmts;
    for (const auto& [d, n] : r.dtypes) dts += (dts.empty() ? "" : ", ") + d;
    for (const auto& [f, n] : r.formats) fmts += (fmts.empty() ? "" : "+") + f;
    if (fmts.empty()) fmts = "dense";
    std::printf("%-22s %14lld %12s %8.4f  %-16s %s\n", name.c_str(),
                static_cast<long long>(r.params), human_bytes(static_cast<double>(r.bytes)).c_str(),
                r.params ? static_cast<double>(r.bytes) / static_cast<double>(r.params) : 0.0,
                fmts.c_str(), dts.c_str());
  }
  const uint64_t skipped = ckpt->total_bytes() - bytes;
  if (skipped)
    std::printf("skipped (MTP layers): %s\n", human_bytes(static_cast<double>(skipped)).c_str());
  const int64_t kv_bf16 = model::KvCache::bytes_per_token(*cfg) / 2;
  std::printf("KV cache per token: %s in BF16 (latent %lld + indexer %d per layer)\n",
              human_bytes(static_cast<double>(kv_bf16)).c_str(),
              static_cast<long long>(cfg->kv_lora_rank + cfg->qk_rope_head_dim),
              cfg->has_indexer ? cfg->index_head_dim : 0);
  std::printf("estimated memory: weights %s + KV %s per 1k tokens\n",
              human_bytes(static_cast<double>(bytes)).c_str(),
              human_bytes(static_cast<double>(kv_bf16) * 1024).c_str());
  return 0;
}

}  // namespace moe::apps
