// safetensors: round trips of every dtype, and one test per corruption class checking that the
// error names the file and the tensor and says what is wrong.
#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "io_test_util.h"

namespace moe::io {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public testing::TempDirTest {
 protected:
  SafetensorsTest() : TempDirTest("moe_st_") {}
};

// File image: 8-byte little-endian header length, header text, `data_bytes` bytes of data.
std::vector<std::byte> image(const std::string& header, size_t data_bytes,
                             uint64_t len_override = 0, bool use_override = false) {
  uint64_t n = use_override ? len_override : header.size();
  std::vector<std::byte> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(n >> (8 * i));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<std::byte>(i * 7 + 1));
  return out;
}

Result<SafetensorsHeader> parse(const std::string& header, size_t data_bytes) {
  std::vector<std::byte> img = image(header, data_bytes);
  return parse_safetensors(img, "model.safetensors");
}

using testing::expect_error;

TEST_F(SafetensorsTest, RoundTripsEveryDtype) {
  struct Case {
    std::string name;
    DType dtype;
    Shape shape;
  };
  const std::vector<Case> cases = {
      {"bf16", DType::kBF16, {3, 5}},   {"f16", DType::kF16, {7}},
      {"f32", DType::kF32, {2, 3, 4}},  {"f8", DType::kF8E4M3, {9, 1}},
      {"u8", DType::kU8, {13}},         {"i8", DType::kI8, {2, 2, 2, 2}},
      {"i32", DType::kI32, {5, 1, 1}},  {"i64", DType::kI64, {3}},
      {"bool", DType::kBool, {4, 2}},   {"scalar", DType::kF32, {}},
      {"empty", DType::kBF16, {0, 16}},
  };
  std::vector<std::vector<std::byte>> payloads;
  std::vector<TensorToWrite> tw;
  for (size_t i = 0; i < cases.size(); ++i) {
    size_t n = static_cast<size_t>(cases[i].shape.numel()) * dtype_size(cases[i].dtype);
    std::vector<std::byte> b(n);
    for (size_t k = 0; k < n; ++k) b[k] = static_cast<std::byte>((k * 31 + i * 17 + 3) & 0xFF);
    payloads.push_back(std::move(b));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    tw.push_back({cases[i].name, cases[i].dtype, cases[i].shape, payloads[i]});
  }
  const fs::path path = dir_ / "all.safetensors";
  ASSERT_TRUE(write_safetensors(path, tw, {{"format", "pt"}, {"note", "x"}}).ok());

  // Header padded with spaces to a multiple of 8.
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  EXPECT_EQ(n % 8, 0u);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  EXPECT_EQ(header.front(), '{');

  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto& h = (*f)->header();
  EXPECT_EQ(h.data_offset, 8 + n);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.metadata.at("note"), "x");
  EXPECT_EQ(h.tensors.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const TensorInfo* t = (*f)->find(cases[i].name);
    ASSERT_NE(t, nullptr) << cases[i].name;
    EXPECT_EQ(t->dtype, cases[i].dtype) << cases[i].name;
    EXPECT_EQ(t->shape, cases[i].shape) << cases[i].name;
    EXPECT_EQ(t->shape.rank(), cases[i].shape.rank()) << cases[i].name;
    auto bytes = (*f)->bytes(*t);
    ASSERT_EQ(bytes.size(), payloads[i].size()) << cases[i].name;
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), payloads[i].begin())) << cases[i].name;
    ConstTensorView v = (*f)->view(*t);
    EXPECT_EQ(v.dtype(), cases[i].dtype);
    EXPECT_EQ(v.shape(), cases[i].shape);
    if (!payloads[i].empty()) {
      EXPECT_EQ(std::memcmp(v.raw(), payloads[i].data(), payloads[i].size()), 0);
    }
  }
  EXPECT_EQ((*f)->find("nope"), nullptr);
  // Tensors come back in data order, contiguous.
  uint64_t expect = 0;
  for (const TensorInfo& t : h.tensors) {
    EXPECT_EQ(t.begin, expect) << t.name;
    expect = t.end;
  }
}

TEST_F(SafetensorsTest, UnalignedDataIsReadCorrectly) {
  // Header of 61 bytes: data starts at byte 69, which is not aligned for F32.
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.append(61 - header.size(), ' ');
  std::vector<std::byte> img = image(header, 8);
  const fs::path path = dir_ / "odd.safetensors";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(img.data()), img.size());
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorInfo* t = (*f)->find("a");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ((*f)->header().data_offset, 69u);
  auto b = (*f)->bytes(*t);
  ASSERT_EQ(b.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(b[i], static_cast<std::byte>(i * 7 + 1));
}

