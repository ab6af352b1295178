// A tiny byte-level BPE tokenizer in the HuggingFace format (tokenizer.json +
// tokenizer_config.json with a chat template), trained deterministically on a built-in English
// text, so that tiny models made by `moengine make-tiny` accept text prompts and chats.
#pragma once

#include <filesystem>

#include "core/status.h"

namespace moe::text {

// Special tokens of the tiny tokenizer, in id order (ids 0..4).
inline constexpr const char* kTinySpecialTokens[] = {"<|begin_of_text|>", "<|endoftext|>",
                                                     "<|user|>", "<|assistant|>", "<|system|>"};

// Writes dir/tokenizer.json and dir/tokenizer_config.json with exactly `vocab_size` ids
// (5 special tokens, 256 byte tokens, vocab_size - 261 merges). vocab_size must be >= 261.
Status write_tiny_tokenizer(const std::filesystem::path& dir, int vocab_size);

}  // namespace moe::text
