// Helpers for the quantization tests: fixture paths and rewriting a checkpoint tensor by tensor.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/safetensors.h"

namespace moe::testing {

inline std::filesystem::path quant_fixture(const std::string& name) {
  return std::filesystem::path(MOE_SOURCE_DIR) / "tests" / "fixtures" / "quant" / name;
}

// A tensor of a rewritten checkpoint; `edit` may change any field or drop it (return false).
struct EditableTensor {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<std::byte> bytes;
};

// Copies the checkpoint in `src` (all top-level non-weight files too) into `dst` as one
// model.safetensors, passing every tensor through `edit`.
inline Status rewrite_checkpoint(const std::filesystem::path& src, const std::filesystem::path& dst,
                                 const std::function<bool(EditableTensor&)>& edit) {
  namespace fs = std::filesystem;
  fs::remove_all(dst);
  fs::create_directories(dst);
  for (const auto& f : fs::directory_iterator(src)) {
    const std::string n = f.path().filename().string();
    if (n.ends_with(".safetensors") || n == "model.safetensors.index.json") continue;
    fs::copy_file(f.path(), dst / n);
  }
  MOE_ASSIGN_OR_RETURN(io::Checkpoint ckpt, io::Checkpoint::open(src));
  std::vector<EditableTensor> ts;
  for (const auto& [name, e] : ckpt.entries()) {
    auto b = e.file->bytes(*e.info);
    EditableTensor t{name, e.info->dtype, e.info->shape, {b.begin(), b.end()}};
    if (edit(t)) ts.push_back(std::move(t));
  }
  std::vector<io::TensorToWrite> out;
  for (const auto& t : ts) out.push_back({t.name, t.dtype, t.shape, t.bytes});
  return io::write_safetensors(dst / "model.safetensors", out, {{"format", "pt"}});
}

}  // namespace moe::testing
