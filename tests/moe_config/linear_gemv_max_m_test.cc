// MOE_LINEAR_GEMV_MAX_M as CudaOps reads it (CudaOps::parse_linear_gemv_max_m, host only): an
// integer 0..kLinearGemvMaxM is taken; unset is the default without a word; anything else is the
// default and a warning naming the variable, the value, the range and the default.
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernels/linear/linear.h"

namespace moe::cuda {
namespace {

TEST(LinearGemvMaxM, UnsetIsTheDefault) {
  std::string w;
  EXPECT_EQ(CudaOps::parse_linear_gemv_max_m(nullptr, &w), CudaOps::kDefaultLinearGemvMaxM);
  EXPECT_TRUE(w.empty()) << w;
}

TEST(LinearGemvMaxM, IntegersInRangeAreTaken) {
  for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{8}, kLinearGemvMaxM}) {
    std::string w;
    EXPECT_EQ(CudaOps::parse_linear_gemv_max_m(std::to_string(m).c_str(), &w), m);
    EXPECT_TRUE(w.empty()) << w;
  }
}

TEST(LinearGemvMaxM, OtherValuesWarnAndTakeTheDefault) {
  const std::string too_big = std::to_string(kLinearGemvMaxM + 1);
  for (const char* v : {"", "abc", "4x", "2.5", "-1", too_big.c_str(), "99999999999999999999"}) {
    std::string w;
    EXPECT_EQ(CudaOps::parse_linear_gemv_max_m(v, &w), CudaOps::kDefaultLinearGemvMaxM) << v;
    EXPECT_NE(w.find("MOE_LINEAR_GEMV_MAX_M"), std::string::npos) << w;
    EXPECT_NE(w.find(std::string("'") + v + "'"), std::string::npos) << w;
    EXPECT_NE(w.find("0.." + std::to_string(kLinearGemvMaxM)), std::string::npos) << w;
    EXPECT_NE(w.find("default " + std::to_string(CudaOps::kDefaultLinearGemvMaxM)),
              std::string::npos)
        << w;
  }
  // No sink for the warning: still the default, nothing crashes.
  EXPECT_EQ(CudaOps::parse_linear_gemv_max_m("abc", nullptr), CudaOps::kDefaultLinearGemvMaxM);
}

}  // namespace
}  // namespace moe::cuda
