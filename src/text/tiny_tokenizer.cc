#include "text/tiny_tokenizer.h"

#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace moe::text {
namespace {

constexpr const char* kTrainingText =
    "The engine reads the weights of every expert that the batch touches. In decode, those "
    "bytes are the floor, and everything else is overhead. A mixture of experts routes each "
    "token to a few experts out of many; the router picks them with a sigmoid score and a bias. "
    "Attention keeps a latent cache of keys and values, and a small indexer chooses which past "
    "tokens matter. The model writes one token at a time, and each new token costs one step. "
    "Hello world! How are you today? I am fine, thank you. What is the capital of France? "
    "Paris is the capital of France. Numbers like 1, 2, 3, 10, 42 and 2026 appear in text too. "
    "def main(): return 0  # code has symbols: {}, [], (), ->, ==, != and so on.\n"
    "This is a test of the tiny tokenizer. It is small, but it is real: the same rules as the "
    "big ones, with fewer merges. The quick brown fox jumps over the lazy dog.\n";

// GPT-2's byte -> printable unicode mapping used by byte-level BPE.
std::vector<std::string> byte_to_unicode() {
  std::vector<int> cps(256, -1);
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    cps[b] = printable ? b : 256 + n++;
  }
  std::vector<std::string> out(256);
  for (int b = 0; b < 256; ++b) {
    int cp = cps[b];
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {  // all mapped code points are < 0x800: two UTF-8 bytes
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    out[b] = s;
  }
  return out;
}

// Pre-tokenization for training: an optional leading space + letters, digits, or one other byte.
std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  size_t i = 0;
  auto is_alpha = [](unsigned char c) { return std::isalpha(c) != 0; };
  auto is_digit = [](unsigned char c) { return std::isdigit(c) != 0; };
  while (i < text.size()) {
    size_t start = i;
    if (text[i] == ' ' && i + 1 < text.size() && (is_alpha(text[i + 1]) || is_digit(text[i + 1])))
      ++i;
    if (is_alpha(text[i])) {
      while (i < text.size() && is_alpha(text[i])) ++i;
    } else if (is_digit(text[i])) {
      while (i < text.size() && is_digit(text[i])) ++i;
    } else {
      ++i;
    }
    words.push_back(text.substr(start, i - start));
  }
  return words;
}

}  // namespace

Status write_tiny_tokenizer(const std::filesystem::path& dir, int vocab_size) {
  const int n_special = static_cast<int>(std::size(kTinySpecialTokens));
  if (vocab_size < n_special + 256)
    return invalid_argument("a byte-level tokenizer needs a vocabulary of at least " +
                            std::to_string(n_special + 256) + " ids, the model has " +
                            std::to_string(vocab_size));
  const std::vector<std::string> b2u = byte_to_unicode();
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (int i = 0; i < n_special; ++i) {
    vocab[kTinySpecialTokens[i]] = i;
    added.push_back({{"id", i},
                     {"content", kTinySpecialTokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  for (int b = 0; b < 256; ++b) vocab[b2u[b]] = n_special + b;

  // Train merges: words as symbol sequences, weighted by frequency.
  std::map<std::vector<std::string>, int> words;
  for (const std::string& w : split_words(kTrainingText)) {
    std::vector<std::string> sym;
    for (unsigned char c : w) sym.push_back(b2u[c]);
    words[sym]++;
  }
  nlohmann::ordered_json merges = nlohmann::ordered_json::array();
  int next_id = n_special + 256;
  while (next_id < vocab_size) {
    std::map<std::pair<std::string, std::string>, int> pairs;
    for (const auto& [sym, f] : words)
      for (size_t i = 0; i + 1 < sym.size(); ++i) pairs[{sym[i], sym[i + 1]}] += f;
    if (pairs.empty()) break;
    auto best = pairs.begin();  // highest count; ties: smallest pair (map order)
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second) best = it;
    const std::string merged = best->first.first + best->first.second;
    if (vocab.contains(merged)) break;
    vocab[merged] = next_id++;
    merges.push_back({best->first.first, best->first.second});
    std::map<std::vector<std::string>, int> updated;
    for (const auto& [sym, f] : words) {
      std::vector<std::string> out;
      for (size_t i = 0; i < sym.size(); ++i) {
        if (i + 1 < sym.size() && sym[i] == best->first.first && sym[i + 1] == best->first.second) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(sym[i]);
        }
      }
      updated[out] += f;
    }
    words = std::move(updated);
  }
  // Unused ids past the merges (tiny text): reserve them as extra special tokens.
  for (int id = next_id; id < vocab_size; ++id) {
    std::string tok = "<|reserved_" + std::to_string(id) + "|>";
    vocab[tok] = id;
    added.push_back({{"id", id},
                     {"content", tok},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }

  nlohmann::ordered_json bl = {{"type", "ByteLevel"},
                               {"add_prefix_space", false},
                               {"trim_offsets", true},
                               {"use_regex", true}};
  nlohmann::ordered_json tok = {{"version", "1.0"},      {"truncation", nullptr},
                                {"padding", nullptr},    {"added_tokens", added},
                                {"normalizer", nullptr}, {"pre_tokenizer", bl},
                                {"post_processor", bl},  {"decoder", bl}};
  tok["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", nullptr},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", false},
                  {"byte_fallback", false},
                  {"ignore_merges", false},
                  {"vocab", vocab},
                  {"merges", merges}};
  nlohmann::ordered_json cfg = {
      {"add_bos_token", true},
      {"add_eos_token", false},
      {"bos_token", kTinySpecialTokens[0]},
      {"eos_token", kTinySpecialTokens[1]},
      {"model_max_length", 4096},
      {"tokenizer_class", "PreTrainedTokenizerFast"},
      {"chat_template",
       "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
       "{% if add_generation_prompt %}<|assistant|>{% endif %}"}};
  std::ofstream(dir / "tokenizer.json") << tok.dump(1) << "\n";
  std::ofstream(dir / "tokenizer_config.json") << cfg.dump(2) << "\n";
  if (!std::ifstream(dir / "tokenizer_config.json"))
    return invalid_argument("cannot write the tokenizer files into " + dir.string());
  return Status();
}

}  // namespace moe::text
