// Workspace: scratch tensors for one forward pass. HostArena is a bump allocator over blocks
// that are kept across passes: after the first pass of a given size, a forward allocates
// nothing from the system. Not thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "tensor/tensor.h"

namespace moe {

class Workspace {
 public:
  virtual ~Workspace() = default;
  // Uninitialised scratch valid until reset().
  virtual TensorView alloc(Shape shape, DType dtype) = 0;
  // Releases every tensor handed out since the last reset (memory is kept).
  virtual void reset() = 0;
};

class HostArena final : public Workspace {
 public:
  explicit HostArena(size_t block_bytes = size_t{1} << 24) : block_bytes_(block_bytes) {}
  TensorView alloc(Shape shape, DType dtype) override;
  void reset() override;
  size_t reserved_bytes() const;

 private:
  struct Block {
    std::unique_ptr<std::byte[]> mem;
    std::byte* base = nullptr;  // mem rounded up to 64 bytes
    size_t size = 0;
    size_t used = 0;
  };
  size_t block_bytes_;
  std::vector<Block> blocks_;
  size_t current_ = 0;
};

}  // namespace moe
