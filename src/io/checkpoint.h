// Checkpoint: all tensors of a HuggingFace model directory, single-file
// (model.safetensors) or sharded (model.safetensors.index.json -> shards).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/safetensors.h"
#include "tensor/tensor.h"

namespace moe::io {

class Checkpoint {
 public:
  // Opens <dir>/model.safetensors.index.json if present (every shard it names must exist and
  // every tensor must be in the shard the index says), else <dir>/model.safetensors.
  // A tensor name present in two files is an error.
  static Result<Checkpoint> open(const std::filesystem::path& dir);

  struct Entry {
    const TensorInfo* info;
    std::shared_ptr<SafetensorsFile> file;
  };
  const Entry* find(std::string_view name) const;
  const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
  // A Tensor that views the mmapped bytes and keeps the file mapped. MOE_CHECKs the name exists.
  Tensor tensor(std::string_view name) const;
  const std::filesystem::path& dir() const { return dir_; }
  uint64_t total_bytes() const;

 private:
  std::filesystem::path dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace moe::io
