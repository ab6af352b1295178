// moengine make-tiny: a tiny random checkpoint in the HuggingFace layout, or (--shape glm5) a
// random checkpoint with GLM-5's real dimensions and NVFP4 experts, for speed work.
#include <cstdio>

#include "cli_args.h"
#include "commands.h"
#include "model/glm5_shape.h"
#include "model/model_config.h"
#include "model/tiny_model.h"
#include "text/tiny_tokenizer.h"

namespace moe::apps {

int cmd_make_tiny(int argc, char** argv, int first) {
  const std::string cmd = "make-tiny";
  auto args = CliArgs::parse(argc, argv, first,
                             {"--arch", "--out", "--seed", "--shape", "--layers"}, {"--bf16"});
  if (!args.ok()) return fail(cmd, args.status());
  auto out = args->required("--out");
  if (!out.ok()) return fail(cmd, out.status());
  auto seed = args->get_int("--seed", 0, 0, INT64_MAX);
  if (!seed.ok()) return fail(cmd, seed.status());
  if (args->has("--shape")) {
    const std::string shape = args->optional("--shape").value_or("");
    if (shape != "glm5")
      return fail(cmd, invalid_argument("--shape must be glm5, got '" + shape + "'"));
    auto layers = args->get_int("--layers", 4, 1, 78);
    if (!layers.ok()) return fail(cmd, layers.status());
    model::Glm5ShapeOptions o;
    o.layers = static_cast<int>(*layers);
    o.nvfp4 = !args->has("--bf16");
    o.seed = static_cast<uint64_t>(*seed);
    o.progress = [](uint64_t done, uint64_t total) {
      std::fprintf(stderr, "make-tiny: %.1f / %.1f GB\n", done / 1e9, total / 1e9);
    };
    Status st = model::write_glm5_shape_model(*out, o);
    if (!st.ok()) return fail(cmd, st);
    // No tokenizer: a 154880-entry BPE would take minutes to write; use --prompt-ids.
    std::printf(
        "wrote a GLM-5-shaped checkpoint (%d layers, %s experts, no tokenizer: use --prompt-ids) "
        "to %s\n",
        o.layers, o.nvfp4 ? "NVFP4" : "BF16", out->c_str());
    return 0;
  }
  auto arch = args->required("--arch");
  if (!arch.ok()) return fail(cmd, arch.status());
  Status st = model::write_tiny_model(*out, *arch, static_cast<uint64_t>(*seed));
  if (!st.ok()) return fail(cmd, st);
  auto cfg = model::load_model_config(*out);
  if (!cfg.ok()) return fail(cmd, cfg.status());
  st = text::write_tiny_tokenizer(*out, static_cast<int>(cfg->vocab_size));
  if (!st.ok()) return fail(cmd, st);
  std::printf("wrote a tiny %s checkpoint to %s\n", arch->c_str(), out->c_str());
  return 0;
}

}  // namespace moe::apps
