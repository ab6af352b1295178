// Pre-tokenizer of tokenizer.json: splits normalized text into pieces that BPE encodes one by one.
// Supported: Sequence, Split (Regex or String pattern; behaviours Removed, Isolated,
// MergedWithPrevious, MergedWithNext, Contiguous; invert), ByteLevel (add_prefix_space,
// use_regex with the GPT-2 pattern), Digits (individual_digits). Semantics follow HF tokenizers
// (Rust): each step splits every piece of the previous step independently; empty pieces vanish.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/pretokenizer_regex.h"

namespace moe::text {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  // Parses the "pre_tokenizer" value of tokenizer.json (null -> no splitting). Errors name the
  // path inside the JSON (e.g. "pre_tokenizer.pretokenizers[2].pattern").
  static Result<PreTokenizer> from_json(const nlohmann::json& j);

  // Splits `text` (valid UTF-8) and calls `sink(std::string_view piece)` for each piece, in
  // order; the view is valid only during the call. Thread-safe given a distinct scratch.
  template <typename F>
  void run(std::string_view text, RegexScratch* scratch, F&& sink) const {
    run_step(0, text, scratch, sink);
  }

  // True if a ByteLevel step is present: BPE then works on bytes, not characters.
  bool byte_level() const { return byte_level_; }

 private:
  struct Step {
    enum class Kind { kSplit, kByteLevelPrefix } kind = Kind::kSplit;
    Regex regex;
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
  };

  static Status parse_into(const nlohmann::json& j, const std::string& path, PreTokenizer* out);

  template <typename F>
  void run_step(size_t k, std::string_view piece, RegexScratch* scratch, F& sink) const;

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

// ---- implementation of the template -----------------------------------------------------------

template <typename F>
void PreTokenizer::run_step(size_t k, std::string_view piece, RegexScratch* scratch,
                            F& sink) const {
  if (piece.empty()) return;
  if (k == steps_.size()) {
    sink(piece);
    return;
  }
  const Step& step = steps_[k];
  if (step.kind == Step::Kind::kByteLevelPrefix) {
    if (piece.front() == ' ') {
      run_step(k + 1, piece, scratch, sink);
    } else {
      std::string prefixed;
      prefixed.reserve(piece.size() + 1);
      prefixed.push_back(' ');
      prefixed.append(piece);
      run_step(k + 1, prefixed, scratch, sink);
    }
    return;
  }
  // Segments [b, e) with a match flag; the behaviour decides which become pieces. `pending` is a
  // segment whose end may still grow (merging behaviours).
  size_t pend_b = 0, pend_e = 0;
  bool has_pending = false, prev_match = false;
  auto emit = [&](size_t b, size_t e) {
    if (e > b) run_step(k + 1, piece.substr(b, e - b), scratch, sink);
  };
  auto segment = [&](size_t b, size_t e, bool is_match) {
    switch (step.behavior) {
      case SplitBehavior::kIsolated:
        emit(b, e);
        break;
      case SplitBehavior::kRemoved:
        if (!is_match) emit(b, e);
        break;
      case SplitBehavior::kContiguous:
        if (has_pending && is_match == prev_match) {
          pend_e = e;
        } else {
          if (has_pending) emit(pend_b, pend_e);
          pend_b = b, pend_e = e, has_pending = true;
        }
        break;
      case SplitBehavior::kMergedWithPrevious:
        if (has_pending && is_match && !prev_match) {
          pend_e = e;
        } else {
          if (has_pending) emit(pend_b, pend_e);
          pend_b = b, pend_e = e, has_pending = true;
        }
        break;
      case SplitBehavior::kMergedWithNext:
        // A match joins the non-match right after it; the pending segment is a held match.
        if (has_pending) {
          if (!is_match) {
            emit(pend_b, e);
            has_pending = false;
            break;
          }
          emit(pend_b, pend_e);
          has_pending = false;
        }
        if (is_match) {
          pend_b = b, pend_e = e, has_pending = true;
        } else {
          emit(b, e);
        }
        break;
    }
    prev_match = is_match;
  };
  size_t pos = 0, search = 0;
  size_t mb, me;
  while (search <= piece.size() && step.regex.find(piece, search, scratch, &mb, &me)) {
    if (me == mb) {  // empty match: not a delimiter; move on by one character
      search = mb + 1;
      while (search < piece.size() && (static_cast<unsigned char>(piece[search]) & 0xC0) == 0x80)
        ++search;
      continue;
    }
    if (mb > pos) segment(pos, mb, step.invert);
    segment(mb, me, !step.invert);
    pos = search = me;
  }
  if (pos < piece.size()) segment(pos, piece.size(), step.invert);
  if (has_pending) emit(pend_b, pend_e);
}

}  // namespace moe::text
