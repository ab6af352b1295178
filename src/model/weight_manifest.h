// The weight manifest: every tensor a checkpoint of a given ModelConfig must hold, with its
// HuggingFace name, role, expected shape and allowed dtypes (glm5-model.md §2.0). Quantized
// checkpoints (ModelConfig::quant) add the scale tensors of each quantized matrix (§4.3,
// docs/formats.md); which matrices are quantized is decided per module by the exclusions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "io/checkpoint.h"
#include "model/model_config.h"
#include "ops/weight.h"
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

// Which tensor of a (possibly quantized) module a spec describes.
enum class TensorPart : uint8_t {
  kWeight,          // <module>.weight (dense, FP8 codes, or packed E2M1 pairs)
  kWeightScale,     // NVFP4 <module>.weight_scale: F8_E4M3 [N, K/16]
  kWeightScale2,    // NVFP4 <module>.weight_scale_2: F32 scalar (global weight scale)
  kInputScale,      // NVFP4 <module>.input_scale: F32 scalar (static activation scale)
  kWeightScaleInv,  // FP8 <module>.weight_scale_inv: F32 [ceil(N/b), ceil(K/b)]
};

// "weight", "weight_scale", "weight_scale_2", "input_scale", "weight_scale_inv".
std::string_view tensor_part_suffix(TensorPart p);

struct WeightSpec {
  std::string name;  // e.g. "model.layers.3.mlp.experts.7.up_proj.weight"
  WeightRole role = WeightRole::kEmbed;
  int layer = -1;             // -1 for embed / lm_head / final norm
  int expert = -1;            // routed expert index, -1 otherwise
  Shape shape;                // as stored (NVFP4 weight: [N, K/2] bytes)
  std::vector<DType> dtypes;  // accepted dtypes (first = as shipped)
  // Matrices of Linear layers (and their scales): the module name ("...experts.7.up_proj"),
  // its storage format, which of its tensors this is, and its logical [N, K].
  std::string module;
  ops::WeightFormat format = ops::WeightFormat::kDense;
  TensorPart part = TensorPart::kWeight;
  Shape logical_shape;
  // Parameters this tensor holds (logical elements of a weight; 0 for scales).
  int64_t params() const;
};

// True for the matrix of a Linear layer (what quantization may apply to): attention and
// indexer projections, MLPs, experts, router gate and lm_head; not embeddings or norms.
bool is_linear_role(WeightRole r);

// The storage format of `module` (role r) under cfg.quant: NVFP4 (ModelOpt) quantizes every
// Linear except the router gate (not an nn.Linear in HF) and excluded modules; FP8 block
// (DeepSeek) quantizes every Linear except the router gate, the indexer's weights_proj,
// lm_head and excluded modules. kDense when the checkpoint is not quantized.
ops::WeightFormat module_format(const ModelConfig& cfg, WeightRole r, std::string_view module);

// All tensors of the main model (MTP layers excluded), in a stable order.
std::vector<WeightSpec> weight_manifest(const ModelConfig& cfg);

// True for tensors of MTP layers: model.layers.{L}.* with L >= num_hidden_layers.
bool is_mtp_tensor(std::string_view name, const ModelConfig& cfg);

// Checks the checkpoint against the manifest. Problems of quantized modules come first, as one
// line naming the tensor: missing or mis-shaped scales, a packed size that does not match the
// shape, NaN/Inf scales, an excluded module that is quantized nevertheless. Then missing,
// unexpected (MTP tensors are skipped), mis-shaped or wrongly typed tensors are all reported
// together in one InvalidArgument (at most a few dozen lines, then a count).
Status validate_checkpoint(const ModelConfig& cfg, const io::Checkpoint& ckpt);

}  // namespace moe::model
