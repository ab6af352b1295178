// Chat templates: the Jinja template of a model (tokenizer_config.json "chat_template" or
// chat_template.jinja) rendered the way transformers' apply_chat_template does.
//
// Engine choices (see jinja_*.h). The reference for behaviour is transformers (Python Jinja2,
// ImmutableSandboxedEnvironment, trim_blocks=True, lstrip_blocks=True, loopcontrols, custom
// tojson = json.dumps(ensure_ascii=False)); tests compare byte for byte with @huggingface/jinja
// 0.5.11, whose Template also applies trim_blocks + lstrip_blocks. We follow @huggingface/jinja's
// lexer exactly (whitespace control, one trailing newline dropped) and Python where the two
// differ on values and no real template depends on @huggingface/jinja's variant:
//   - {{ none }} prints "None", {{ true }} prints "True" (@huggingface/jinja: "" and "true");
//     lists/dicts print as @huggingface/jinja prints them (JSON, ", " and ": ").
//   - str.strip/lstrip/rstrip(chars) honour chars (@huggingface/jinja ignores them).
//   - attribute access on an undefined value is an error (Jinja2's default Undefined);
//     iterating an undefined value iterates nothing.
//   - d.items/keys/values/get resolve to the dict methods before keys of that name.
//   - list.append and other mutating methods are refused (transformers' sandbox).
//   - tojson writes floats as Python does (1.0 stays 1.0).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/jinja_template.h"

namespace moe::text {

using jinja::RenderLimits;

class ChatTemplate {
 public:
  // `bos_token`/`eos_token` are offered to the template as variables of the same names.
  static Result<ChatTemplate> from_string(std::string_view source, std::string bos_token = {},
                                          std::string eos_token = {});
  // DIR/chat_template.jinja if it exists, else DIR/tokenizer_config.json "chat_template" (a string,
  // or a list of {"name", "template"} from which "default" is taken). bos/eos tokens come from
  // tokenizer_config.json (a string or {"content": ...}).
  static Result<ChatTemplate> from_model_dir(const std::string& dir);

  // transformers' apply_chat_template: `request` is {"messages": [...], "tools": [...],
  // "add_generation_prompt": bool, ...extra kwargs such as enable_thinking}. Missing tools and
  // documents become None, add_generation_prompt false, bos_token/eos_token the tokenizer's.
  Result<std::string> apply(const nlohmann::ordered_json& request,
                            const RenderLimits& limits = {}) const;
  // Renders with exactly `variables` (no defaults added).
  Result<std::string> render(const nlohmann::ordered_json& variables,
                             const RenderLimits& limits = {}) const {
    return template_.render(variables, limits);
  }

  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }
  const std::string& source() const { return template_.source(); }

 private:
  ChatTemplate(jinja::Template t, std::string bos, std::string eos)
      : template_(std::move(t)), bos_token_(std::move(bos)), eos_token_(std::move(eos)) {}
  jinja::Template template_;
  std::string bos_token_;
  std::string eos_token_;
};

}  // namespace moe::text
