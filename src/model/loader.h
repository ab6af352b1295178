// load_model: config.json + checkpoint -> a ready Model, every problem reported as a Status.
#pragma once

#include <filesystem>
#include <memory>

#include "core/status.h"
#include "io/checkpoint.h"
#include "model/model.h"

namespace moe::model {

struct LoadedModel {
  std::unique_ptr<Model> model;
  io::Checkpoint checkpoint;
};

// Weights are placed in `ops`' memory (ops.upload).
Result<LoadedModel> load_model(const std::filesystem::path& dir, ops::Ops& ops);

}  // namespace moe::model
