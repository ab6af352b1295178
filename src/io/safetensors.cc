// safetensors reading (validated like huggingface/safetensors' Rust reader, then mmapped) and
// writing. Every size from the file is checked with 64-bit overflow-checked arithmetic before use.
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <system_error>

#include "core/check.h"
#include "io/strict_json.h"

namespace moe::io {
namespace {

bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

std::string shape_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Names in messages are shown as-is but bounded, so a hostile 1 MB name cannot flood a log.
std::string shown_name(std::string_view name) {
  if (name.size() <= 200) return std::string(name);
  return std::string(name.substr(0, 200)) + "...";
}

constexpr const char* kCorrupt = "; the file is corrupt or truncated";

// Parses one tensor entry of the header. `where` is "<source>: tensor '<name>'".
Result<TensorInfo> parse_tensor_entry(const std::string& name, const nlohmann::json& v,
                                      const std::string& where, uint64_t data_size) {
  if (!v.is_object()) {
    return invalid_argument(
        where + ": expected an object with dtype, shape and data_offsets, got " + describe_json(v));
  }
  TensorInfo t;
  t.name = name;
  auto dt = v.find("dtype");
  if (dt == v.end()) return invalid_argument(where + ": missing \"dtype\"");
  if (!dt->is_string()) {
    return invalid_argument(where + ": \"dtype\" must be a string, got " + describe_json(*dt));
  }
  const std::string& dtype_str = dt->get_ref<const std::string&>();
  std::optional<DType> dtype = parse_dtype(dtype_str);
  if (!dtype) {
    return invalid_argument(where + ": unsupported dtype '" + shown_name(dtype_str) +
                            "'; supported dtypes: " + std::string(supported_dtype_names()));
  }
  t.dtype = *dtype;

  auto sh = v.find("shape");
  if (sh == v.end()) return invalid_argument(where + ": missing \"shape\"");
  if (!sh->is_array()) {
    return invalid_argument(where + ": \"shape\" must be an array, got " + describe_json(*sh));
  }
  if (sh->size() > static_cast<size_t>(Shape::kMaxRank)) {
    return invalid_argument(where + ": rank " + std::to_string(sh->size()) +
                            " exceeds the supported maximum of " + std::to_string(Shape::kMaxRank));
  }
  std::vector<uint64_t> dims;
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned()) {
      return invalid_argument(where + ": shape entries must be non-negative integers, got " +
                              describe_json(d));
    }
    dims.push_back(d.get<uint64_t>());
  }

  auto off = v.find("data_offsets");
  if (off == v.end()) return invalid_argument(where + ": missing \"data_offsets\"");
  if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    return invalid_argument(where +
                            ": \"data_offsets\" must be [begin, end] with non-negative integers, "
                            "got " +
                            off->dump().substr(0, 100));
  }
  t.begin = (*off)[0].get<uint64_t>();
  t.end = (*off)[1].get<uint64_t>();
  const std::string range =
      "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
  if (t.end < t.begin) return data_loss(where + ": " + range + " end before begin" + kCorrupt);
  if (t.end > data_size) {
    return data_loss(where + ": " + range + " reach past the end of the data section (" +
                     std::to_string(data_size) + " bytes)" + kCorrupt);
  }

  // numel x dtype size, overflow-checked, must equal the byte range.
  uint64_t numel = 1;
  for (uint64_t d : dims) {
    if (!checked_mul(numel, d, &numel)) {
      return data_loss(where + ": shape " + shape_string(dims) +
                       " has more elements than fit in 64 bits" + kCorrupt);
    }
  }
  uint64_t nbytes = 0;
  if (!checked_mul(numel, dtype_size(t.dtype), &nbytes)) {
    return data_loss(where + ": shape " + shape_string(dims) + " x " + dtype_str +
                     " overflows 64 bits" + kCorrupt);
  }
  if (nbytes != t.end - t.begin) {
    return data_loss(where + ": shape " + shape_string(dims) + " x " + dtype_str + " = " +
                     std::to_string(nbytes) + " bytes but data_offsets span " +
                     std::to_string(t.end - t.begin) + " bytes" + kCorrupt);
  }
  // Every dim <= numel <= data_size < 2^63 here (or numel == 0), except dims beside a zero.
  for (uint64_t d : dims) {
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return invalid_argument(where + ": dimension " + std::to_string(d) + " exceeds 2^63 - 1");
    }
  }
  t.shape = Shape::from_range(dims.begin(), dims.end());
  return t;
}

}  // namespace

