#include "tensor/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace moe {

Tensor Tensor::empty(Shape shape, DType dtype) {
  size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  size_t alloc = ((bytes + 63) / 64) * 64;
  if (alloc == 0) alloc = 64;
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw std::bad_alloc();
  Tensor t;
  t.owner_ = std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
  t.data_ = p;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.mutable_ = true;
  return t;
}

Tensor Tensor::zeros(Shape shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(const_cast<void*>(t.data_), 0, t.nbytes());
  return t;
}

Tensor Tensor::wrap(std::shared_ptr<const void> owner, const void* data, DType dtype, Shape shape,
                    Device device) {
  Tensor t;
  t.owner_ = std::move(owner);
  t.data_ = data;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.device_ = device;
  t.mutable_ = false;
  return t;
}

Tensor Tensor::wrap_mutable(std::shared_ptr<void> owner, void* data, DType dtype, Shape shape,
                            Device device) {
  Tensor t = wrap(std::move(owner), data, dtype, shape, device);
  t.mutable_ = true;
  return t;
}

}  // namespace moe