TEST(SafetensorsParse, EmptyHeaderAndZeroSizedTensorsAreValid) {
  auto h = parse("{}", 0);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_TRUE(h->tensors.empty());
  auto z = parse(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                 R"("b":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
                 R"("c":{"dtype":"I8","shape":[2,0],"data_offsets":[3,3]}})",
                 3);
  ASSERT_TRUE(z.ok()) << z.status().to_string();
  EXPECT_EQ(z->tensors.size(), 3u);
}

TEST(SafetensorsParse, EmptyFile) {
  expect_error(parse_safetensors({}, "m.safetensors").status(), StatusCode::kDataLoss,
               {"m.safetensors", "empty"});
}

TEST(SafetensorsParse, ShorterThanLengthField) {
  std::vector<std::byte> b(5, std::byte{0});
  expect_error(parse_safetensors(b, "m.safetensors").status(), StatusCode::kDataLoss,
               {"m.safetensors", "5 bytes", "shorter than the 8-byte"});
}

TEST(SafetensorsParse, HeaderLengthAboveCap) {
  auto img = image("{}", 0, kMaxSafetensorsHeaderBytes + 1, true);
  expect_error(parse_safetensors(img, "m.safetensors").status(), StatusCode::kDataLoss,
               {"m.safetensors", "100000001", "exceeds the limit"});
  // 2^64 - 1 must not wrap around 8 + N.
  auto img2 = image("{}", 0, ~uint64_t{0}, true);
  expect_error(parse_safetensors(img2, "m.safetensors").status(), StatusCode::kDataLoss,
               {"exceeds the limit"});
}

TEST(SafetensorsParse, HeaderLengthPastEndOfFile) {
  auto img = image("{}", 10, 1000, true);  // file is 8 + 2 + 10 = 20 bytes
  expect_error(parse_safetensors(img, "m.safetensors").status(), StatusCode::kDataLoss,
               {"m.safetensors", "header length 1000", "needs 1008 bytes", "only 20"});
}

TEST(SafetensorsParse, InvalidJson) {
  expect_error(parse(R"({"a": {"dtype": "F32",)", 0).status(), StatusCode::kInvalidArgument,
               {"model.safetensors", "invalid JSON"});
  expect_error(parse("\xff\xfe{}", 0).status(), StatusCode::kInvalidArgument, {"invalid JSON"});
  expect_error(parse(R"(["a"])", 0).status(), StatusCode::kInvalidArgument,
               {"must be a JSON object"});
  std::string deep(500, '[');
  expect_error(parse(deep, 0).status(), StatusCode::kInvalidArgument, {"nests deeper"});
}

TEST(SafetensorsParse, UnknownDtype) {
  expect_error(parse(R"({"w":{"dtype":"F8_E5M2","shape":[2],"data_offsets":[0,2]}})", 2).status(),
               StatusCode::kInvalidArgument,
               {"model.safetensors", "tensor 'w'", "'F8_E5M2'", "BF16, F16, F32, F8_E4M3"});
}

TEST(SafetensorsParse, ShapeSizeMismatch) {
  expect_error(
      parse(R"({"x.weight":{"dtype":"BF16","shape":[4,8],"data_offsets":[0,60]}})", 60).status(),
      StatusCode::kDataLoss,
      {"model.safetensors: tensor 'x.weight': shape [4, 8] x BF16 = 64 bytes but data_offsets "
       "span 60 bytes; the file is corrupt or truncated"});
}

TEST(SafetensorsParse, OverlappingRanges) {
  expect_error(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                     12)
                   .status(),
               StatusCode::kDataLoss, {"tensor 'b'", "overlap tensor 'a'", "ends at byte 8"});
}

TEST(SafetensorsParse, GapBetweenRanges) {
  expect_error(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
                     20)
                   .status(),
               StatusCode::kDataLoss, {"tensor 'b'", "starts at byte 12", "gap of 4 bytes"});
  // A gap at the very start.
  expect_error(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12).status(),
               StatusCode::kDataLoss, {"tensor 'a'", "gap of 4 bytes"});
}

TEST(SafetensorsParse, DataNotFullyCovered) {
  expect_error(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 12).status(),
               StatusCode::kDataLoss, {"model.safetensors", "cover 8 bytes", "has 12 bytes"});
}

TEST(SafetensorsParse, OffsetsPastEnd) {
  expect_error(parse(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8).status(),
               StatusCode::kDataLoss, {"tensor 'a'", "past the end of the data section (8 bytes)"});
  expect_error(parse(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8).status(),
               StatusCode::kDataLoss, {"tensor 'a'", "end before begin"});
}

