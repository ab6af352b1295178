// Shape: up to kMaxRank dimensions, outermost first, stored inline (no allocation).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/check.h"

namespace moe {

class Shape {
 public:
  static constexpr int kMaxRank = 6;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    MOE_CHECK(dims.size() <= kMaxRank) << "rank " << dims.size();
    for (int64_t d : dims) dims_[rank_++] = d;
  }
  template <typename It>
  static Shape from_range(It begin, It end) {
    Shape s;
    for (It it = begin; it != end; ++it) {
      MOE_CHECK(s.rank_ < kMaxRank) << "rank > " << kMaxRank;
      s.dims_[s.rank_++] = static_cast<int64_t>(*it);
    }
    return s;
  }

  int rank() const { return rank_; }
  // Dimension i; negative i counts from the innermost (-1 = last).
  int64_t operator[](int i) const { return dims_[norm(i)]; }
  int64_t& operator[](int i) { return dims_[norm(i)]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }
  bool operator==(const Shape& o) const {
    if (rank_ != o.rank_) return false;
    for (int i = 0; i < rank_; ++i)
      if (dims_[i] != o.dims_[i]) return false;
    return true;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  // "[2, 3, 4]"
  std::string to_string() const {
    std::string s = "[";
    for (int i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
    return s + "]";
  }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  int norm(int i) const {
    int j = i < 0 ? i + rank_ : i;
    MOE_CHECK(j >= 0 && j < rank_) << "dim " << i << " of rank-" << rank_ << " shape";
    return j;
  }

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

}  // namespace moe
