// Tokenizer loading (tokenizer.json + tokenizer_config.json), encode and decode (see tokenizer.h).
#include "text/tokenizer.h"

#include <fstream>

#include "core/file.h"
#include "text/byte_level.h"
#include "text/unicode.h"

namespace moe::text {
namespace {

// tokenizer.json of large vocabularies is tens of MB; anything near this is not a tokenizer.
constexpr uintmax_t kMaxTokenizerBytes = uintmax_t{1} << 30;

using nlohmann::json;

Result<json> parse_json(std::string_view text, const std::string& what) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return invalid_argument(what + " is not valid JSON: " + e.what());
  }
}

// transformers' clean_up_tokenization.
std::string clean_up_tokenization(std::string s) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    std::string out;
    size_t pos = 0, hit;
    while ((hit = s.find(from, pos)) != std::string::npos) {
      out.append(s, pos, hit - pos);
      out.append(to);
      pos = hit + from.size();
    }
    out.append(s, pos);
    s.swap(out);
  }
  return s;
}

// A token given as "text" or {"content": "text", ...} in tokenizer_config.json.
std::optional<std::string> config_token(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

Result<Tokenizer> Tokenizer::from_dir(const std::string& dir) {
  const std::string config = dir + "/tokenizer_config.json";
  std::ifstream probe(config);
  return from_files(dir + "/tokenizer.json", probe ? config : std::string());
}

Result<Tokenizer> Tokenizer::from_files(const std::string& tokenizer_json_path,
                                        const std::string& config_path) {
  MOE_ASSIGN_OR_RETURN(std::string tok, read_small_file(tokenizer_json_path, kMaxTokenizerBytes));
  std::string config;
  if (!config_path.empty()) {
    MOE_ASSIGN_OR_RETURN(config, read_small_file(config_path, kMaxTokenizerBytes));
  }
  auto r = from_json_text(tok, config);
  if (!r.ok()) return r.status().with_context(tokenizer_json_path);
  return r;
}

Result<Tokenizer> Tokenizer::from_json_text(std::string_view tokenizer_json,
                                            std::string_view config_json) {
  MOE_ASSIGN_OR_RETURN(json tok, parse_json(tokenizer_json, "tokenizer.json"));
  json config = json::object();
  if (!config_json.empty()) {
    MOE_ASSIGN_OR_RETURN(config, parse_json(config_json, "tokenizer_config.json"));
  }
  Tokenizer t;
  try {
    MOE_RETURN_IF_ERROR(t.load(tok, config));
  } catch (const json::exception& e) {  // a field of an unexpected JSON type
    return invalid_argument(std::string("tokenizer.json: unexpected content: ") + e.what());
  }
  return t;
}

Status Tokenizer::load(const json& tok, const json& config) {
  if (!tok.is_object()) return invalid_argument("tokenizer.json: expected a JSON object");
  if (!config.is_object()) return invalid_argument("tokenizer_config.json: expected an object");
  auto model = tok.find("model");
  if (model == tok.end() || !model->is_object()) {
    return invalid_argument("tokenizer.json: missing \"model\" object");
  }
  const std::string type = model->value("type", std::string("BPE"));
  if (type != "BPE") {
    return unimplemented("model type \"" + type + "\" is not supported (only BPE)");
  }
  MOE_ASSIGN_OR_RETURN(normalizer_, Normalizer::from_json(tok.value("normalizer", json())));
  MOE_ASSIGN_OR_RETURN(pre_tokenizer_, PreTokenizer::from_json(tok.value("pre_tokenizer", json())));
  MOE_ASSIGN_OR_RETURN(model_, BpeModel::from_json(*model, pre_tokenizer_.byte_level()));
  MOE_ASSIGN_OR_RETURN(added_, parse_added_tokens(tok.value("added_tokens", json())));

  // Added tokens are matched on their normalized content in the normalized pass.
  std::vector<std::string> contents;
  RegexScratch scratch;
  for (const AddedToken& t : added_) {
    contents.push_back(t.normalized ? normalizer_.apply(t.content, &scratch) : t.content);
  }
  raw_matcher_ = AddedTokenMatcher::build(added_, contents, /*normalized_pass=*/false);
  normalized_matcher_ = AddedTokenMatcher::build(added_, contents, /*normalized_pass=*/true);

  MOE_RETURN_IF_ERROR(load_decoder(tok.value("decoder", json())));
  MOE_RETURN_IF_ERROR(load_post_processor(tok.value("post_processor", json()), "post_processor"));
  MOE_RETURN_IF_ERROR(load_config(config));
  return {};
}

Status Tokenizer::load_decoder(const json& j) {
  int32_t space = model_.id_space();
  for (const AddedToken& t : added_) space = std::max(space, t.id + 1);
  if (j.is_null()) {
    join_with_space_ = true;
  } else {
    const std::string type = j.is_object() ? j.value("type", std::string()) : std::string();
    bool ok = type == "ByteLevel";
    if (type == "Sequence" && j.contains("decoders") && j["decoders"].is_array()) {
      ok = j["decoders"].size() == 1 && j["decoders"][0].value("type", "") == "ByteLevel";
    }
    if (!ok) {
      return unimplemented("decoder \"" + type + "\" is not supported (only ByteLevel)");
    }
    decoder_byte_level_ = true;
  }
  pieces_.assign(space, PieceEntry{});
  for (int32_t id = 0; id < model_.id_space(); ++id) {
    const std::string* tok = model_.token(id);
    if (tok == nullptr) continue;
    PieceEntry& p = pieces_[id];
    p.used = true;
    std::optional<std::string> bytes;
    if (decoder_byte_level_) bytes = byte_level_decode(*tok);
    p.bytes = bytes ? std::move(*bytes) : *tok;  // HF keeps a token's raw text if not decodable
  }
  for (const AddedToken& t : added_) {
    PieceEntry& p = pieces_[t.id];
    p = {t.content, true, true, t.special};
  }
  return {};
}

Status Tokenizer::load_post_processor(const json& j, const std::string& path) {
  if (j.is_null()) return {};
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return invalid_argument(path + ": expected an object with a string \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "ByteLevel") return {};  // offsets only
  if (type == "Sequence") {
    if (!j.contains("processors") || !j["processors"].is_array()) {
      return invalid_argument(path + ": Sequence needs an array \"processors\"");
    }
    for (size_t i = 0; i < j["processors"].size(); ++i) {
      MOE_RETURN_IF_ERROR(
          load_post_processor(j["processors"][i], path + ".processors[" + std::to_string(i) + "]"));
    }
    return {};
  }
  if (type == "TemplateProcessing") {
    if (!j.contains("single") || !j["single"].is_array()) {
      return invalid_argument(path + ": TemplateProcessing needs an array \"single\"");
    }
    const json specials = j.value("special_tokens", json::object());
    bool after = false;
    for (const json& item : j["single"]) {
      if (item.contains("Sequence")) {
        after = true;
        continue;
      }
      if (!item.contains("SpecialToken") || !item["SpecialToken"].contains("id")) {
        return invalid_argument(path + ".single: expected SpecialToken or Sequence items");
      }
      const std::string name = item["SpecialToken"]["id"].get<std::string>();
      if (!specials.contains(name) || !specials[name].contains("ids") ||
          !specials[name]["ids"].is_array()) {
        return invalid_argument(path + ": special token \"" + name +
                                "\" missing from special_tokens");
      }
      for (const json& id : specials[name]["ids"]) {
        const auto v = id.get<int32_t>();
        if (v < 0 || v >= id_space()) {
          return invalid_argument(path + ": special token \"" + name + "\" has unknown id " +
                                  std::to_string(v));
        }
        (after ? suffix_ : prefix_).push_back(v);
      }
    }
    return {};
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    for (const char* key : {"cls", "sep"}) {
      if (!j.contains(key) || !j[key].is_array() || j[key].size() != 2) {
        return invalid_argument(path + "." + key + ": expected [token, id]");
      }
    }
    prefix_.push_back(j["cls"][1].get<int32_t>());
    suffix_.push_back(j["sep"][1].get<int32_t>());
    return {};
  }
  return unimplemented(path + ": post-processor \"" + type +
                       "\" is not supported (supported: ByteLevel, TemplateProcessing, "
                       "RobertaProcessing, BertProcessing, Sequence)");
}

Status Tokenizer::load_config(const json& config) {
  auto resolve = [&](const char* key, std::optional<int32_t>* id) -> Status {
    if (auto tok = config_token(config, key)) {
      *id = token_to_id(*tok);
      if (!*id) {
        return invalid_argument("tokenizer_config.json: " + std::string(key) + " \"" + *tok +
                                "\" is not a token of tokenizer.json");
      }
    }
    return {};
  };
  MOE_RETURN_IF_ERROR(resolve("bos_token", &bos_id_));
  MOE_RETURN_IF_ERROR(resolve("eos_token", &eos_id_));
  // transformers rebuilds the post-processor from add_bos_token/add_eos_token when given.
  const bool has_bos_flag =
      config.contains("add_bos_token") && config["add_bos_token"].is_boolean();
  const bool has_eos_flag =
      config.contains("add_eos_token") && config["add_eos_token"].is_boolean();
  if (has_bos_flag || has_eos_flag) {
    const bool add_bos = has_bos_flag && config["add_bos_token"].get<bool>();
    const bool add_eos = has_eos_flag && config["add_eos_token"].get<bool>();
    if ((add_bos && !bos_id_) || (add_eos && !eos_id_)) {
      return invalid_argument(std::string("tokenizer_config.json: add_") +
                              (add_bos && !bos_id_ ? "bos" : "eos") +
                              "_token is true but the token is not set");
    }
    prefix_.clear();
    suffix_.clear();
    if (add_bos) prefix_.push_back(*bos_id_);
    if (add_eos) suffix_.push_back(*eos_id_);
  }
  clean_up_spaces_ = config.contains("clean_up_tokenization_spaces") &&
                     config["clean_up_tokenization_spaces"].is_boolean() &&
                     config["clean_up_tokenization_spaces"].get<bool>();
  return {};
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  for (const AddedToken& t : added_) {
    if (t.content == token) return t.id;
  }
  return model_.token_to_id(token);
}

std::optional<Tokenizer::Piece> Tokenizer::piece(int32_t id) const {
  if (id < 0 || id >= id_space() || !pieces_[id].used) return std::nullopt;
  const PieceEntry& p = pieces_[id];
  return Piece{p.bytes, p.added, p.special};
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  EncodeScratch scratch;
  std::vector<int32_t> ids;
  encode(text, options, &scratch, &ids);
  return ids;
}

void Tokenizer::encode_plain(std::string_view text, EncodeScratch* scratch, bool parse_special,
                             std::vector<int32_t>* ids) const {
  auto on_piece = [&](std::string_view piece) {
    model_.encode_piece(piece, &scratch->cache, &scratch->work, ids);
  };
  auto on_normalized_text = [&](std::string_view t) {
    pre_tokenizer_.run(t, &scratch->regex, on_piece);
  };
  auto on_token = [&](int32_t id) { ids->push_back(id); };
  std::string_view normalized = text;
  if (!normalizer_.empty() && normalizer_.apply(text, &scratch->regex, &scratch->normalized)) {
    normalized = scratch->normalized;
  }
  normalized_matcher_.split(normalized, parse_special, on_normalized_text, on_token);
}

void Tokenizer::encode(std::string_view text, const EncodeOptions& options, EncodeScratch* scratch,
                       std::vector<int32_t>* ids) const {
  if (!is_valid_utf8(text)) {
    scratch->repaired.clear();
    repair_utf8(text, &scratch->repaired);
    text = scratch->repaired;
  }
  const size_t start = ids->size();
  raw_matcher_.split(
      text, options.parse_special,
      [&](std::string_view t) { encode_plain(t, scratch, options.parse_special, ids); },
      [&](int32_t id) { ids->push_back(id); });
  if (!options.add_special_tokens) return;
  const bool has_prefix =
      options.skip_existing_prefix && !prefix_.empty() && ids->size() - start >= prefix_.size() &&
      std::equal(prefix_.begin(), prefix_.end(), ids->begin() + static_cast<ptrdiff_t>(start));
  if (!has_prefix)
    ids->insert(ids->begin() + static_cast<ptrdiff_t>(start), prefix_.begin(), prefix_.end());
  ids->insert(ids->end(), suffix_.begin(), suffix_.end());
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids,
                                      const DecodeOptions& options) const {
  std::string out, run;
  bool first = true;
  for (const int32_t id : ids) {
    if (id < 0 || id >= id_space() || !pieces_[id].used) {
      return out_of_range("decode: token id " + std::to_string(id) + " is not in the vocabulary (" +
                          std::to_string(id_space()) + " ids)");
    }
    const PieceEntry& p = pieces_[id];
    if (options.skip_special_tokens && p.special) continue;
    if (join_with_space_) {
      if (!first) out.push_back(' ');
      out += p.bytes;
    } else if (p.added) {
      repair_utf8(run, &out);
      run.clear();
      out += p.bytes;
    } else {
      run += p.bytes;
    }
    first = false;
  }
  repair_utf8(run, &out);
  if (clean_up_spaces_) out = clean_up_tokenization(std::move(out));
  return out;
}

}  // namespace moe::text
