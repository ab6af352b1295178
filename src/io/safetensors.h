// safetensors: validated, zero-copy (mmap) reading and simple writing.
// Validation follows the official parser: 8-byte little-endian header length checked against
// the file size and capped at 100 MB; the header is valid JSON; dtypes are known; shape x dtype
// size equals the byte range; ranges are sorted, contiguous, non-overlapping and cover the data
// exactly; all arithmetic is 64-bit checked. No alignment is assumed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tensor/tensor.h"

namespace moe::io {

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data section (after the header)
  uint64_t end = 0;
};

// A parsed header: tensors in file order plus the optional "__metadata__" string map.
struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // 8 + header length
};

// Parses and validates a whole file image (header + data). `source` names the file in errors.
// Pure function over bytes: the fuzz target calls this.
Result<SafetensorsHeader> parse_safetensors(std::span<const std::byte> file,
                                            std::string_view source);

// One memory-mapped safetensors file. Thread-safe for concurrent reads.
class SafetensorsFile {
 public:
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::filesystem::path& path);
  ~SafetensorsFile();

  const std::filesystem::path& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  const TensorInfo* find(std::string_view name) const;
  // Zero-copy view of a tensor's bytes (read-only, may be unaligned).
  ConstTensorView view(const TensorInfo& t) const;
  std::span<const std::byte> bytes(const TensorInfo& t) const;

 private:
  SafetensorsFile() = default;
  std::filesystem::path path_;
  const std::byte* map_ = nullptr;
  size_t map_size_ = 0;
  SafetensorsHeader header_;
  std::map<std::string, size_t, std::less<>> index_;
};

// A tensor to write: name, dtype, shape and exactly shape.numel()*dtype_size bytes.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  std::span<const std::byte> bytes;
};

// Writes a safetensors file (tensors in the given order; header padded with spaces to 8 bytes).
Status write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace moe::io
