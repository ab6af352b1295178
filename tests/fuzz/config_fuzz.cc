// libFuzzer target: arbitrary text as config.json. parse_model_config must return a Status for
// every input; an accepted config must give a sane model (the invariants checked below) and a
// weight manifest with positive shapes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "model/model_config.h"
#include "model/weight_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = moe::model::parse_model_config(text, "config.json");
  if (!r.ok()) {
    MOE_CHECK(r.status().message().rfind("config.json: ", 0) == 0) << r.status().message();
    return 0;
  }
  const moe::model::ModelConfig& c = *r;
  MOE_CHECK(c.hidden_size > 0 && c.vocab_size > 0 && c.num_hidden_layers > 0);
  MOE_CHECK(c.num_experts_per_tok <= c.n_routed_experts);
  MOE_CHECK(c.n_routed_experts % c.n_group == 0 && c.topk_group <= c.n_group);
  MOE_CHECK(c.qk_rope_head_dim % 2 == 0);
  MOE_CHECK(std::isfinite(c.softmax_scale()) && c.softmax_scale() > 0);
  for (int64_t id : c.eos_token_ids) MOE_CHECK(id >= 0 && id < c.vocab_size);
  int moe_layers = 0;
  for (int l = 0; l < c.num_hidden_layers; ++l) moe_layers += c.is_moe_layer(l) ? 1 : 0;
  // The manifest is O(layers x experts); build it only for small configs to keep runs fast.
  if (int64_t{moe_layers} * c.n_routed_experts <= 4096) {
    for (const auto& w : moe::model::weight_manifest(c)) {
      for (int64_t d : w.shape) MOE_CHECK(d > 0) << w.name << " " << w.shape.to_string();
    }
  }
  return 0;
}
