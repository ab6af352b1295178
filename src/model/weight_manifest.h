// The weight manifest: every tensor a checkpoint of a given ModelConfig must hold, with its
// HuggingFace name, role, expected shape and allowed dtypes (glm5-model.md §2.0).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/checkpoint.h"
#include "model/model_config.h"
#include "tensor/shape.h"

namespace moe::model {

enum class WeightRole {
  kEmbed,
  kLmHead,
  kFinalNorm,
  kAttnNorm,
  kFfnNorm,
  kQaProj,
  kQaNorm,
  kQbProj,
  kKvaProj,
  kKvaNorm,
  kKvbProj,
  kOProj,
  kIdxWqb,
  kIdxWk,
  kIdxKNormWeight,
  kIdxKNormBias,
  kIdxWeightsProj,
  kDenseGate,
  kDenseUp,
  kDenseDown,
  kRouterGate,
  kRouterBias,
  kExpertGate,
  kExpertUp,
  kExpertDown,
  kSharedGate,
  kSharedUp,
  kSharedDown,
};

// "embed", "q_a_proj", "expert_gate", ...
std::string_view role_name(WeightRole r);

struct WeightSpec {
  std::string name;  // e.g. "model.layers.3.mlp.experts.7.up_proj.weight"
  WeightRole role;
  int layer = -1;   // -1 for embed / lm_head / final norm
  int expert = -1;  // routed expert index, -1 otherwise
  Shape shape;
  std::vector<DType> dtypes;  // accepted dtypes (first = as shipped)
};

// All tensors of the main model (MTP layers excluded), in a stable order.
std::vector<WeightSpec> weight_manifest(const ModelConfig& cfg);

// True for tensors of MTP layers: model.layers.{L}.* with L >= num_hidden_layers.
bool is_mtp_tensor(std::string_view name, const ModelConfig& cfg);

// Checks the checkpoint against the manifest: missing, unexpected (MTP tensors are skipped),
// mis-shaped or wrongly typed tensors are all reported together in one InvalidArgument
// (at most a few dozen lines, then a count).
Status validate_checkpoint(const ModelConfig& cfg, const io::Checkpoint& ckpt);

}  // namespace moe::model
