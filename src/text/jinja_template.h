// A parsed Jinja template, rendered against JSON variables. Immutable after parse(); render() is
// const and thread-safe (each call has its own interpreter state).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/jinja_ast.h"
#include "text/jinja_interpreter.h"
#include "text/jinja_lexer.h"

namespace moe::text::jinja {

class Template {
 public:
  // Syntax errors: InvalidArgument "chat template syntax error at line L, column C: <what>".
  static Result<Template> parse(std::string_view source, const LexOptions& options = {});

  // `variables` must be a JSON object; its members become template variables next to the
  // globals (range, namespace, dict, raise_exception, strftime_now). Runtime errors name the
  // line/column; raise_exception's message is included verbatim; exceeded limits say which.
  Result<std::string> render(const nlohmann::ordered_json& variables,
                             const RenderLimits& limits = {}) const;

  const std::string& source() const { return *source_; }

 private:
  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const NodeList> body_;
};

}  // namespace moe::text::jinja
