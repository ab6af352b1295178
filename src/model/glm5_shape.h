// A GLM-5-shaped random checkpoint for speed work (`moengine make-tiny --shape glm5`): GLM-5's
// real widths (D 6144, 64 heads, q_lora 2048, kv_lora 512, nope 192 / rope 64 / v 256, DSA
// indexer 32 x 128 top-2048, 256 experts top-8 of I 2048, dense intermediate 12288, vocab
// 154880), `layers` layers of which the first is dense and the rest MoE. NVFP4 (ModelOpt
// layout) for the routed and shared experts and the dense MLP; attention, indexer, router,
// embeddings and lm_head BF16. Random packed codes and scales are written directly (no
// quantization pass), sharded, so a 4-layer model (~20 GB) takes seconds plus disk time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "core/status.h"

namespace moe::model {

struct Glm5ShapeOptions {
  int layers = 4;      // 1 dense + (layers - 1) MoE
  bool nvfp4 = true;   // false: every matrix BF16 (no hf_quant_config.json)
  uint64_t seed = 0;   // the random values (not the shapes) depend on it
  int64_t shrink = 1;  // tests: every width divided by this (structure and formats kept)
  uint64_t max_shard_bytes = uint64_t{4} << 30;
  // Called after each shard (bytes written so far, total bytes); may be empty.
  std::function<void(uint64_t, uint64_t)> progress;
};

// config.json of the shape (GlmMoeDsaForCausalLM, first_k_dense_replace 1, no MTP layers).
std::string glm5_shape_config_json(const Glm5ShapeOptions& o);
// hf_quant_config.json: NVFP4, group 16, lm_head and every self_attn* excluded.
std::string glm5_shape_quant_config_json();

// Writes config.json, hf_quant_config.json (NVFP4), model-0000i-of-0000N.safetensors with
// model.safetensors.index.json (or model.safetensors when one shard) into `dir` (created).
// Tensor names, shapes and dtypes are the weight manifest's for that config.
Status write_glm5_shape_model(const std::filesystem::path& dir, const Glm5ShapeOptions& o);

}  // namespace moe::model
