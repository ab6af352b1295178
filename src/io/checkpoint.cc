// Checkpoint: opens a HuggingFace model directory (sharded via model.safetensors.index.json, or
// a single model.safetensors) and cross-checks the index against the shards' headers.
#include "io/checkpoint.h"

#include <set>
#include <system_error>

#include "core/check.h"
#include "core/file.h"
#include "io/strict_json.h"

namespace moe::io {
namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";
constexpr size_t kMaxProblemLines = 30;
constexpr uintmax_t kMaxIndexBytes = 256u << 20;  // real indexes are a few MB

bool is_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec) && !ec;
}

// Joins problems into "<n> problems:\n  a\n  b\n  ... and k more".
std::string join_problems(const std::vector<std::string>& problems) {
  std::string s =
      std::to_string(problems.size()) + (problems.size() == 1 ? " problem" : " problems");
  s += ":";
  for (size_t i = 0; i < problems.size() && i < kMaxProblemLines; ++i) s += "\n  " + problems[i];
  if (problems.size() > kMaxProblemLines) {
    s += "\n  ... and " + std::to_string(problems.size() - kMaxProblemLines) + " more";
  }
  return s;
}

// A shard name from the index must stay inside the model directory.
bool is_safe_shard_name(const std::string& name) {
  if (name.empty()) return false;
  std::filesystem::path p(name);
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory()) return false;
  for (const auto& part : p) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

}  // namespace

Result<Checkpoint> Checkpoint::open(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (is_file(dir)) {
      return invalid_argument(dir.string() +
                              ": is a file; pass the model directory that holds it instead");
    }
    return not_found(dir.string() + ": model directory does not exist");
  }
  Checkpoint ckpt;
  ckpt.dir_ = dir;
  const std::filesystem::path index_path = dir / kIndexName;
  const std::filesystem::path single_path = dir / kSingleName;

  if (!is_file(index_path)) {
    if (!is_file(single_path)) {
      return not_found(dir.string() + ": no checkpoint found; looked for " + kIndexName +
                       " (sharded) and " + kSingleName + " (single file)");
    }
    MOE_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(single_path));
    for (const TensorInfo& t : file->header().tensors)
      ckpt.entries_.emplace(t.name, Entry{&t, file});
    ckpt.files_.push_back(std::move(file));
    return ckpt;
  }

  // Sharded: parse the index.
  const std::string isrc = index_path.string();
  MOE_ASSIGN_OR_RETURN(std::string text, read_small_file(index_path, kMaxIndexBytes));
  MOE_ASSIGN_OR_RETURN(nlohmann::json index, parse_json_strict(text, isrc));
  if (!index.is_object()) {
    return invalid_argument(isrc + ": must be a JSON object, got " + describe_json(index));
  }
  auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object()) {
    return invalid_argument(isrc +
                            ": needs a \"weight_map\" object mapping tensor names to shard "
                            "files");
  }
  std::map<std::string, std::string> where;  // tensor -> shard file name
  std::set<std::string> shard_names;
  std::vector<std::string> problems;
  for (const auto& [name, file] : wm->items()) {
    if (!file.is_string()) {
      problems.push_back("tensor '" + name + "': shard must be a file name, got " +
                         describe_json(file));
      continue;
    }
    const std::string& f = file.get_ref<const std::string&>();
    if (!is_safe_shard_name(f)) {
      problems.push_back("tensor '" + name + "': shard '" + f +
                         "' is not a relative path inside the model directory");
      continue;
    }
    where.emplace(name, f);
    shard_names.insert(f);
  }
  if (!problems.empty()) return invalid_argument(isrc + ": " + join_problems(problems));

  std::vector<std::string> missing;
  for (const std::string& s : shard_names) {
    std::filesystem::path p = dir / s;
    if (!is_file(p)) missing.push_back(s);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    return not_found(isrc + ": " + std::to_string(missing.size()) + " of " +
                     std::to_string(shard_names.size()) +
                     " shards named by the index are missing from " + dir.string() + ": " + list +
                     "; the download is incomplete");
  }

  // Open every shard and check each tensor is where the index says, and only there.
  std::map<std::string, std::string> found_in;  // tensor -> shard it was found in
  for (const std::string& s : shard_names) {
    MOE_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(dir / s));
    for (const TensorInfo& t : file->header().tensors) {
      auto [it, inserted] = found_in.emplace(t.name, s);
      if (!inserted) {
        problems.push_back("tensor '" + t.name + "' is in both " + it->second + " and " + s);
        continue;
      }
      auto w = where.find(t.name);
      if (w == where.end()) {
        problems.push_back("tensor '" + t.name + "' is in " + s + " but not in the index");
      } else if (w->second != s) {
        problems.push_back("tensor '" + t.name + "' is in " + s + " but the index says " +
                           w->second);
      }
      ckpt.entries_.emplace(t.name, Entry{&t, file});
    }
    ckpt.files_.push_back(std::move(file));
  }
  for (const auto& [name, shard] : where) {
    if (!found_in.count(name)) {
      problems.push_back("tensor '" + name + "' is listed in the index under " + shard +
                         " but no shard holds it");
    }
  }
  if (!problems.empty()) {
    return data_loss(dir.string() + ": shards disagree with " + kIndexName + ": " +
                     join_problems(problems));
  }
  return ckpt;
}

const Checkpoint::Entry* Checkpoint::find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

Tensor Checkpoint::tensor(std::string_view name) const {
  const Entry* e = find(name);
  MOE_CHECK(e != nullptr) << "tensor '" << name << "' is not in checkpoint " << dir_.string();
  ConstTensorView v = e->file->view(*e->info);
  return Tensor::wrap(std::shared_ptr<const void>(e->file), v.raw(), v.dtype(), v.shape());
}

uint64_t Checkpoint::total_bytes() const {
  uint64_t n = 0;
  for (const auto& [name, e] : entries_) n += e.info->end - e.info->begin;
  return n;
}

}  // namespace moe::io
