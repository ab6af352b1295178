// Normalizers (see normalizer.h). Semantics follow HF tokenizers' Rust implementation.
#include "text/normalizer.h"

#include "text/unicode.h"

namespace moe::text {

Result<Normalizer> Normalizer::from_json(const nlohmann::json& j) {
  Normalizer n;
  if (j.is_null()) return n;
  MOE_RETURN_IF_ERROR(parse_into(j, "normalizer", &n));
  return n;
}

Status Normalizer::parse_into(const nlohmann::json& j, const std::string& path, Normalizer* out) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return invalid_argument(path + ": expected an object with a string \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "Sequence") {
    auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) {
      return invalid_argument(path + ": Sequence needs an array \"normalizers\"");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      MOE_RETURN_IF_ERROR(
          parse_into((*it)[i], path + ".normalizers[" + std::to_string(i) + "]", out));
    }
    return {};
  }
  Step step;
  if (type == "NFC") {
    step.kind = Step::Kind::kNfc;
  } else if (type == "Prepend") {
    if (!j.contains("prepend") || !j["prepend"].is_string()) {
      return invalid_argument(path + ": Prepend needs a string \"prepend\"");
    }
    step.kind = Step::Kind::kPrepend;
    step.text = j["prepend"].get<std::string>();
  } else if (type == "Replace") {
    step.kind = Step::Kind::kReplace;
    auto pat = j.find("pattern");
    if (pat == j.end() || !pat->is_object() || !j.contains("content") ||
        !j["content"].is_string()) {
      return invalid_argument(path + ": Replace needs \"pattern\" and a string \"content\"");
    }
    Result<Regex> r = invalid_argument("");
    if (pat->contains("Regex") && (*pat)["Regex"].is_string()) {
      r = Regex::compile((*pat)["Regex"].get<std::string>());
    } else if (pat->contains("String") && (*pat)["String"].is_string()) {
      r = Regex::literal((*pat)["String"].get<std::string>());
    } else {
      return invalid_argument(path + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
    }
    if (!r.ok()) return r.status().with_context(path + ".pattern");
    step.pattern = std::move(r).value();
    step.text = j["content"].get<std::string>();
  } else if (type == "Strip") {
    step.kind = Step::Kind::kStrip;
    step.left = j.value("strip_left", true);
    step.right = j.value("strip_right", true);
  } else {
    return unimplemented(path + ": normalizer type \"" + type +
                         "\" is not supported (supported: Sequence, NFC, Prepend, Replace, Strip)");
  }
  out->steps_.push_back(std::move(step));
  return {};
}

bool Normalizer::apply_step(const Step& s, std::string_view in, RegexScratch* scratch,
                            std::string* out) const {
  switch (s.kind) {
    case Step::Kind::kNfc:
      return nfc_if_changed(in, out);
    case Step::Kind::kPrepend:
      if (in.empty()) return false;
      out->assign(s.text);
      out->append(in);
      return true;
    case Step::Kind::kReplace: {
      std::string res;
      size_t pos = 0, copied = 0, b, e;
      bool replaced = false;
      while (pos <= in.size() && s.pattern.find(in, pos, scratch, &b, &e)) {
        if (e == b) {  // empty matches replace nothing
          if (b >= in.size()) break;
          char32_t cp;
          pos = b + std::max(decode_utf8(in, b, &cp), 1);
          continue;
        }
        res.append(in.substr(copied, b - copied));
        res.append(s.text);
        copied = pos = e;
        replaced = true;
      }
      if (!replaced) return false;
      res.append(in.substr(copied));
      *out = std::move(res);
      return true;
    }
    case Step::Kind::kStrip: {
      size_t b = 0, e = in.size();
      char32_t cp;
      while (s.left && b < e) {
        const int len = decode_utf8(in, b, &cp);
        if (len == 0 || !is_white_space(cp)) break;
        b += len;
      }
      while (s.right && e > b) {
        size_t p = e - 1;
        while (p > b && (static_cast<unsigned char>(in[p]) & 0xC0) == 0x80) --p;
        if (decode_utf8(in, p, &cp) == 0 || !is_white_space(cp)) break;
        e = p;
      }
      if (b == 0 && e == in.size()) return false;
      out->assign(in.substr(b, e - b));
      return true;
    }
  }
  return false;
}

bool Normalizer::apply(std::string_view in, RegexScratch* scratch, std::string* out) const {
  bool changed = false;
  std::string tmp;
  for (const Step& s : steps_) {
    if (changed) {
      if (apply_step(s, *out, scratch, &tmp)) out->swap(tmp);
    } else {
      changed = apply_step(s, in, scratch, out);
    }
  }
  return changed;
}

std::string Normalizer::apply(std::string_view in, RegexScratch* scratch) const {
  std::string out;
  if (!apply(in, scratch, &out)) out.assign(in);
  return out;
}

}  // namespace moe::text
