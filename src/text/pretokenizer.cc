// Parsing of the "pre_tokenizer" section of tokenizer.json (see pretokenizer.h).
#include "text/pretokenizer.h"

namespace moe::text {
namespace {

// The GPT-2 pattern HF's ByteLevel pre-tokenizer applies when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

bool get_bool(const nlohmann::json& j, const char* key, bool default_value) {
  auto it = j.find(key);
  return (it != j.end() && it->is_boolean()) ? it->get<bool>() : default_value;
}

}  // namespace

Result<PreTokenizer> PreTokenizer::from_json(const nlohmann::json& j) {
  PreTokenizer p;
  if (j.is_null()) return p;
  MOE_RETURN_IF_ERROR(parse_into(j, "pre_tokenizer", &p));
  return p;
}

Status PreTokenizer::parse_into(const nlohmann::json& j, const std::string& path,
                                PreTokenizer* out) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return invalid_argument(path + ": expected an object with a string \"type\"");
  }
  if (out->byte_level_) {
    return unimplemented(path + ": a pre-tokenizer after ByteLevel is not supported");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "Sequence") {
    auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) {
      return invalid_argument(path + ": Sequence needs an array \"pretokenizers\"");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      MOE_RETURN_IF_ERROR(
          parse_into((*it)[i], path + ".pretokenizers[" + std::to_string(i) + "]", out));
    }
    return {};
  }
  if (type == "Split") {
    Step step;
    auto pat = j.find("pattern");
    if (pat == j.end() || !pat->is_object()) {
      return invalid_argument(path + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
    }
    if (pat->contains("Regex") && (*pat)["Regex"].is_string()) {
      auto r = Regex::compile((*pat)["Regex"].get<std::string>());
      if (!r.ok()) return r.status().with_context(path + ".pattern");
      step.regex = std::move(r).value();
    } else if (pat->contains("String") && (*pat)["String"].is_string()) {
      auto r = Regex::literal((*pat)["String"].get<std::string>());
      if (!r.ok()) return r.status().with_context(path + ".pattern");
      step.regex = std::move(r).value();
    } else {
      return invalid_argument(path + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
    }
    const std::string behavior = j.value("behavior", std::string("Isolated"));
    if (behavior == "Removed") {
      step.behavior = SplitBehavior::kRemoved;
    } else if (behavior == "Isolated") {
      step.behavior = SplitBehavior::kIsolated;
    } else if (behavior == "MergedWithPrevious") {
      step.behavior = SplitBehavior::kMergedWithPrevious;
    } else if (behavior == "MergedWithNext") {
      step.behavior = SplitBehavior::kMergedWithNext;
    } else if (behavior == "Contiguous") {
      step.behavior = SplitBehavior::kContiguous;
    } else {
      return invalid_argument(path + ".behavior: unknown split behavior \"" + behavior +
                              "\" (expected Removed, Isolated, MergedWithPrevious, "
                              "MergedWithNext or Contiguous)");
    }
    step.invert = get_bool(j, "invert", false);
    out->steps_.push_back(std::move(step));
    return {};
  }
  if (type == "Digits") {
    Step step;
    auto r = Regex::compile("\\p{N}");  // Rust char::is_numeric: Nd, Nl, No
    if (!r.ok()) return r.status().with_context(path);
    step.regex = std::move(r).value();
    step.behavior = get_bool(j, "individual_digits", false) ? SplitBehavior::kIsolated
                                                            : SplitBehavior::kContiguous;
    out->steps_.push_back(std::move(step));
    return {};
  }
  if (type == "ByteLevel") {
    if (get_bool(j, "add_prefix_space", true)) {
      Step step;
      step.kind = Step::Kind::kByteLevelPrefix;
      out->steps_.push_back(std::move(step));
    }
    if (get_bool(j, "use_regex", true)) {
      Step step;
      auto r = Regex::compile(kGpt2Pattern);
      if (!r.ok()) return r.status().with_context(path);
      step.regex = std::move(r).value();
      out->steps_.push_back(std::move(step));
    }
    out->byte_level_ = true;
    return {};
  }
  return unimplemented(path + ": pre-tokenizer type \"" + type +
                       "\" is not supported (supported: Sequence, Split, ByteLevel, Digits)");
}

}  // namespace moe::text
