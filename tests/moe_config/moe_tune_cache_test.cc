// The MoE tune cache as the engine reads it: a cache file that is not JSON, of another version
// or with malformed fields is refused by MoeTuneCache::load, and so by
// CudaOps::load_moe_tune_cache (host only), with the same message naming the file and the fix;
// a missing file is an error for the engine (an empty cache for MoeTuneCache::load); entries
// that do not fit the device, or a cache with no entry for it, are warnings and those shapes get
// the heuristic; nothing crashes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/moe_config/moe_config.h"

namespace moe::cuda {
namespace {

DeviceInfo h200() {
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.smem_per_block_optin = 232448;
  d.sm_count = 132;
  return d;
}

class MoeTuneCacheFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        (std::filesystem::temp_directory_path() /
         ("moe_tune_cache_file_test_" +
          std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".json"))
            .string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void write(const std::string& text) { std::ofstream(path_) << text; }
  Result<std::shared_ptr<const MoeTuneCache>> load() {
    warnings_.clear();
    return CudaOps::load_moe_tune_cache(path_, h200(), &warnings_);
  }
  // Both loaders refuse `text` with the same message, naming the file and the fix; returns it.
  std::string refused(const std::string& text) {
    write(text);
    auto direct = MoeTuneCache::load(path_);
    auto engine = load();
    EXPECT_FALSE(direct.ok()) << "MoeTuneCache::load accepted: " << text;
    EXPECT_FALSE(engine.ok()) << "load_moe_tune_cache accepted: " << text;
    if (direct.ok() || engine.ok()) return "";
    const std::string msg = direct.status().to_string();
    EXPECT_EQ(engine.status().to_string(), msg);
    EXPECT_NE(msg.find(path_), std::string::npos) << msg;
    EXPECT_NE(msg.find("tune-moe"), std::string::npos) << msg;
    return msg;
  }
  std::string entry(const MoeShape& s, const std::string& fields) {
    std::string e = "\"";  // built by appends: GCC 12 warns falsely on "lit" + string&&
    e += moe_tune_key(h200(), s);
    e += "\": {";
    e += fields;
    return e + "}";
  }

  std::string path_;
  std::vector<std::string> warnings_;
  const MoeShape shape_{64, 6144, 2048, 256, 8, GroupedFmt::kFp8Block};
};

TEST_F(MoeTuneCacheFile, GoodEntryIsSelectedWithoutWarnings) {
  write("{\"version\": 1, \"entries\": {" +
        entry(shape_, "\"nb\": 4, \"warps_per_cta\": 8, \"ctas_per_sm\": 1, \"us\": 2000") + "}}");
  auto c = load();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(warnings_.empty()) << warnings_.front();
  EXPECT_EQ((*c)->select(h200(), shape_), (MoeKernelConfig{4, 8, 1, false}));
  // The heuristic would not choose nb 4 here, so the entry really is what select returned.
  EXPECT_NE(moe_heuristic_config(shape_, moe_limits(h200())).nb, 4);
  // Another T bucket has no entry: heuristic.
  MoeShape other = shape_;
  other.T = 1;
  EXPECT_EQ((*c)->select(h200(), other), moe_heuristic_config(other, moe_limits(h200())));
}

TEST_F(MoeTuneCacheFile, MissingFileIsAnErrorForTheEngine) {
  auto c = load();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().to_string().find(path_), std::string::npos) << c.status().to_string();
  EXPECT_NE(c.status().to_string().find("tune-moe"), std::string::npos);
  auto direct = MoeTuneCache::load(path_);  // no cache yet: empty, heuristics
  ASSERT_TRUE(direct.ok()) << direct.status().to_string();
  EXPECT_EQ(direct->size(), 0u);
}

TEST_F(MoeTuneCacheFile, GarbageAndTruncatedJsonAreErrors) {
  for (const char* text : {"not json at all", "{\"version\": 1, \"entries\": {\"a\": {\"nb\": 2",
                           "", "\x01\x02\xff\xfe"}) {
    const std::string msg = refused(text);
    EXPECT_NE(msg.find("is not JSON"), std::string::npos) << msg;
  }
}

TEST_F(MoeTuneCacheFile, WrongOrMissingVersionIsAnError) {
  for (const char* text : {"{\"version\": 2, \"entries\": {}}", "{\"version\": 0, \"entries\": {}}",
                           "{\"entries\": {}}", "{\"version\": \"1\", \"entries\": {}}",
                           "{\"version\": 1.0, \"entries\": {}}",
                           "{\"version\": null, \"entries\": {}}", "[1, 2, 3]", "42"}) {
    const std::string msg = refused(text);
    EXPECT_NE(msg.find("reads version 1"), std::string::npos) << msg;
  }
}

TEST_F(MoeTuneCacheFile, MissingOrNonObjectEntriesAreErrors) {
  for (const char* text :
       {"{\"version\": 1}", "{\"version\": 1, \"entries\": 5}", "{\"version\": 1, \"entries\": []}",
        "{\"version\": 1, \"entries\": null}"}) {
    const std::string msg = refused(text);
    EXPECT_NE(msg.find("no \"entries\" object"), std::string::npos) << msg;
  }
}

