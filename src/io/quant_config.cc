// Quantization settings: ModelOpt NVFP4 (hf_quant_config.json or config.json quantization_config)
// and DeepSeek FP8 block (config.json quantization_config). Every unsupported setting is an
// error that names the value found and the supported ones.
#include "io/quant_config.h"

#include "core/file.h"
#include "io/strict_json.h"

namespace moe::io {
namespace {

using json = nlohmann::json;

constexpr const char* kSupported =
    "supported: ModelOpt NVFP4 (hf_quant_config.json quant_algo NVFP4, group_size 16, or "
    "config.json quantization_config quant_method modelopt) and FP8 block (config.json "
    "quantization_config quant_method fp8, fmt e4m3, weight_block_size [128, 128])";

Status unsupported(std::string_view source, const std::string& what) {
  return invalid_argument(std::string(source) + ": unsupported quantization: " + what + "; " +
                          kSupported);
}

// Reads a list of strings (exclusion patterns) from obj[key] when present.
Status read_patterns(const json& obj, const char* key, std::string_view source,
                     std::vector<std::string>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status();
  if (!it->is_array())
    return invalid_argument(std::string(source) + ": " + key + " must be a list of strings, got " +
                            describe_json(*it));
  for (const json& e : *it) {
    if (!e.is_string())
      return invalid_argument(std::string(source) + ": " + key + " must hold strings, got " +
                              describe_json(e));
    out->push_back(e.get<std::string>());
  }
  return Status();
}

Status check_group_size(const json& v, std::string_view source, const std::string& field,
                        int64_t* out) {
  if (!v.is_number_integer() || v.get<int64_t>() != 16)
    return invalid_argument(std::string(source) + ": " + field + " is " + describe_json(v) +
                            "; NVFP4 needs group_size 16 (one FP8 scale per 16 elements)");
  *out = 16;
  return Status();
}

Result<QuantConfig> parse_modelopt(const json& q, std::string_view source, bool legacy) {
  QuantConfig c;
  c.source = std::string(source);
  auto algo = q.find("quant_algo");
  if (algo == q.end() || !algo->is_string())
    return unsupported(source, "quant_algo is " + (algo == q.end() ? std::string("missing")
                                                                   : describe_json(*algo)));
  if (algo->get<std::string>() != "NVFP4")
    return unsupported(source, "ModelOpt quant_algo '" + algo->get<std::string>() + "'");
  c.format = QuantFormat::kNvfp4;
  if (auto g = q.find("group_size"); g != q.end()) {
    MOE_RETURN_IF_ERROR(check_group_size(*g, source, "group_size", &c.group_size));
  } else if (legacy) {
    return invalid_argument(std::string(source) + ": quantization.group_size is missing; NVFP4 " +
                            "needs group_size 16");
  }
  if (auto groups = q.find("config_groups"); groups != q.end() && groups->is_object()) {
    for (const auto& [name, grp] : groups->items()) {
      if (!grp.is_object()) continue;
      for (const char* part : {"weights", "input_activations"}) {
        auto w = grp.find(part);
        if (w == grp.end() || !w->is_object()) continue;
        if (auto g = w->find("group_size"); g != w->end())
          MOE_RETURN_IF_ERROR(check_group_size(
              *g, source, "config_groups." + name + "." + part + ".group_size", &c.group_size));
      }
    }
  }
  MOE_RETURN_IF_ERROR(read_patterns(q, "exclude_modules", source, &c.exclude));
  MOE_RETURN_IF_ERROR(read_patterns(q, "ignore", source, &c.exclude));
  if (auto kv = q.find("kv_cache_quant_algo"); kv != q.end() && kv->is_string())
    c.kv_cache_quant_algo = kv->get<std::string>();
  return c;
}

Result<QuantConfig> parse_fp8(const json& q, std::string_view source) {
  QuantConfig c;
  c.source = std::string(source);
  c.format = QuantFormat::kFp8Block;
  if (auto fmt = q.find("fmt");
      fmt != q.end() && !fmt->is_null() && (!fmt->is_string() || fmt->get<std::string>() != "e4m3"))
    return unsupported(source, "fp8 fmt " + describe_json(*fmt) + " (only e4m3)");
  if (auto sf = q.find("scale_fmt");
      sf != q.end() && !sf->is_null() && (!sf->is_string() || sf->get<std::string>() != "ue8m0"))
    return unsupported(source, "fp8 scale_fmt " + describe_json(*sf) + " (only ue8m0 or none)");
  auto b = q.find("weight_block_size");
  if (b == q.end() || b->is_null())
    return unsupported(source, "fp8 without weight_block_size (per-tensor FP8)");
  if (!b->is_array() || b->size() != 2 || !(*b)[0].is_number_integer() ||
      !(*b)[1].is_number_integer() || (*b)[0].get<int64_t>() != (*b)[1].get<int64_t>() ||
      (*b)[0].get<int64_t>() < 1 || (*b)[0].get<int64_t>() > (1 << 20))
    return unsupported(source,
                       "fp8 weight_block_size " + b->dump() + " (need [b, b], e.g. [128, 128])");
  c.block = (*b)[0].get<int64_t>();
  MOE_RETURN_IF_ERROR(read_patterns(q, "modules_to_not_convert", source, &c.exclude));
  MOE_RETURN_IF_ERROR(read_patterns(q, "ignored_layers", source, &c.exclude));
  MOE_RETURN_IF_ERROR(read_patterns(q, "ignore", source, &c.exclude));
  return c;
}

}  // namespace

std::string_view quant_format_name(QuantFormat f) {
  switch (f) {
    case QuantFormat::kNone:
      return "none";
    case QuantFormat::kNvfp4:
      return "nvfp4";
    case QuantFormat::kFp8Block:
      return "fp8-block";
  }
  return "?";
}

bool fnmatch_pattern(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0, star_p = std::string_view::npos, star_s = 0;
  auto class_match = [&](size_t& i, char c) -> int {  // -1: malformed, 0/1: result
    size_t j = i + 1;
    bool neg = j < p.size() && (p[j] == '!' || p[j] == '^');
    if (neg) ++j;
    bool hit = false, first = true;
    for (; j < p.size() && (first || p[j] != ']'); ++j, first = false) {
      if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
        hit = hit || (p[j] <= c && c <= p[j + 2]);
        j += 2;
      } else {
        hit = hit || p[j] == c;
      }
    }
    if (j >= p.size()) return -1;
    i = j + 1;
    return hit != neg ? 1 : 0;
  };
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star_p = pi++;
      star_s = si;
      continue;
    }
    if (pi < p.size()) {
      size_t next = pi;
      int m;
      if (p[pi] == '[' && (m = class_match(next, s[si])) >= 0) {
        if (m == 1) {
          pi = next;
          ++si;
          continue;
        }
      } else if (p[pi] == '?' || p[pi] == s[si]) {
        ++pi;
        ++si;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p + 1;
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

const std::string* QuantConfig::excluded_by(std::string_view module) const {
  for (const std::string& pat : exclude) {
    if (fnmatch_pattern(pat, module)) return &pat;
    if (pat.find_first_of("*?[") == std::string::npos && module.size() > pat.size() &&
        module.substr(0, pat.size()) == pat && module[pat.size()] == '.')
      return &pat;
  }
  return nullptr;
}

Result<QuantConfig> parse_hf_quant_config(std::string_view text, std::string_view source) {
  MOE_ASSIGN_OR_RETURN(json root, parse_json_strict(text, source));
  if (!root.is_object())
    return invalid_argument(std::string(source) + ": expected a JSON object, got " +
                            describe_json(root));
  auto q = root.find("quantization");
  if (q == root.end() || !q->is_object())
    return invalid_argument(std::string(source) +
                            ": missing object \"quantization\" (ModelOpt writes "
                            "{\"producer\": ..., \"quantization\": {\"quant_algo\": ...}})");
  return parse_modelopt(*q, source, /*legacy=*/true);
}

Result<QuantConfig> parse_quantization_config(const json& qc, std::string_view source) {
  if (!qc.is_object())
    return invalid_argument(std::string(source) + ": quantization_config must be an object, got " +
                            describe_json(qc));
  auto m = qc.find("quant_method");
  if (m == qc.end() || !m->is_string())
    return unsupported(source, "quantization_config.quant_method is " +
                                   (m == qc.end() ? std::string("missing") : describe_json(*m)));
  const std::string method = m->get<std::string>();
  if (method == "fp8") return parse_fp8(qc, source);
  if (method == "modelopt") return parse_modelopt(qc, source, /*legacy=*/false);
  return unsupported(source, "quant_method '" + method + "'");
}

Result<QuantConfig> load_quant_config(const std::filesystem::path& dir, const json& config) {
  const std::filesystem::path hf = dir / "hf_quant_config.json";
  std::error_code ec;
  if (std::filesystem::is_regular_file(hf, ec)) {
    MOE_ASSIGN_OR_RETURN(std::string text, read_small_file(hf, 16u << 20));
    return parse_hf_quant_config(text, hf.string());
  }
  if (config.is_object()) {
    if (auto qc = config.find("quantization_config"); qc != config.end() && !qc->is_null())
      return parse_quantization_config(*qc, (dir / "config.json").string());
  }
  return QuantConfig{};
}

}  // namespace moe::io
