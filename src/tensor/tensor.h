// TensorView (non-owning, strided) and Tensor (owning host memory or keeping an external
// owner such as an mmap alive). Strides are in elements. Views never allocate.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "core/check.h"
#include "core/dtype.h"
#include "tensor/shape.h"

namespace moe {

enum class Device : uint8_t { kCpu, kCuda };

template <typename Ptr>  // void* or const void*
class BasicTensorView {
 public:
  BasicTensorView() = default;
  BasicTensorView(Ptr data, DType dtype, Shape shape, Device device = Device::kCpu)
      : data_(data), dtype_(dtype), shape_(shape), device_(device) {
    set_contiguous_strides();
  }
  BasicTensorView(Ptr data, DType dtype, Shape shape, Shape strides, Device device)
      : data_(data), dtype_(dtype), shape_(shape), strides_(strides), device_(device) {}
  // Mutable views convert to const views.
  template <typename P, typename = std::enable_if_t<std::is_same_v<P, void*> &&
                                                    std::is_same_v<Ptr, const void*>>>
  BasicTensorView(const BasicTensorView<P>& o)  // NOLINT
      : data_(o.raw()),
        dtype_(o.dtype()),
        shape_(o.shape()),
        strides_(o.strides()),
        device_(o.device()) {}

  Ptr raw() const { return data_; }
  template <typename T>
  auto data() const {
    using Q = std::conditional_t<std::is_const_v<std::remove_pointer_t<Ptr>>, const T*, T*>;
    return static_cast<Q>(data_);
  }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  Device device() const { return device_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t stride(int i) const { return strides_[i]; }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool empty() const { return data_ == nullptr; }

  bool is_contiguous() const {
    int64_t expect = 1;
    for (int i = shape_.rank() - 1; i >= 0; --i) {
      if (shape_[i] != 1 && strides_[i] != expect) return false;
      expect *= shape_[i];
    }
    return true;
  }

  // Elements [begin, end) of dimension d (negative d counts from the innermost).
  BasicTensorView slice(int d, int64_t begin, int64_t end) const {
    int j = shape_.norm(d);
    MOE_CHECK(0 <= begin && begin <= end && end <= shape_[j])
        << "slice [" << begin << ", " << end << ") of dim " << d << " in " << shape_.to_string();
    BasicTensorView v = *this;
    v.data_ = offset(begin * strides_[j]);
    v.shape_[j] = end - begin;
    return v;
  }
  // Drops the outermost dimension at index i.
  BasicTensorView row(int64_t i) const {
    MOE_CHECK(rank() >= 1 && i >= 0 && i < shape_[0])
        << "row " << i << " of " << shape_.to_string();
    BasicTensorView v;
    v.data_ = offset(i * strides_[0]);
    v.dtype_ = dtype_;
    v.device_ = device_;
    v.shape_ = Shape::from_range(shape_.begin() + 1, shape_.end());
    v.strides_ = Shape::from_range(strides_.begin() + 1, strides_.end());
    return v;
  }
  // Inserts a dimension of size 1 before dimension d (0..rank); works on strided views.
  BasicTensorView unsqueeze(int d) const {
    MOE_CHECK(d >= 0 && d <= rank() && rank() < Shape::kMaxRank) << "unsqueeze " << d;
    BasicTensorView v = *this;
    std::array<int64_t, Shape::kMaxRank> dims{}, strides{};
    int n = 0;
    for (int i = 0; i <= rank(); ++i) {
      if (i == d) {
        dims[n] = 1;
        strides[n++] = i < rank() ? shape_[i] * strides_[i] : 1;
      }
      if (i < rank()) {
        dims[n] = shape_[i];
        strides[n++] = strides_[i];
      }
    }
    v.shape_ = Shape::from_range(dims.begin(), dims.begin() + n);
    v.strides_ = Shape::from_range(strides.begin(), strides.begin() + n);
    return v;
  }
  // Same memory, new shape; requires a contiguous view with the same element count.
  BasicTensorView reshape(Shape s) const {
    MOE_CHECK(is_contiguous()) << "reshape of a strided view " << shape_.to_string();
    MOE_CHECK(s.numel() == numel()) << "reshape " << shape_.to_string() << " -> " << s.to_string();
    return BasicTensorView(data_, dtype_, s, device_);
  }

 private:
  Ptr offset(int64_t elems) const {
    using B = std::conditional_t<std::is_const_v<std::remove_pointer_t<Ptr>>, const std::byte*,
                                 std::byte*>;
    return static_cast<Ptr>(static_cast<B>(data_) +
                            elems * static_cast<int64_t>(dtype_size(dtype_)));
  }
  void set_contiguous_strides() {
    strides_ = shape_;
    int64_t s = 1;
    for (int i = shape_.rank() - 1; i >= 0; --i) {
      strides_[i] = s;
      s *= shape_[i];
    }
  }

  Ptr data_ = nullptr;
  DType dtype_ = DType::kF32;
  Shape shape_;
  Shape strides_;
  Device device_ = Device::kCpu;
};

using TensorView = BasicTensorView<void*>;
using ConstTensorView = BasicTensorView<const void*>;

// An owning contiguous host tensor, or a handle that keeps an external owner alive.
class Tensor {
 public:
  Tensor() = default;
  // Uninitialised host memory, 64-byte aligned.
  static Tensor empty(Shape shape, DType dtype);
  // Host memory filled with zeros.
  static Tensor zeros(Shape shape, DType dtype);
  // Wraps read-only memory owned by `owner` (e.g. an mmap); the tensor keeps owner alive.
  static Tensor wrap(std::shared_ptr<const void> owner, const void* data, DType dtype, Shape shape,
                     Device device = Device::kCpu);
  // Wraps mutable memory owned by `owner` (e.g. a cudaMalloc'd block with a cudaFree deleter).
  static Tensor wrap_mutable(std::shared_ptr<void> owner, void* data, DType dtype, Shape shape,
                             Device device);

  bool defined() const { return owner_ != nullptr; }
  TensorView view() {
    MOE_CHECK(mutable_) << "mutable view of a read-only tensor";
    return TensorView(const_cast<void*>(data_), dtype_, shape_, device_);
  }
  ConstTensorView view() const { return ConstTensorView(data_, dtype_, shape_, device_); }
  ConstTensorView cview() const { return view(); }
  template <typename T>
  T* data() {
    MOE_CHECK(mutable_) << "mutable data of a read-only tensor";
    return static_cast<T*>(const_cast<void*>(data_));
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

 private:
  std::shared_ptr<const void> owner_;
  const void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  Shape shape_;
  Device device_ = Device::kCpu;
  bool mutable_ = false;
};

}  // namespace moe
