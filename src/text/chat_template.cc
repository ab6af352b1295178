// Chat templates (see chat_template.h).
#include "text/chat_template.h"

#include "core/file.h"

namespace moe::text {
namespace {

// Chat templates and tokenizer_config.json are kilobytes; tokenizer_config.json may embed an
// added-token table of a few MB.
constexpr uintmax_t kMaxTemplateBytes = uintmax_t{256} << 20;

std::string token_text(const nlohmann::ordered_json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) {
    return j["content"].get<std::string>();
  }
  return {};
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_string(std::string_view source, std::string bos_token,
                                               std::string eos_token) {
  auto t = jinja::Template::parse(source);
  if (!t.ok()) return t.status();
  return ChatTemplate(std::move(t).value(), std::move(bos_token), std::move(eos_token));
}

Result<ChatTemplate> ChatTemplate::from_model_dir(const std::string& dir) {
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  const std::string config_path = dir + "/tokenizer_config.json";
  auto config_text = read_small_file(config_path, kMaxTemplateBytes);
  if (config_text.ok()) {
    config = nlohmann::ordered_json::parse(*config_text, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) {
      return invalid_argument(config_path + " is not a JSON object; fix or re-download it");
    }
  }
  std::string source;
  auto jinja_file = read_small_file(dir + "/chat_template.jinja", kMaxTemplateBytes);
  if (jinja_file.ok()) {
    source = std::move(jinja_file).value();
  } else if (!config_text.ok()) {
    return not_found("no chat template in " + dir +
                     ": expected chat_template.jinja or tokenizer_config.json");
  } else {
    const auto it = config.find("chat_template");
    if (it == config.end() || it->is_null()) {
      return not_found(config_path +
                       " has no \"chat_template\"; pass a model with a chat template");
    }
    if (it->is_string()) {
      source = it->get<std::string>();
    } else if (it->is_array()) {
      for (const auto& e : *it) {
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") &&
            e["template"].is_string()) {
          source = e["template"].get<std::string>();
        }
      }
      if (source.empty()) {
        return invalid_argument(config_path + ": \"chat_template\" list has no \"default\" entry");
      }
    } else {
      return invalid_argument(config_path + ": \"chat_template\" must be a string or a list");
    }
  }
  std::string bos = config.contains("bos_token") ? token_text(config["bos_token"]) : "";
  std::string eos = config.contains("eos_token") ? token_text(config["eos_token"]) : "";
  auto t = from_string(source, std::move(bos), std::move(eos));
  if (!t.ok()) return t.status().with_context(dir);
  return t;
}

Result<std::string> ChatTemplate::apply(const nlohmann::ordered_json& request,
                                        const RenderLimits& limits) const {
  if (!request.is_object()) return invalid_argument("chat request must be a JSON object");
  const auto msgs = request.find("messages");
  if (msgs == request.end() || !msgs->is_array()) {
    return invalid_argument("chat request needs \"messages\": a list of {\"role\", \"content\"}");
  }
  nlohmann::ordered_json vars = request;
  if (!vars.contains("tools")) vars["tools"] = nullptr;
  if (!vars.contains("documents")) vars["documents"] = nullptr;
  if (!vars.contains("add_generation_prompt")) vars["add_generation_prompt"] = false;
  if (!vars.contains("bos_token")) vars["bos_token"] = bos_token_;
  if (!vars.contains("eos_token")) vars["eos_token"] = eos_token_;
  return template_.render(vars, limits);
}

}  // namespace moe::text