TEST_F(MoeTuneCacheFile, EachIntegerFieldIsRequiredAndInRange) {
  const std::string key = moe_tune_key(h200(), shape_);
  // Each field absent or not an int32 (floats would be truncated, 2^32 + 1 wrap to 1) in an
  // entry whose other fields are good: the message names the entry and the field.
  const char* fields[] = {"nb", "warps_per_cta", "ctas_per_sm"};
  const char* good[] = {"1", "8", "1"};
  for (int f = 0; f < 3; ++f) {
    for (const char* bad : {"", "2.5", "1e300", "\"two\"", "true", "null", "[1]", "4294967297",
                            "-4294967297", "18446744073709551615"}) {
      std::string fields_text;
      for (int g = 0; g < 3; ++g) {
        if (g == f && *bad == '\0') continue;  // absent
        if (!fields_text.empty()) fields_text += ", ";
        fields_text += std::string("\"") + fields[g] + "\": " + (g == f ? bad : good[g]);
      }
      const std::string msg =
          refused("{\"version\": 1, \"entries\": {" + entry(shape_, fields_text) + "}}");
      EXPECT_NE(msg.find("entry '" + key + "' needs an integer \"" + fields[f] + "\""),
                std::string::npos)
          << fields_text << ": " << msg;
    }
  }
  // An entry that is not an object.
  const std::string msg = refused("{\"version\": 1, \"entries\": {\"" + key + "\": 5}}");
  EXPECT_NE(msg.find("needs an integer \"nb\""), std::string::npos) << msg;
}

TEST_F(MoeTuneCacheFile, OptionalFieldsOfTheWrongTypeAreErrors) {
  for (const char* extra : {"\"pipelined\": \"yes\"", "\"tc\": 1", "\"us\": \"fast\""}) {
    const std::string msg =
        refused("{\"version\": 1, \"entries\": {" +
                entry(shape_, std::string("\"nb\": 1, \"warps_per_cta\": 8, \"ctas_per_sm\": 1, ") +
                                  extra) +
                "}}");
    EXPECT_NE(msg.find("is not valid"), std::string::npos) << msg;
  }
}

TEST_F(MoeTuneCacheFile, AbsentOptionalFieldsTakeTheirDefaults) {
  write("{\"version\": 1, \"entries\": {" +
        entry(shape_, "\"nb\": 2, \"warps_per_cta\": 4, \"ctas_per_sm\": 2") + "}}");
  auto c = MoeTuneCache::load(path_);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->keys(), std::vector<std::string>{moe_tune_key(h200(), shape_)});
  EXPECT_EQ(c->find(moe_tune_key(h200(), shape_)), (MoeKernelConfig{2, 4, 2, false, false}));
}

TEST_F(MoeTuneCacheFile, EntriesThatDoNotFitWarnAndFallBack) {
  MoeShape bf16 = shape_;
  bf16.fmt = GroupedFmt::kBf16;
  MoeShape nvfp4 = shape_;
  nvfp4.fmt = GroupedFmt::kNvfp4;
  write("{\"version\": 1, \"entries\": {" +
        // nb 8 is not an FP8 tile width; nb 3 does not exist; 4 CTAs of 256 threads exceed the
        // register file; absurd counts must not overflow into "fits".
        entry(shape_, "\"nb\": 8, \"warps_per_cta\": 8, \"ctas_per_sm\": 1") + ", " +
        entry(bf16, "\"nb\": 3, \"warps_per_cta\": 8, \"ctas_per_sm\": 1") + ", " +
        entry(nvfp4, "\"nb\": 1, \"warps_per_cta\": 8, \"ctas_per_sm\": 2147483647") + "}}");
  auto c = load();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(warnings_.size(), 3u);
  for (const std::string& w : warnings_) EXPECT_NE(w.find("does not fit"), std::string::npos) << w;
  const MoeDeviceLimits lim = moe_limits(h200());
  for (const MoeShape& s : {shape_, bf16, nvfp4}) {
    const MoeKernelConfig sel = (*c)->select(h200(), s);
    EXPECT_EQ(sel, moe_heuristic_config(s, lim)) << moe_fmt_name(s.fmt);
    EXPECT_TRUE(moe_config_fits(sel, s.fmt, lim));
  }
}

TEST_F(MoeTuneCacheFile, CacheOfAnotherGpuWarnsAndFallsBack) {
  DeviceInfo other;
  other.name = "NVIDIA RTX PRO 6000";
  other.cc_major = 12;
  other.cc_minor = 0;
  other.smem_per_block_optin = 101376;
  other.sm_count = 188;
  write("{\"version\": 1, \"entries\": {\"" + moe_tune_key(other, shape_) +
        "\": {\"nb\": 4, \"warps_per_cta\": 8, \"ctas_per_sm\": 1}}}");
  auto c = load();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("no entry for NVIDIA H200"), std::string::npos) << warnings_[0];
  EXPECT_EQ((*c)->select(h200(), shape_), moe_heuristic_config(shape_, moe_limits(h200())));
  EXPECT_EQ((*c)->select(other, shape_), (MoeKernelConfig{4, 8, 1, false}));
}

}  // namespace
}  // namespace moe::cuda
