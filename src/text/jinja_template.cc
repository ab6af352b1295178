// A parsed Jinja template (see jinja_template.h).
#include "text/jinja_template.h"

#include <new>

#include "text/jinja_parser.h"

namespace moe::text::jinja {

Result<Template> Template::parse(std::string_view source, const LexOptions& options) {
  auto tokens = tokenize(source, options);
  if (!tokens.ok()) return tokens.status();
  auto body = jinja::parse(*tokens, source);
  if (!body.ok()) return body.status();
  Template t;
  t.source_ = std::make_shared<const std::string>(source);
  t.body_ = std::make_shared<const NodeList>(std::move(body).value());
  return t;
}

Result<std::string> Template::render(const nlohmann::ordered_json& variables,
                                     const RenderLimits& limits) const {
  if (!variables.is_object()) {
    return invalid_argument("chat template variables must be a JSON object, got " +
                            std::string(variables.type_name()));
  }
  std::string out;
  try {
    Scope globals;
    install_globals(globals);
    for (auto it = variables.begin(); it != variables.end(); ++it) {
      globals.set(it.key(), from_json(it.value()));
    }
    Interpreter interp(limits);
    interp.render(*body_, globals, out);
  } catch (const JinjaError& e) {
    std::string where = e.has_offset ? " at " + describe_position(*source_, e.offset) : "";
    const std::string msg = e.what();
    const bool limit =
        msg.find("limit") != std::string::npos || msg.find("too deep") != std::string::npos;
    return Status(limit ? StatusCode::kResourceExhausted : StatusCode::kInvalidArgument,
                  "chat template error" + where + ": " + msg);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("chat template rendering ran out of memory");
  }
  return out;
}

}  // namespace moe::text::jinja
