// Whole-model properties of the reference forward on tiny random checkpoints of each
// architecture: incremental decode == full recomputation, batched == one by one,
// naive MLA == absorbed MLA, and bad input rejected without state changes.
#include <gtest/gtest.h>

#include "model_test_util.h"

namespace moe::testing {
namespace {

class ModelForwardTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = temp_dir("fwd_" + GetParam());
    ASSERT_TRUE(model::write_tiny_model(dir_, GetParam(), 7).ok());
    h_ = Harness::load(dir_);
    ASSERT_TRUE(h_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::unique_ptr<Harness> h_;
};

// Each decode step (one token, absorbed MLA, cached keys) must give the logits that a full
// recomputation of the whole sequence gives; the prompt is longer than index_topk so the DSA
// indexer selects a strict subset.
TEST_P(ModelForwardTest, IncrementalDecodeEqualsFullRecomputation) {
  std::vector<int32_t> ids = random_ids(20, static_cast<int>(h_->cfg().vocab_size), 1);
  model::KvCache cache = h_->make_cache(4, 16);
  model::KvCache::Sequence seq;
  std::vector<float> logits = h_->step(cache, {&seq}, {ids})[0];
  for (int i = 0; i < 12; ++i) {
    std::vector<float> full = h_->prefill_logits(ids);
    EXPECT_LT(max_rel_error(logits, full), 2e-5) << "step " << i;
    int32_t next = argmax(logits);
    ids.push_back(next);
    logits = h_->step(cache, {&seq}, {{next}})[0];
    EXPECT_EQ(seq.length, static_cast<int64_t>(ids.size()));
  }
}

TEST_P(ModelForwardTest, NaiveAndAbsorbedMlaAgree) {
  std::vector<int32_t> ids = random_ids(19, static_cast<int>(h_->cfg().vocab_size), 2);
  auto naive = h_->prefill_logits(ids, model::MlaFormPolicy::kNaive);
  auto absorbed = h_->prefill_logits(ids, model::MlaFormPolicy::kAbsorbed);
  EXPECT_LT(max_rel_error(absorbed, naive), 2e-5);
  // Different prompts give different logits (the comparison is not vacuous).
  auto other = h_->prefill_logits(random_ids(19, static_cast<int>(h_->cfg().vocab_size), 3));
  EXPECT_GT(max_rel_error(other, naive), 1e-2);
}

// Three prompts of different lengths in one batch (prefill, then 6 decode steps) give the same
// logits as running each alone.
TEST_P(ModelForwardTest, BatchOfThreeMatchesOneByOne) {
  const int vocab = static_cast<int>(h_->cfg().vocab_size);
  std::vector<std::vector<int32_t>> prompts = {random_ids(5, vocab, 11), random_ids(17, vocab, 12),
                                               random_ids(10, vocab, 13)};
  model::KvCache cache = h_->make_cache(8, 8);
  std::vector<model::KvCache::Sequence> seqs(3);
  std::vector<std::vector<int32_t>> steps = prompts;
  std::vector<std::vector<std::vector<float>>> batched(3);
  for (int step = 0; step < 7; ++step) {
    auto out = h_->step(cache, {&seqs[0], &seqs[1], &seqs[2]}, steps);
    for (int s = 0; s < 3; ++s) {
      batched[s].push_back(out[s]);
      steps[s] = {argmax(out[s])};
    }
  }
  for (int s = 0; s < 3; ++s) {
    model::KvCache solo_cache = h_->make_cache(4, 8);
    model::KvCache::Sequence solo;
    std::vector<int32_t> tok = prompts[s];
    for (int step = 0; step < 7; ++step) {
      auto out = h_->step(solo_cache, {&solo}, {tok})[0];
      EXPECT_LT(max_rel_error(out, batched[s][step]), 2e-5) << "seq " << s << " step " << step;
      tok = {argmax(out)};
    }
  }
}

TEST_P(ModelForwardTest, BadInputIsRejectedWithoutStateChange) {
  model::KvCache cache = h_->make_cache(2, 4);  // room for 8 tokens
  model::KvCache::Sequence seq;
  Tensor logits = Tensor::empty({1, h_->cfg().vocab_size}, DType::kF32);
  std::vector<int32_t> bad = {1, 2, static_cast<int32_t>(h_->cfg().vocab_size)};
  model::SequenceInput in{bad, &seq};
  Status st = h_->model().forward(h_->ops, h_->ws, cache, std::span(&in, 1), logits.view());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("outside the vocabulary"), std::string::npos) << st.message();
  EXPECT_EQ(seq.length, 0);
  std::vector<int32_t> too_long(9, 3);
  in.tokens = too_long;
  st = h_->model().forward(h_->ops, h_->ws, cache, std::span(&in, 1), logits.view());
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
  EXPECT_EQ(seq.length, 0);
  EXPECT_EQ(cache.free_pages(), 2);
  std::vector<int32_t> empty;
  in.tokens = empty;
  EXPECT_FALSE(h_->model().forward(h_->ops, h_->ws, cache, std::span(&in, 1), logits.view()).ok());
}

INSTANTIATE_TEST_SUITE_P(Archs, ModelForwardTest,
                         ::testing::Values("glm_moe_dsa", "deepseek_v3", "deepseek_v32"));

}  // namespace
}  // namespace moe::testing
