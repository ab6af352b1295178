#include "tensor/arena.h"

#include <algorithm>
#include <cstdint>

namespace moe {

TensorView HostArena::alloc(Shape shape, DType dtype) {
  size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  bytes = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  while (current_ < blocks_.size() && blocks_[current_].size - blocks_[current_].used < bytes)
    ++current_;
  if (current_ == blocks_.size()) {
    Block b;
    b.size = std::max(bytes, block_bytes_);
    b.mem.reset(new std::byte[b.size + 64]);
    auto addr = reinterpret_cast<uintptr_t>(b.mem.get());
    b.base = b.mem.get() + ((64 - addr % 64) % 64);
    blocks_.push_back(std::move(b));
  }
  Block& b = blocks_[current_];
  void* p = b.base + b.used;
  b.used += bytes;
  return TensorView(p, dtype, shape);
}

void HostArena::reset() {
  for (auto& b : blocks_) b.used = 0;
  current_ = 0;
}

size_t HostArena::reserved_bytes() const {
  size_t n = 0;
  for (const auto& b : blocks_) n += b.size;
  return n;
}

}  // namespace moe
