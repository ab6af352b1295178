// DeviceArena: moe::Workspace over device memory. A bump allocator over cudaMalloc'd blocks
// kept across passes: after the first pass of a given size a forward allocates nothing from
// CUDA, so the pass can be captured in a CUDA graph. When a pass needed several blocks, the next
// reset() (between steps, never while capturing) merges them into one block of the total size.
// Not thread-safe; one arena per stream.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/cuda/kernels/kernel_types.h"
#include "tensor/arena.h"

namespace moe::cuda {

class DeviceArena final : public Workspace {
 public:
  // `stream`: the stream whose work uses the memory (checked for capture before growing).
  DeviceArena(int device, Stream stream, size_t initial_bytes = 0);
  ~DeviceArena() override;
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // Uninitialised device memory (256-byte aligned) valid until reset(); Device::kCuda views.
  TensorView alloc(Shape shape, DType dtype) override;
  void reset() override;
  // Makes sure one block of at least `bytes` exists (between steps).
  void reserve(size_t bytes);

  size_t capacity() const;
  size_t high_water() const { return high_water_; }
  int growths() const { return growths_; }  // cudaMallocs made by alloc() (not by reserve)

 private:
  struct Block {
    void* ptr = nullptr;
    size_t size = 0;
  };
  void release_all();
  Block new_block(size_t bytes);

  int device_;
  Stream stream_;
  std::vector<Block> blocks_;
  size_t current_ = 0;  // block being filled
  size_t used_ = 0;     // bytes used in blocks_[current_]
  size_t pass_bytes_ = 0, high_water_ = 0;
  int growths_ = 0;
};

}  // namespace moe::cuda
