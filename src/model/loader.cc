// load_model: config.json + checkpoint -> a ready Model.
#include "model/loader.h"

namespace moe::model {

Result<LoadedModel> load_model(const std::filesystem::path& dir, ops::Ops& ops) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return not_found("model path " + dir.string() +
                     " is not a directory; pass the folder holding config.json and the "
                     "*.safetensors files");
  MOE_ASSIGN_OR_RETURN(ModelConfig cfg, load_model_config(dir));
  MOE_ASSIGN_OR_RETURN(io::Checkpoint ckpt, io::Checkpoint::open(dir));
  MOE_ASSIGN_OR_RETURN(ModelWeights w, bind_weights(cfg, ckpt, ops));
  LoadedModel m{std::make_unique<Model>(std::move(cfg), std::move(w)), std::move(ckpt)};
  return m;
}

}  // namespace moe::model
