// Shared by the io tests: a fresh temporary directory per test and an error-message matcher.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <system_error>

#include "core/status.h"

namespace moe::io::testing {

// A fixture whose dir_ is a fresh directory named after `prefix`, the process and the test,
// removed (permissions restored first) after the test.
class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir_, ec);
  }
  std::string prefix_;
  std::filesystem::path dir_;
};

// Asserts failure with `code` and a message containing every one of `parts`.
inline void expect_error(const Status& s, StatusCode code,
                         std::initializer_list<std::string> parts) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos)
        << "missing '" << p << "' in: " << s.message();
  }
}

}  // namespace moe::io::testing
