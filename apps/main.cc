// moengine: command-line entry point. The only place that picks concrete backends.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "commands.h"

namespace {

constexpr const char* kUsage =
    "usage: moengine <command> [flags]\n"
    "commands:\n"
    "  make-tiny      --arch glm_moe_dsa|deepseek_v3|deepseek_v32 --out DIR [--seed N]\n"
    "                 | --shape glm5 [--layers N] [--bf16] --out DIR   (GLM-5 widths)\n"
    "  inspect        --model-path DIR\n"
    "  quantize       --model-path DIR --out DIR --format nvfp4|fp8-block [--max-shard-bytes N]\n"
    "  generate       --model-path DIR (--prompt-ids 1,2,3 | --prompt TEXT | --chat MESSAGE)\n"
    "                 [--max-new-tokens N] [--temperature T]\n"
    "                 [--top-p P] [--top-k K] [--seed S] [--ignore-eos] [--device cpu|cuda]\n"
    "                 [--gpu-memory GiB] [--eager] [--moe-tune-cache FILE] [--threads N]\n"
    "                 [--moe-f16-activations] [--output-format text|json]\n"
    "  tokenize       --model-path DIR [--text T]   (else JSON lines {\"text\": ...} on stdin)\n"
    "  chat-template  --model-path DIR              (JSON {\"messages\": [...]} on stdin)\n"
    "  tune-moe       --model-path DIR              (measure MoE kernel configs on this GPU)\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("moengine: no command given; run `moengine --help` for the list\n", stderr);
    return 2;
  }
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "make-tiny") return moe::apps::cmd_make_tiny(argc, argv, 2);
    if (cmd == "inspect") return moe::apps::cmd_inspect(argc, argv, 2);
    if (cmd == "generate") return moe::apps::cmd_generate(argc, argv, 2);
    if (cmd == "tokenize") return moe::apps::cmd_tokenize(argc, argv, 2);
    if (cmd == "chat-template") return moe::apps::cmd_chat_template(argc, argv, 2);
    if (cmd == "quantize") return moe::apps::cmd_quantize(argc, argv, 2);
    if (cmd == "tune-moe") return moe::apps::cmd_tune_moe(argc, argv, 2);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "moengine %s: out of host memory\n", cmd.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moengine %s: internal error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "moengine: unknown command '%s'; run `moengine --help` for the list\n",
               cmd.c_str());
  return 2;
}
