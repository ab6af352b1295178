// Checkpoint: single-file and sharded directories, and every index/shard disagreement.
#include "io/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "io_test_util.h"

namespace moe::io {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public testing::TempDirTest {
 protected:
  CheckpointTest() : TempDirTest("moe_ckpt_") {}

  // Writes `names` as F32 [2] tensors holding {k, k + 0.5} where k is the tensor's position in
  // `names` plus `base`.
  void write_shard(const std::string& file, const std::vector<std::string>& names, float base) {
    std::vector<std::vector<float>> vals;
    for (size_t i = 0; i < names.size(); ++i) vals.push_back({base + i, base + i + 0.5f});
    std::vector<TensorToWrite> tw;
    for (size_t i = 0; i < names.size(); ++i) {
      tw.push_back({names[i], DType::kF32, {2}, std::as_bytes(std::span(vals[i]))});
    }
    ASSERT_TRUE(write_safetensors(dir_ / file, tw).ok());
  }
  void write_index(const std::string& weight_map_json) {
    std::ofstream(dir_ / "model.safetensors.index.json")
        << R"({"metadata":{"total_size":0},"weight_map":)" << weight_map_json << "}";
  }
};

using testing::expect_error;

TEST_F(CheckpointTest, SingleFile) {
  write_shard("model.safetensors", {"a", "b"}, 1.0f);
  auto c = Checkpoint::open(dir_);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->entries().size(), 2u);
  EXPECT_EQ(c->total_bytes(), 16u);
  ASSERT_NE(c->find("b"), nullptr);
  EXPECT_EQ(c->find("c"), nullptr);
  Tensor b = c->tensor("b");
  EXPECT_EQ(b.shape(), Shape({2}));
  float v[2];
  std::memcpy(v, std::as_const(b).data<float>(), sizeof v);
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_EQ(v[1], 2.5f);
}

TEST_F(CheckpointTest, ShardedAndTensorOutlivesCheckpoint) {
  write_shard("model-00001-of-00002.safetensors", {"a", "b"}, 1.0f);
  write_shard("model-00002-of-00002.safetensors", {"c"}, 10.0f);
  write_index(R"({"a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors",)"
              R"("c":"model-00002-of-00002.safetensors"})");
  // A stray model.safetensors is ignored when the index exists.
  write_shard("model.safetensors", {"zzz"}, 0.0f);
  Tensor c_tensor;
  {
    auto c = Checkpoint::open(dir_);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->entries().size(), 3u);
    EXPECT_EQ(c->find("zzz"), nullptr);
    EXPECT_EQ(c->find("c")->file->path().filename(), "model-00002-of-00002.safetensors");
    EXPECT_EQ(c->find("a")->file->path().filename(), "model-00001-of-00002.safetensors");
    EXPECT_EQ(c->total_bytes(), 24u);
    c_tensor = c->tensor("c");
  }
  float v[2];
  std::memcpy(v, std::as_const(c_tensor).data<float>(), sizeof v);  // the mapping is still alive
  EXPECT_EQ(v[0], 10.0f);
  EXPECT_EQ(v[1], 10.5f);
}

TEST_F(CheckpointTest, NothingThere) {
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kNotFound,
               {dir_.string(), "model.safetensors.index.json", "model.safetensors"});
  expect_error(Checkpoint::open(dir_ / "missing").status(), StatusCode::kNotFound,
               {"does not exist"});
}

TEST_F(CheckpointTest, MissingShard) {
  write_shard("s1.safetensors", {"a"}, 1.0f);
  write_index(R"({"a":"s1.safetensors","b":"s2.safetensors"})");
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kNotFound,
               {"model.safetensors.index.json", "1 of 2 shards", "s2.safetensors"});
}

TEST_F(CheckpointTest, TensorInWrongShard) {
  write_shard("s1.safetensors", {"a", "b"}, 1.0f);
  write_shard("s2.safetensors", {"c"}, 1.0f);
  write_index(R"({"a":"s1.safetensors","b":"s2.safetensors","c":"s2.safetensors"})");
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kDataLoss,
               {"1 problem:", "tensor 'b' is in s1.safetensors but the index says s2.safetensors"});
}

TEST_F(CheckpointTest, TensorInTwoShards) {
  write_shard("s1.safetensors", {"a", "b"}, 1.0f);
  write_shard("s2.safetensors", {"b"}, 1.0f);
  write_index(R"({"a":"s1.safetensors","b":"s1.safetensors","x":"s2.safetensors"})");
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kDataLoss,
               {"tensor 'b' is in both s1.safetensors and s2.safetensors"});
}

TEST_F(CheckpointTest, TensorNotInIndex) {
  write_shard("s1.safetensors", {"a", "extra"}, 1.0f);
  write_index(R"({"a":"s1.safetensors"})");
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kDataLoss,
               {"tensor 'extra' is in s1.safetensors but not in the index"});
}

TEST_F(CheckpointTest, BadIndex) {
  write_shard("s1.safetensors", {"a"}, 1.0f);
  write_index(R"({"a":"../s1.safetensors"})");
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kInvalidArgument,
               {"tensor 'a'", "not a relative path inside"});
  write_index(R"({"a":"/etc/passwd"})");
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kInvalidArgument,
               {"not a relative path inside"});
  write_index(R"({"a":7})");
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kInvalidArgument,
               {"tensor 'a'", "number 7"});
  write_index(R"({"a":"s1.safetensors","a":"s1.safetensors"})");
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kInvalidArgument,
               {"'a' appears twice"});
  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"metadata":{}})";
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kInvalidArgument, {"weight_map"});
  std::ofstream(dir_ / "model.safetensors.index.json") << "{not json";
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kInvalidArgument,
               {"model.safetensors.index.json", "invalid JSON"});
}

TEST_F(CheckpointTest, CorruptShardNamesTheShard) {
  write_shard("s1.safetensors", {"a"}, 1.0f);
  std::ofstream(dir_ / "s2.safetensors") << "garbage!garbage!";
  write_index(R"({"a":"s1.safetensors","b":"s2.safetensors"})");
  expect_error(Checkpoint::open(dir_).status(), StatusCode::kDataLoss, {"s2.safetensors"});
}

}  // namespace
}  // namespace moe::io
