// libFuzzer target for the chat-template engine: the input is split at the first NUL byte into a
// template and a JSON context. Parsing and rendering must return a Status, never crash or hang
// (small render limits keep each run short).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "text/jinja_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view src = in.substr(0, nul);
  auto t = moe::text::jinja::Template::parse(src);
  if (!t.ok()) return 0;
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  if (nul != std::string_view::npos) {
    auto parsed = nlohmann::ordered_json::parse(in.substr(nul + 1), nullptr, false);
    if (!parsed.is_discarded() && parsed.is_object()) vars = std::move(parsed);
  }
  if (vars.empty()) {
    vars = nlohmann::ordered_json::parse(
        R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f",
            "arguments": {"a": 1}}}]}, {"role": "tool", "content": "r"}],
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "add_generation_prompt": true, "bos_token": "<s>"})");
  }
  moe::text::jinja::RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_list_items = 1 << 14;
  limits.max_loop_iterations = 20000;
  limits.max_steps = 200000;
  (void)t->render(vars, limits);
  return 0;
}
