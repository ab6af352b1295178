// The subcommands of `moengine`. Each takes argv and the index of its first flag, and returns
// the process exit code: 0 success, 2 bad input (one line on stderr), 1 internal failure.
#pragma once

namespace moe::apps {

int cmd_make_tiny(int argc, char** argv, int first);
int cmd_inspect(int argc, char** argv, int first);
int cmd_generate(int argc, char** argv, int first);
int cmd_tokenize(int argc, char** argv, int first);
int cmd_chat_template(int argc, char** argv, int first);
int cmd_quantize(int argc, char** argv, int first);
int cmd_tune_moe(int argc, char** argv, int first);

}  // namespace moe::apps