TEST(SafetensorsParse, OverflowingShapeProduct) {
  expect_error(parse(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,2],)"
                     R"("data_offsets":[0,0]}})",
                     0)
                   .status(),
               StatusCode::kDataLoss, {"tensor 'a'", "more elements than fit in 64 bits"});
  expect_error(
      parse(R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0)
          .status(),
      StatusCode::kDataLoss, {"tensor 'a'", "x F32 overflows 64 bits"});
}

TEST(SafetensorsParse, DuplicateNames) {
  expect_error(parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                     R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                     2)
                   .status(),
               StatusCode::kInvalidArgument, {"model.safetensors", "'a' appears twice"});
}

TEST(SafetensorsParse, MalformedEntries) {
  expect_error(parse(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", 0).status(),
               StatusCode::kInvalidArgument, {"tensor 'a'", "non-negative integers"});
  expect_error(parse(R"({"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,0]}})", 0).status(),
               StatusCode::kInvalidArgument, {"tensor 'a'", "non-negative integers"});
  expect_error(
      parse(R"({"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1).status(),
      StatusCode::kInvalidArgument, {"tensor 'a'", "rank 7"});
  expect_error(parse(R"({"a":{"shape":[1],"data_offsets":[0,1]}})", 1).status(),
               StatusCode::kInvalidArgument, {"tensor 'a'", "missing \"dtype\""});
  expect_error(parse(R"({"a":{"dtype":"U8","data_offsets":[0,1]}})", 1).status(),
               StatusCode::kInvalidArgument, {"tensor 'a'", "missing \"shape\""});
  expect_error(parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1).status(),
               StatusCode::kInvalidArgument, {"tensor 'a'", "[begin, end]"});
  expect_error(parse(R"({"a":[1,2]})", 0).status(), StatusCode::kInvalidArgument,
               {"tensor 'a'", "expected an object"});
  expect_error(parse(R"({"__metadata__":{"k":1}})", 0).status(), StatusCode::kInvalidArgument,
               {"__metadata__", "'k'", "must be a string"});
  expect_error(parse(R"({"__metadata__":[]})", 0).status(), StatusCode::kInvalidArgument,
               {"__metadata__", "object of strings"});
}

TEST_F(SafetensorsTest, OpenErrors) {
  auto missing = SafetensorsFile::open(dir_ / "nope.safetensors");
  expect_error(missing.status(), StatusCode::kNotFound, {"nope.safetensors", "no such file"});

  auto d = SafetensorsFile::open(dir_);
  expect_error(d.status(), StatusCode::kInvalidArgument, {dir_.string(), "is a directory"});

  const fs::path empty = dir_ / "empty.safetensors";
  std::ofstream(empty).close();
  expect_error(SafetensorsFile::open(empty).status(), StatusCode::kDataLoss,
               {empty.string(), "empty"});

  const fs::path tiny = dir_ / "tiny.safetensors";
  std::ofstream(tiny) << "abc";
  expect_error(SafetensorsFile::open(tiny).status(), StatusCode::kDataLoss,
               {tiny.string(), "3 bytes"});

  if (::geteuid() != 0) {  // root reads anything
    const fs::path locked = dir_ / "locked.safetensors";
    std::vector<std::byte> img = image("{}", 0);
    std::ofstream(locked, std::ios::binary)
        .write(reinterpret_cast<const char*>(img.data()), img.size());
    fs::permissions(locked, fs::perms::none);
    expect_error(SafetensorsFile::open(locked).status(), StatusCode::kInvalidArgument,
                 {locked.string(), "cannot open", "permission"});
  }
}

TEST_F(SafetensorsTest, WriteRejectsBadInput) {
  std::vector<std::byte> b(6);
  std::vector<TensorToWrite> wrong_size = {{"a", DType::kF32, {2}, b}};
  expect_error(write_safetensors(dir_ / "x.safetensors", wrong_size), StatusCode::kInvalidArgument,
               {"tensor 'a'", "needs 8 bytes, got 6"});
  std::vector<std::byte> one(1);
  std::vector<TensorToWrite> dup = {{"a", DType::kU8, {1}, one}, {"a", DType::kU8, {1}, one}};
  expect_error(write_safetensors(dir_ / "x.safetensors", dup), StatusCode::kInvalidArgument,
               {"tensor 'a'", "twice"});
  EXPECT_FALSE(fs::exists(dir_ / "x.safetensors"));
}

}  // namespace
}  // namespace moe::io
