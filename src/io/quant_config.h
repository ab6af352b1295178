// QuantConfig: how a checkpoint's matrices are quantized, from NVIDIA ModelOpt's
// hf_quant_config.json or config.json's `quantization_config` (glm5-model.md §4.1; layouts in
// docs/formats.md). Parsed once, immutable afterwards.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace moe::io {

enum class QuantFormat : uint8_t {
  kNone,      // BF16/F16/F32 checkpoint
  kNvfp4,     // ModelOpt NVFP4: U8 weight + F8_E4M3 weight_scale + F32 weight_scale_2/input_scale
  kFp8Block,  // DeepSeek FP8: F8_E4M3 weight + F32 weight_scale_inv per block x block tile
};

// "none", "nvfp4", "fp8-block" (the spellings of `moengine quantize --format`).
std::string_view quant_format_name(QuantFormat f);

struct QuantConfig {
  QuantFormat format = QuantFormat::kNone;
  int64_t group_size = 16;  // NVFP4 elements per block scale (only 16 is supported)
  int64_t block = 128;      // FP8: weight_block_size [block, block]
  // Module names that stay unquantized: fnmatch patterns (`*`, `?`, `[...]`) matched against
  // the whole module name ("model.layers.3.self_attn.q_a_proj"); a pattern without wildcards
  // also covers the module's children ("lm_head" -> "lm_head.*"). From `exclude_modules`
  // (ModelOpt legacy), `ignore` (compressed-tensors style), or `modules_to_not_convert` /
  // `ignored_layers` (FP8).
  std::vector<std::string> exclude;
  std::string kv_cache_quant_algo;  // ModelOpt: "FP8" or empty (the KV cache format is ours)
  std::string source;               // file the settings came from, for error messages

  // The first pattern of `exclude` that matches `module`, or nullptr.
  const std::string* excluded_by(std::string_view module) const;
};

// fnmatch (POSIX shell pattern, no special meaning for '/' or leading '.'): `*` any run of
// characters, `?` one character, `[abc]`/`[a-z]`/`[!x]` a class.
bool fnmatch_pattern(std::string_view pattern, std::string_view name);

// Parses hf_quant_config.json text ({"producer": ..., "quantization": {...}}).
Result<QuantConfig> parse_hf_quant_config(std::string_view text, std::string_view source);

// Parses config.json's `quantization_config` object. Supported: quant_method "fp8" with
// weight_block_size [b, b] (DeepSeek) and quant_method "modelopt" with quant_algo "NVFP4".
// Anything else: InvalidArgument naming what was found and what is supported.
Result<QuantConfig> parse_quantization_config(const nlohmann::json& qc, std::string_view source);

// Reads <dir>/hf_quant_config.json if present, else config.json's quantization_config if
// present (`config` is the parsed config.json), else returns format kNone.
Result<QuantConfig> load_quant_config(const std::filesystem::path& dir,
                                      const nlohmann::json& config);

}  // namespace moe::io
