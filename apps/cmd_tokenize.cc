// `moengine tokenize`: encodes text with a model's tokenizer.json and prints the ids as JSON.
//   --model-path DIR        reads DIR/tokenizer.json (+ DIR/tokenizer_config.json if present)
//   --text T                encodes T and prints {"ids": [...]}
//   (no --text)             reads JSON lines {"text": "..."} on stdin, writes {"ids": [...]} each
//   --no-special-tokens     do not add BOS/EOS (the post-processor)
// Exit codes: 0 ok, 2 bad input (bad flag, bad tokenizer files, bad stdin line: names the line).
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_args.h"
#include "commands.h"
#include "text/tokenizer.h"

namespace moe::apps {
namespace {

void print_ids(const std::vector<int32_t>& ids) {
  std::string s = "{\"ids\": [";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(ids[i]);
  }
  s += "]}\n";
  std::fwrite(s.data(), 1, s.size(), stdout);
}

}  // namespace

int cmd_tokenize(int argc, char** argv, int first) {
  const std::string kCommand = "tokenize";
  auto args =
      CliArgs::parse(argc, argv, first, {"--model-path", "--text"}, {"--no-special-tokens"});
  if (!args.ok()) return fail(kCommand, args.status());
  auto dir = args->required("--model-path");
  if (!dir.ok()) return fail(kCommand, dir.status());
  auto tok = text::Tokenizer::from_dir(*dir);
  if (!tok.ok()) return fail(kCommand, tok.status());

  text::EncodeOptions options;
  options.add_special_tokens = !args->has("--no-special-tokens");
  text::EncodeScratch scratch;
  std::vector<int32_t> ids;
  if (auto t = args->optional("--text")) {
    tok->encode(*t, options, &scratch, &ids);
    print_ids(ids);
    return 0;
  }
  std::string line;
  for (int64_t line_no = 1; std::getline(std::cin, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      std::fflush(stdout);
      return fail(kCommand, invalid_argument("stdin line " + std::to_string(line_no) +
                                             ": not valid JSON: " + e.what()));
    }
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string()) {
      std::fflush(stdout);
      return fail(kCommand, invalid_argument("stdin line " + std::to_string(line_no) +
                                             ": expected {\"text\": \"...\"}"));
    }
    ids.clear();
    tok->encode(j["text"].get_ref<const std::string&>(), options, &scratch, &ids);
    print_ids(ids);
  }
  return 0;
}

}  // namespace moe::apps
