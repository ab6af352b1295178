// moengine quantize: a BF16 checkpoint -> NVFP4 (NVIDIA ModelOpt layout) or FP8 block-128
// (DeepSeek layout), streamed tensor by tensor. Layouts: docs/formats.md.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli_args.h"
#include "commands.h"
#include "model/loader.h"
#include "model/quantize_checkpoint.h"

namespace moe::apps {

int cmd_quantize(int argc, char** argv, int first) {
  const std::string cmd = "quantize";
  auto args = CliArgs::parse(argc, argv, first,
                             {"--model-path", "--out", "--format", "--max-shard-bytes"}, {});
  if (!args.ok()) return fail(cmd, args.status());
  auto in = args->required("--model-path");
  if (!in.ok()) return fail(cmd, in.status());
  auto out = args->required("--out");
  if (!out.ok()) return fail(cmd, out.status());
  auto format = args->required("--format");
  if (!format.ok()) return fail(cmd, format.status());
  model::QuantizeOptions opt;
  if (*format == "nvfp4") {
    opt.format = io::QuantFormat::kNvfp4;
  } else if (*format == "fp8-block") {
    opt.format = io::QuantFormat::kFp8Block;
  } else {
    return fail(
        cmd, invalid_argument("unknown --format '" + *format + "'; supported: nvfp4, fp8-block"));
  }
  auto shard = args->get_int("--max-shard-bytes", int64_t{4} << 30, 1, INT64_MAX);
  if (!shard.ok()) return fail(cmd, shard.status());
  opt.max_shard_bytes = static_cast<uint64_t>(*shard);
  const bool tty = isatty(STDERR_FILENO) == 1;
  if (tty) {
    opt.progress = [](int64_t done, int64_t total, const std::string& name) {
      std::fprintf(stderr, "\r\033[K[%lld/%lld] %s", static_cast<long long>(done),
                   static_cast<long long>(total), name.c_str());
      if (done == total) std::fputc('\n', stderr);
    };
  }
  auto r = model::quantize_checkpoint(*in, *out, opt);
  if (!r.ok()) {
    if (tty) std::fputc('\n', stderr);
    return fail(cmd, r.status());
  }
  std::printf(
      "wrote %s checkpoint to %s: %lld tensors (%lld modules quantized), %d shard%s, "
      "%.2f MiB -> %.2f MiB\n",
      format->c_str(), out->c_str(), static_cast<long long>(r->tensors_written),
      static_cast<long long>(r->modules_quantized), r->shards, r->shards == 1 ? "" : "s",
      r->bytes_in / 1048576.0, r->bytes_out / 1048576.0);
  return 0;
}

}  // namespace moe::apps
