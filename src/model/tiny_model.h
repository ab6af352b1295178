// Tiny random checkpoints in the HuggingFace layout (config.json + model.safetensors), for the
// demo, tests and `moengine make-tiny`. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/status.h"

namespace moe::model {

// Writes DIR/config.json and DIR/model.safetensors for `arch` ("glm_moe_dsa", "deepseek_v3",
// "deepseek_v32"). Creates DIR if needed. Weights are BF16 (router bias F32), scaled so that
// activations stay O(1) and greedy decoding is not a coin toss.
Status write_tiny_model(const std::filesystem::path& dir, std::string_view arch, uint64_t seed);

// The config.json text write_tiny_model writes (fields as the real checkpoints ship them).
Result<std::string> tiny_config_json(std::string_view arch);

}  // namespace moe::model
