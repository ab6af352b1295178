#include "backends/cuda/device_arena.h"

#include <algorithm>

#include "backends/cuda/cuda_check.h"

namespace moe::cuda {
namespace {
constexpr size_t kAlign = 256;
constexpr size_t kMinBlock = size_t{1} << 20;

bool is_capturing(Stream s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  MOE_CUDA_CHECK(cudaStreamIsCapturing(s, &st), "arena");
  return st != cudaStreamCaptureStatusNone;
}
}  // namespace

DeviceArena::DeviceArena(int device, Stream stream, size_t initial_bytes)
    : device_(device), stream_(stream) {
  if (initial_bytes > 0) blocks_.push_back(new_block(initial_bytes));
}

DeviceArena::~DeviceArena() { release_all(); }

DeviceArena::Block DeviceArena::new_block(size_t bytes) {
  Block b;
  b.size = std::max(bytes, kMinBlock);
  MOE_CUDA_CHECK(cudaSetDevice(device_), "arena");
  MOE_CUDA_CHECK(cudaMalloc(&b.ptr, b.size), "arena: cudaMalloc of a workspace block");
  return b;
}

void DeviceArena::release_all() {
  if (blocks_.empty()) return;
  cudaSetDevice(device_);
  cudaDeviceSynchronize();  // earlier passes may still read the blocks
  for (Block& b : blocks_) cudaFree(b.ptr);
  blocks_.clear();
  current_ = used_ = 0;
}

TensorView DeviceArena::alloc(Shape shape, DType dtype) {
  size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  bytes = std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  while (current_ < blocks_.size() && blocks_[current_].size - used_ < bytes) {
    ++current_;
    used_ = 0;
  }
  if (current_ == blocks_.size()) {
    MOE_CHECK(!is_capturing(stream_))
        << "workspace arena would grow by " << bytes << " bytes during CUDA graph capture; run the "
        << "step once eagerly (or reserve()) before capturing";
    size_t total = capacity();
    blocks_.push_back(new_block(std::max(bytes, total)));
    ++growths_;
    used_ = 0;
  }
  void* p = static_cast<std::byte*>(blocks_[current_].ptr) + used_;
  used_ += bytes;
  pass_bytes_ += bytes;
  high_water_ = std::max(high_water_, pass_bytes_);
  return TensorView(p, dtype, shape, Device::kCuda);
}

void DeviceArena::reset() {
  if (blocks_.size() > 1 && !is_capturing(stream_)) {
    size_t total = capacity();
    release_all();
    blocks_.push_back(new_block(total));
  }
  current_ = 0;
  used_ = 0;
  pass_bytes_ = 0;
}

void DeviceArena::reserve(size_t bytes) {
  if (capacity() >= bytes && blocks_.size() == 1) return;
  size_t total = std::max(bytes, capacity());
  release_all();
  blocks_.push_back(new_block(total));
  current_ = used_ = pass_bytes_ = 0;
}

size_t DeviceArena::capacity() const {
  size_t n = 0;
  for (const Block& b : blocks_) n += b.size;
  return n;
}

}  // namespace moe::cuda
