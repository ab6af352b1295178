// Whole-file reads of small files (configs, indexes, tokenizers, templates) with a size cap, so
// a wrong path or a huge file gives a clear error instead of an allocation failure.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/status.h"

namespace moe {

// The bytes of `p`. Errors name the file: kNotFound if it does not exist; kInvalidArgument if it
// is a directory, larger than `limit` bytes, or cannot be opened or read.
Result<std::string> read_small_file(const std::filesystem::path& p, uintmax_t limit);

}  // namespace moe
