// Runs the moengine binary: success paths exit 0; every class of bad input (flags, missing
// files, corrupt or truncated safetensors, wrong shapes or dtypes, nonsense config) exits 2
// with one line on stderr that names the problem, never a signal.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "model/tiny_model.h"

namespace {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  bool signaled = false;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

RunResult run(const std::string& args) {
  static int n = 0;
  fs::path dir = fs::temp_directory_path() / ("moe_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path out = dir / ("out" + std::to_string(n)), err = dir / ("err" + std::to_string(n++));
  std::string cmd = std::string(MOE_BINARY_DIR) + "/bin/moengine " + args + " >" + out.string() +
                    " 2>" + err.string() + " </dev/null";
  int status = std::system(cmd.c_str());
  RunResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  // The shell reports a signal-killed child as 128 + signal.
  r.signaled = WIFSIGNALED(status) || r.exit_code >= 128;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("moe_cli_model_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ASSERT_TRUE(moe::model::write_tiny_model(dir_, "glm_moe_dsa", 3).ok());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  // A copy of the tiny model whose files the test may break.
  fs::path copy_model(const std::string& name) {
    fs::path d = dir_.string() + "_" + name;
    fs::remove_all(d);
    fs::create_directories(d);
    fs::copy(dir_, d, fs::copy_options::recursive);
    return d;
  }
  // Exit 2, no signal, exactly one stderr line containing every `needles`.
  void expect_bad_input(const std::string& args, std::initializer_list<std::string> needles) {
    auto r = run(args);
    EXPECT_FALSE(r.signaled) << args;
    EXPECT_EQ(r.exit_code, 2) << args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const auto& n : needles)
      EXPECT_NE(r.err.find(n), std::string::npos) << n << " in " << r.err;
  }
  static fs::path dir_;
};
fs::path CliTest::dir_;

TEST_F(CliTest, MakeTinyInspectGenerate) {
  fs::path d = dir_.string() + "_v3";
  auto r = run("make-tiny --arch deepseek_v3 --out " + d.string() + " --seed 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run("inspect --model-path " + d.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("architecture: deepseek_v3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expert_down"), std::string::npos) << r.out;
  r = run("generate --model-path " + d.string() +
          " --prompt-ids 5,6,7,8 --max-new-tokens 5 --ignore-eos --output-format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_ids"], nlohmann::json({5, 6, 7, 8}));
  EXPECT_EQ(j["generated_ids"].size(), 5u);
  EXPECT_TRUE(j["text"].is_string());
  EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0.0);
  // Greedy is deterministic; a seeded sampler is reproducible.
  std::string sampled = "generate --model-path " + d.string() +
                        " --prompt-ids 5,6 --max-new-tokens 6 --ignore-eos --temperature 1.5 "
                        "--top-p 0.95 --seed 9 --output-format json";
  auto a = run(sampled);
  auto b = run(sampled);
  EXPECT_EQ(nlohmann::json::parse(a.out)["generated_ids"],
            nlohmann::json::parse(b.out)["generated_ids"]);
  fs::remove_all(d);
}

TEST_F(CliTest, GenerationStopsAtEos) {
  // Make the first greedy token an eos id: stop after exactly one token.
  auto r = run("generate --model-path " + dir_.string() +
               " --prompt-ids 3,4,5 --max-new-tokens 4 --ignore-eos --output-format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int first = nlohmann::json::parse(r.out)["generated_ids"][0];
  fs::path d = copy_model("eos");
  auto cfg = nlohmann::json::parse(slurp(d / "config.json"));
  cfg["eos_token_id"] = {first == 511 ? 510 : 511, first};
  std::ofstream(d / "config.json") << cfg.dump();
  r = run("generate --model-path " + d.string() +
          " --prompt-ids 3,4,5 --max-new-tokens 4 --output-format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["generated_ids"], nlohmann::json({first}));
}

TEST_F(CliTest, BadFlags) {
  expect_bad_input("", {});
  expect_bad_input("frobnicate", {"unknown command"});
  expect_bad_input("generate --model-path " + dir_.string() + " --prompt-ids 1,x",
                   {"--prompt-ids"});
  expect_bad_input("generate --model-path " + dir_.string(), {"--prompt-ids"});
  expect_bad_input("generate --model-path " + dir_.string() + " --prompt-ids 1 --top-p 2",
                   {"--top-p"});
  expect_bad_input("generate --model-path " + dir_.string() + " --prompt-ids 1 --bogus 3",
                   {"unknown argument '--bogus'"});
  expect_bad_input("generate --model-path " + dir_.string() + " --prompt-ids 1 --max-new-tokens",
                   {"needs a value"});
  expect_bad_input("generate --model-path " + dir_.string() + " --prompt-ids 1,99999",
                   {"outside the vocabulary"});
  expect_bad_input("generate --model-path " + dir_.string() + " --prompt-ids 1 --device tpu",
                   {"--device"});
  expect_bad_input("make-tiny --arch llama --out /tmp/x", {"unknown --arch 'llama'"});
}

TEST_F(CliTest, MissingFiles) {
  expect_bad_input("inspect --model-path /nonexistent/model", {"/nonexistent/model"});
  fs::path d = copy_model("noweights");
  fs::remove(d / "model.safetensors");
  expect_bad_input("generate --model-path " + d.string() + " --prompt-ids 1",
                   {"model.safetensors"});
  fs::path c = copy_model("noconfig");
  fs::remove(c / "config.json");
  expect_bad_input("inspect --model-path " + c.string(), {"config.json"});
}

TEST_F(CliTest, CorruptAndTruncatedSafetensors) {
  fs::path d = copy_model("trunc");
  fs::resize_file(d / "model.safetensors", fs::file_size(d / "model.safetensors") - 100);
  expect_bad_input("generate --model-path " + d.string() + " --prompt-ids 1",
                   {"model.safetensors"});
  fs::path g = copy_model("garbage");
  std::ofstream(g / "model.safetensors", std::ios::trunc) << "this is not a safetensors file";
  expect_bad_input("inspect --model-path " + g.string(), {"model.safetensors"});
  fs::path e = copy_model("empty");
  std::ofstream(e / "model.safetensors", std::ios::trunc);
  expect_bad_input("inspect --model-path " + e.string(), {"model.safetensors"});
}

TEST_F(CliTest, WrongShapesOrDtypesAndNonsenseConfig) {
  // A config whose sizes disagree with the weights: the manifest names mis-shaped tensors.
  fs::path d = copy_model("shape");
  auto cfg = nlohmann::json::parse(slurp(d / "config.json"));
  cfg["hidden_size"] = 48;
  std::ofstream(d / "config.json", std::ios::trunc) << cfg.dump();
  expect_bad_input("generate --model-path " + d.string() + " --prompt-ids 1",
                   {"model.embed_tokens.weight"});
  fs::path n = copy_model("nonsense");
  cfg = nlohmann::json::parse(slurp(n / "config.json"));
  cfg["model_type"] = "llama";
  std::ofstream(n / "config.json", std::ios::trunc) << cfg.dump();
  expect_bad_input("inspect --model-path " + n.string(), {"llama", "glm_moe_dsa"});
  cfg["model_type"] = "glm_moe_dsa";
  cfg["num_experts_per_tok"] = 100;
  std::ofstream(n / "config.json", std::ios::trunc) << cfg.dump();
  expect_bad_input("inspect --model-path " + n.string(), {"num_experts_per_tok"});
  std::ofstream(n / "config.json", std::ios::trunc) << "{\"model_type\": ";
  expect_bad_input("inspect --model-path " + n.string(), {"config.json"});
}

}  // namespace
