// quantize_checkpoint (moengine quantize): reads a BF16/F16/F32 HuggingFace checkpoint and
// writes the layout a quantized release has: NVFP4 as NVIDIA ModelOpt, FP8 block-128 as DeepSeek.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/quant_config.h"
#include "model/model_config.h"

namespace moe::model {

struct QuantizeOptions {
  io::QuantFormat format = io::QuantFormat::kNvfp4;
  // A shard is closed before it would exceed this many bytes (a single larger tensor gets a
  // shard of its own). One shard is written as model.safetensors, several as
  // model-0000i-of-0000N.safetensors plus model.safetensors.index.json.
  uint64_t max_shard_bytes = uint64_t{4} << 30;
  // Worker threads for the per-row / per-tile quantization (0: all cores).
  int threads = 0;
  // Called after each output tensor (done, total, name); may be empty.
  std::function<void(int64_t, int64_t, const std::string&)> progress;
};

struct QuantizeReport {
  int64_t tensors_written = 0;
  int64_t modules_quantized = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  int shards = 0;
};

// The exclusions a quantizer writes for cfg: NVFP4 as nvidia/GLM-5-NVFP4 (lm_head, every
// layer's self_attn* incl. the indexer, each MoE layer's router gate mlp.gate, MTP layers
// model.layers.{N}*); FP8 block: the MTP layers only (DeepSeek's role rules cover the rest,
// module_format).
std::vector<std::string> default_exclusions(const ModelConfig& cfg, io::QuantFormat format);

// Quantizes the checkpoint in `in` into `out` (created if needed), tensor by tensor: memory
// stays near the size of the largest quantized matrix in F32. NVFP4 writes hf_quant_config.json
// (ModelOpt layout) and copies config.json; FP8 block adds DeepSeek's quantization_config to
// config.json. Other top-level files (tokenizer, generation config, ...) are copied.
// NVFP4 input_scale is written as 1.0: no activation calibration is done (W4A16 ignores it).
Result<QuantizeReport> quantize_checkpoint(const std::filesystem::path& in,
                                           const std::filesystem::path& out,
                                           const QuantizeOptions& options);

}  // namespace moe::model
