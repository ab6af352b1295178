// `moengine chat-template --model-path DIR`: renders a chat request read from stdin with the
// model's chat template and prints the prompt exactly (no newline added).
//   stdin: {"messages": [...], "tools": [...], "add_generation_prompt": true, ...template kwargs}
#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_args.h"
#include "commands.h"
#include "text/chat_template.h"

namespace moe::apps {

int cmd_chat_template(int argc, char** argv, int first) {
  const std::string cmd = "chat-template";
  auto args = CliArgs::parse(argc, argv, first, {"--model-path"}, {});
  if (!args.ok()) return fail(cmd, args.status());
  auto dir = args->required("--model-path");
  if (!dir.ok()) return fail(cmd, dir.status());
  auto tmpl = text::ChatTemplate::from_model_dir(*dir);
  if (!tmpl.ok()) return fail(cmd, tmpl.status());
  const std::string input((std::istreambuf_iterator<char>(std::cin)),
                          std::istreambuf_iterator<char>());
  const auto request = nlohmann::ordered_json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded() || !request.is_object()) {
    return fail(cmd, invalid_argument(
                         "stdin must be one JSON object like {\"messages\": [{\"role\": \"user\", "
                         "\"content\": \"hi\"}], \"add_generation_prompt\": true}"));
  }
  auto prompt = tmpl->apply(request);
  if (!prompt.ok()) return fail(cmd, prompt.status());
  std::cout << *prompt << std::flush;
  return 0;
}

}  // namespace moe::apps