Result<SafetensorsHeader> parse_safetensors(std::span<const std::byte> file,
                                            std::string_view source) {
  const std::string src(source);
  const uint64_t file_size = file.size();
  if (file_size == 0) {
    return data_loss(src +
                     ": file is empty (0 bytes); a safetensors file starts with an 8-byte "
                     "header length");
  }
  if (file_size < 8) {
    return data_loss(src + ": file is " + std::to_string(file_size) +
                     " bytes, shorter than the 8-byte header length" + kCorrupt);
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint64_t>(file[static_cast<size_t>(i)]);
  if (n > kMaxSafetensorsHeaderBytes) {
    return data_loss(src + ": header length " + std::to_string(n) + " exceeds the limit of " +
                     std::to_string(kMaxSafetensorsHeaderBytes) +
                     " bytes; this is not a safetensors file or it is corrupt");
  }
  uint64_t data_offset = 8 + n;  // n <= 1e8: cannot overflow
  if (data_offset > file_size) {
    return data_loss(src + ": header length " + std::to_string(n) + " needs " +
                     std::to_string(data_offset) + " bytes but the file has only " +
                     std::to_string(file_size) + kCorrupt);
  }
  const uint64_t data_size = file_size - data_offset;
  std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, static_cast<size_t>(n));
  MOE_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_strict(text, src + ": header"));
  if (!j.is_object()) {
    return invalid_argument(src + ": header must be a JSON object, got " + describe_json(j));
  }

  SafetensorsHeader h;
  h.data_offset = data_offset;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (value.is_null()) continue;
      if (!value.is_object()) {
        return invalid_argument(src + ": \"__metadata__\" must be an object of strings, got " +
                                describe_json(value));
      }
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          return invalid_argument(src + ": \"__metadata__\" value of '" + shown_name(mk) +
                                  "' must be a string, got " + describe_json(mv));
        }
        h.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    const std::string where = src + ": tensor '" + shown_name(key) + "'";
    MOE_ASSIGN_OR_RETURN(TensorInfo t, parse_tensor_entry(key, value, where, data_size));
    h.tensors.push_back(std::move(t));
  }

  // Sorted by offsets, the ranges must tile the data section exactly: no overlap, no hole.
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.name < b.name;
  });
  uint64_t expected = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& t : h.tensors) {
    const std::string where = src + ": tensor '" + shown_name(t.name) + "'";
    if (t.begin < expected) {
      return data_loss(where + ": data_offsets [" + std::to_string(t.begin) + ", " +
                       std::to_string(t.end) + "] overlap tensor '" + shown_name(prev->name) +
                       "', which ends at byte " + std::to_string(expected) + kCorrupt);
    }
    if (t.begin > expected) {
      return data_loss(where + ": starts at byte " + std::to_string(t.begin) + " but " +
                       (prev ? "tensor '" + shown_name(prev->name) + "' ends at byte "
                             : std::string("the data section starts at byte ")) +
                       std::to_string(expected) + ", leaving a gap of " +
                       std::to_string(t.begin - expected) +
                       " bytes; safetensors data must be contiguous" + kCorrupt);
    }
    expected = t.end;
    prev = &t;
  }
  if (expected != data_size) {
    return data_loss(src + ": tensors cover " + std::to_string(expected) +
                     " bytes but the data section has " + std::to_string(data_size) + " bytes (" +
                     std::to_string(data_size - expected) +
                     " bytes belong to no tensor); the file is corrupt");
  }
  return h;
}

