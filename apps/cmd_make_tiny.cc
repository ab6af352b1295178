// moengine make-tiny: a tiny random checkpoint in the HuggingFace layout.
#include <cstdio>

#include "cli_args.h"
#include "commands.h"
#include "model/model_config.h"
#include "model/tiny_model.h"
#include "text/tiny_tokenizer.h"

namespace moe::apps {

int cmd_make_tiny(int argc, char** argv, int first) {
  const std::string cmd = "make-tiny";
  auto args = CliArgs::parse(argc, argv, first, {"--arch", "--out", "--seed"}, {});
  if (!args.ok()) return fail(cmd, args.status());
  auto arch = args->required("--arch");
  if (!arch.ok()) return fail(cmd, arch.status());
  auto out = args->required("--out");
  if (!out.ok()) return fail(cmd, out.status());
  auto seed = args->get_int("--seed", 0, 0, INT64_MAX);
  if (!seed.ok()) return fail(cmd, seed.status());
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
