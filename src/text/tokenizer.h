// Tokenizer: HF tokenizer.json (+ tokenizer_config.json) with a byte-level BPE model, as used by
// the DeepSeek-V3, GLM-4.5+/GLM-5, Kimi-K2 and Qwen3 families.
//
// Encode pipeline (same order as HF tokenizers): repair invalid UTF-8 -> split out added tokens
// that are not normalized -> normalizer -> split out normalized added tokens -> pre-tokenizer ->
// BPE per piece (memoized) -> post-processor (BOS/EOS).
// Invalid UTF-8 input: HF's encoders take a Rust &str, so JS/Python callers can only pass text in
// which ill-formed bytes were replaced by U+FFFD; we do the same (maximal subparts, see
// repair_utf8), so a byte string encodes like TextDecoder().decode(bytes) would in JS.
// Decode follows tokenizers.js: runs of ordinary tokens are byte-decoded (invalid UTF-8 -> U+FFFD),
// added tokens are emitted verbatim.
//
// Thread-safety: a loaded Tokenizer is immutable; encode/decode may run concurrently, each thread
// with its own EncodeScratch.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/normalizer.h"
#include "text/pretokenizer.h"
#include "text/pretokenizer_regex.h"

namespace moe::text {

struct EncodeOptions {
  // Apply the post-processor: BOS/EOS from tokenizer_config.json (add_bos_token/add_eos_token,
  // which take precedence, as transformers does) or tokenizer.json's TemplateProcessing.
  bool add_special_tokens = true;
  // Do not add the prefix (BOS) when the encoded text already starts with it, e.g. a prompt
  // rendered by a chat template that begins with "<｜begin▁of▁sentence｜>".
  bool skip_existing_prefix = true;
  // Match special added tokens in the text. Set false for untrusted text so that a user typing
  // "<|im_end|>" gets ordinary tokens (HF's split_special_tokens = true).
  bool parse_special = true;
};

struct DecodeOptions {
  bool skip_special_tokens = false;
};

// Per-thread working memory (regex match data, BPE memo, buffers). Keep one per thread and reuse
// it across calls: the memo of piece -> ids is what makes repeated words cheap.
struct EncodeScratch {
  RegexScratch regex;
  BpeCache cache;
  BpeWork work;
  std::string repaired, normalized;
};

class Tokenizer {
 public:
  // Reads dir/tokenizer.json and, if present, dir/tokenizer_config.json.
  static Result<Tokenizer> from_dir(const std::string& dir);
  // `config_path` may be empty (no tokenizer_config.json).
  static Result<Tokenizer> from_files(const std::string& tokenizer_json_path,
                                      const std::string& config_path);
  // From file contents; `config_json` may be empty.
  static Result<Tokenizer> from_json_text(std::string_view tokenizer_json,
                                          std::string_view config_json);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Appends to `ids`.
  void encode(std::string_view text, const EncodeOptions& options, EncodeScratch* scratch,
              std::vector<int32_t>* ids) const;

  // Error if an id is outside the vocabulary.
  Result<std::string> decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  // What one id decodes to: raw bytes for ordinary tokens (possibly a partial UTF-8 sequence),
  // the verbatim content for added tokens. nullopt for ids outside the vocabulary.
  struct Piece {
    std::string_view bytes;
    bool added = false;
    bool special = false;
  };
  std::optional<Piece> piece(int32_t id) const;

  // Ids are in [0, id_space()); some may be unused.
  int32_t id_space() const { return static_cast<int32_t>(pieces_.size()); }
  // Added tokens first, then the BPE vocabulary (strings as written in tokenizer.json).
  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  // Ids the post-processor puts before / after the text.
  const std::vector<int32_t>& prefix_ids() const { return prefix_; }
  const std::vector<int32_t>& suffix_ids() const { return suffix_; }
  bool clean_up_tokenization_spaces() const { return clean_up_spaces_; }
  // True when tokenizer.json has no decoder: decode joins token strings with " " (HF behaviour).
  bool decode_joins_with_space() const { return join_with_space_; }

 private:
  Status load(const nlohmann::json& tok, const nlohmann::json& config);
  Status load_post_processor(const nlohmann::json& j, const std::string& path);
  Status load_config(const nlohmann::json& config);
  Status load_decoder(const nlohmann::json& j);
  void encode_plain(std::string_view text, EncodeScratch* scratch, bool parse_special,
                    std::vector<int32_t>* ids) const;

  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  BpeModel model_;
  std::vector<AddedToken> added_;
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
  struct PieceEntry {
    std::string bytes;
    bool used = false, added = false, special = false;
  };
  std::vector<PieceEntry> pieces_;
  bool decoder_byte_level_ = false;
  bool join_with_space_ = false;  // no decoder: HF joins tokens with " "
  std::vector<int32_t> prefix_, suffix_;
  std::optional<int32_t> bos_id_, eos_id_;
  bool clean_up_spaces_ = false;
};

}  // namespace moe::text
