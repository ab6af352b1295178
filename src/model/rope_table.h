// Rotary frequencies for the model's RoPE settings: default (theta) or YaRN (DeepSeek-V3,
// Kimi-K2), as HuggingFace transformers computes them.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace moe::model {

struct RopeTable {
  std::vector<float> inv_freq;  // [dim / 2]
  float attention_factor = 1.0f;
};

// Frequencies for a rotary slice of `dim` dimensions under cfg.rope.
RopeTable make_rope_table(const RopeConfig& rope, int dim);

}  // namespace moe::model