// ---- SafetensorsFile ------------------------------------------------------------------------

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) munmap(const_cast<std::byte*>(map_), map_size_);
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string src = path.string();
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return not_found(src + ": cannot access file: " + ec.message());
    }
    return not_found(src + ": no such file");
  }
  if (std::filesystem::is_directory(st)) {
    return invalid_argument(src + ": is a directory, expected a .safetensors file");
  }
  if (!std::filesystem::is_regular_file(st)) {
    return invalid_argument(src + ": is not a regular file");
  }
  int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return invalid_argument(src + ": cannot open for reading: " + std::strerror(err) +
                            (err == EACCES ? " (check the file permissions)" : ""));
  }
  struct stat sb {};
  if (fstat(fd, &sb) != 0) {
    int err = errno;
    ::close(fd);
    return invalid_argument(src + ": cannot stat: " + std::strerror(err));
  }
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  const size_t size = static_cast<size_t>(sb.st_size);
  if (size > 0) {
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return resource_exhausted(src + ": mmap of " + std::to_string(size) +
                                " bytes failed: " + std::strerror(err));
    }
    f->map_ = static_cast<const std::byte*>(p);
    f->map_size_ = size;
  }
  ::close(fd);  // the mapping stays valid
  MOE_ASSIGN_OR_RETURN(f->header_, parse_safetensors(std::span(f->map_, f->map_size_), src));
  for (size_t i = 0; i < f->header_.tensors.size(); ++i) {
    f->index_.emplace(f->header_.tensors[i].name, i);
  }
  return f;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorInfo& t) const {
  MOE_CHECK(t.begin <= t.end && header_.data_offset + t.end <= map_size_)
      << "tensor '" << t.name << "' is not from " << path_.string();
  if (t.end == t.begin) return {};
  return std::span(map_ + header_.data_offset + t.begin, t.end - t.begin);
}

ConstTensorView SafetensorsFile::view(const TensorInfo& t) const {
  std::span<const std::byte> b = bytes(t);
  const void* data = b.empty() ? static_cast<const void*>(map_ + header_.data_offset) : b.data();
  return ConstTensorView(data, t.dtype, t.shape);
}

// ---- writing --------------------------------------------------------------------------------

Status write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                         const std::map<std::string, std::string>& metadata) {
  const std::string src = path.string();
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    const std::string where = src + ": tensor '" + t.name + "'";
    if (t.name.empty() || t.name == "__metadata__") {
      return invalid_argument(where + ": invalid tensor name");
    }
    if (!names.insert(t.name).second) return invalid_argument(where + ": name given twice");
    uint64_t nbytes = dtype_size(t.dtype);
    nlohmann::ordered_json shape = nlohmann::ordered_json::array();
    for (int64_t d : t.shape) {
      if (d < 0 || !checked_mul(nbytes, static_cast<uint64_t>(d), &nbytes)) {
        return invalid_argument(where + ": invalid shape " + t.shape.to_string());
      }
      shape.push_back(d);
    }
    if (nbytes != t.bytes.size()) {
      return invalid_argument(
          where + ": shape " + t.shape.to_string() + " x " + std::string(dtype_name(t.dtype)) +
          " needs " + std::to_string(nbytes) + " bytes, got " + std::to_string(t.bytes.size()));
    }
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["dtype"] = std::string(dtype_name(t.dtype));
    e["shape"] = std::move(shape);
    e["data_offsets"] = {offset, offset + nbytes};
    header[t.name] = std::move(e);
    offset += nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(uint64_t{text.size()} >> (8 * i));

  // Write to a temporary name and rename, so readers never see a half-written file.
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return invalid_argument(src + ": cannot open for writing: " + std::strerror(errno));
  }
  bool ok =
      std::fwrite(len, 1, 8, f) == 8 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  for (const TensorToWrite& t : tensors) {
    if (!ok) break;
    if (!t.bytes.empty()) ok = std::fwrite(t.bytes.data(), 1, t.bytes.size(), f) == t.bytes.size();
  }
  ok = (std::fclose(f) == 0) && ok;
  std::error_code ec;
  if (ok) std::filesystem::rename(tmp, path, ec);
  if (!ok || ec) {
    std::filesystem::remove(tmp, ec);
    return resource_exhausted(src + ": write failed (disk full or not writable?)");
  }
  return Status();
}

}  // namespace moe::io
