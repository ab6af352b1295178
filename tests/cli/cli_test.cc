// Runs the moengine binary: success paths exit 0; every class of bad input (flags, missing
// files, corrupt or truncated safetensors, wrong shapes or dtypes, nonsense config) exits 2
// with one line on stderr that names the problem, never a signal.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "../quant/quant_test_util.h"
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
  expect_bad_input(
      "generate --model-path " + dir_.string() + " --prompt-ids 1 --moe-f16-activations",
      {"--moe-f16-activations applies to --device cuda"});
  expect_bad_input("make-tiny --arch llama --out /tmp/x", {"unknown --arch 'llama'"});
}

// tune-moe checks its flags and the model's config.json before it looks for a GPU; with none
// visible (CUDA_VISIBLE_DEVICES empty, so the test is the same on a GPU machine) it says so.
TEST_F(CliTest, TuneMoeBadInput) {
  const std::string m = "tune-moe --model-path " + dir_.string();
  expect_bad_input("tune-moe", {"--model-path DIR is required"});
  expect_bad_input("tune-moe --model-path", {"needs a value"});
  expect_bad_input(m + " --bogus 1", {"unknown argument '--bogus'"});
  expect_bad_input(m + " --fmt nvfp44", {"unknown format 'nvfp44'", "bf16, fp8, nvfp4"});
  expect_bad_input(m + " --fmt bf16,,fp8", {"unknown format ''"});
  expect_bad_input(m + " --tokens 1,x", {"--tokens expects comma-separated integers"});
  expect_bad_input(m + " --tokens 0", {"0 is not a token count"});
  expect_bad_input(m + " --tokens 8,-1", {"-1 is not a token count"});
  expect_bad_input(m + " --tokens 1,3,4", {"bucket T <= 4"});
  expect_bad_input(m + " --iters 2", {"--iters must be in [3, 100000]"});
  expect_bad_input(m + " --iters 5x", {"--iters expects an integer"});
  const char* old = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string saved = old ? old : "";
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  fs::path c = copy_model("tune_noconfig");
  fs::remove(c / "config.json");
#if defined(MOE_CLI_HAS_CUDA)
  expect_bad_input(m + " --fmt nvfp4 --tokens 1", {"no usable GPU", "run it there"});
  expect_bad_input("tune-moe --model-path " + c.string(), {"config.json"});
#else
  expect_bad_input(m + " --fmt nvfp4 --tokens 1", {"built without CUDA"});
  expect_bad_input("tune-moe --model-path " + c.string(), {"built without CUDA"});
#endif
  if (old)
    ::setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  else
    ::unsetenv("CUDA_VISIBLE_DEVICES");
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

// ---- quantize and quantized checkpoints ------------------------------------------------------

namespace {

// Rewrites dir/model.safetensors, passing every tensor through `edit` (false drops it).
void edit_weights(const fs::path& dir,
                  const std::function<bool(moe::testing::EditableTensor&)>& edit) {
  fs::path tmp = dir.string() + "_edit";
  ASSERT_TRUE(moe::testing::rewrite_checkpoint(dir, tmp, edit).ok());
  fs::remove_all(dir);
  fs::rename(tmp, dir);
}

TEST_F(CliTest, QuantizeNvfp4AndFp8BlockThenInspectAndGenerate) {
  fs::path nv = dir_.string() + "_nvfp4", f8 = dir_.string() + "_fp8";
  auto r =
      run("quantize --model-path " + dir_.string() + " --out " + nv.string() + " --format nvfp4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << "no progress output when stderr is not a terminal: " << r.err;
  auto hq = nlohmann::json::parse(slurp(nv / "hf_quant_config.json"));
  EXPECT_EQ(hq["quantization"]["quant_algo"], "NVFP4");
  EXPECT_EQ(hq["quantization"]["group_size"], 16);
  EXPECT_EQ(hq["quantization"]["exclude_modules"][0], "lm_head");
  r = run("inspect --model-path " + nv.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("quantization: nvfp4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvfp4            F32, F8_E4M3, U8"), std::string::npos) << r.out;
  r = run("generate --model-path " + nv.string() + " --prompt-ids 5,6,7 --max-new-tokens 4 " +
          "--ignore-eos --output-format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["generated_ids"].size(), 4u);

  r = run("quantize --model-path " + dir_.string() + " --out " + f8.string() +
          " --format fp8-block --max-shard-bytes 60000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(f8 / "model.safetensors.index.json"));
  int shards = 0;
  for (const auto& f : fs::directory_iterator(f8))
    shards += f.path().filename().string().starts_with("model-00001-of-0000");
  EXPECT_EQ(shards, 1) << r.out;  // several shards, named as HF names them
  auto cfg = nlohmann::json::parse(slurp(f8 / "config.json"));
  EXPECT_EQ(cfg["quantization_config"]["quant_method"], "fp8");
  EXPECT_EQ(cfg["quantization_config"]["weight_block_size"], nlohmann::json({128, 128}));
  r = run("inspect --model-path " + f8.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fp8-block"), std::string::npos) << r.out;
  r = run("generate --model-path " + f8.string() + " --prompt-ids 5,6,7 --max-new-tokens 4 " +
          "--ignore-eos --output-format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::remove_all(nv);
  fs::remove_all(f8);
}

TEST_F(CliTest, QuantizeBadInput) {
  fs::path out = dir_.string() + "_qbad";
  expect_bad_input(
      "quantize --model-path " + dir_.string() + " --out " + out.string() + " --format int4",
      {"unknown --format 'int4'", "nvfp4, fp8-block"});
  expect_bad_input("quantize --model-path " + dir_.string() + " --format nvfp4", {"--out"});
  expect_bad_input("quantize --model-path /nonexistent --out " + out.string() + " --format nvfp4",
                   {"/nonexistent"});
  ASSERT_EQ(
      run("quantize --model-path " + dir_.string() + " --out " + out.string() + " --format nvfp4")
          .exit_code,
      0);
  expect_bad_input("quantize --model-path " + out.string() + " --out " + out.string() + "2" +
                       " --format fp8-block",
                   {"already quantized"});
  fs::remove_all(out);
}

// Every class of broken quantized checkpoint: exit 2, one line naming the tensor.
TEST_F(CliTest, BrokenQuantizedCheckpoints) {
  fs::path base = dir_.string() + "_qbase", base8 = dir_.string() + "_qbase8";
  ASSERT_EQ(
      run("quantize --model-path " + dir_.string() + " --out " + base.string() + " --format nvfp4")
          .exit_code,
      0);
  ASSERT_EQ(run("quantize --model-path " + dir_.string() + " --out " + base8.string() +
                " --format fp8-block")
                .exit_code,
            0);
  auto broken = [&](const std::string& name, const fs::path& from) {
    fs::path d = dir_.string() + "_qb_" + name;
    fs::remove_all(d);
    fs::copy(from, d, fs::copy_options::recursive);
    return d;
  };
  const std::string up = "model.layers.1.mlp.experts.0.up_proj";
  auto gen = [](const fs::path& d) {
    return "generate --model-path " + d.string() + " --prompt-ids 1";
  };

  fs::path d = broken("missing", base);  // missing scale
  edit_weights(d, [&](auto& t) { return t.name != up + ".weight_scale"; });
  expect_bad_input(gen(d), {"missing scale tensor", up + ".weight_scale"});

  d = broken("misshaped", base);  // mis-shaped scale (same bytes, wrong shape)
  edit_weights(d, [&](auto& t) {
    if (t.name == up + ".weight_scale") t.shape = moe::Shape{t.shape[1], t.shape[0]};
    return true;
  });
  expect_bad_input("inspect --model-path " + d.string(),
                   {"wrong scale tensor", up + ".weight_scale"});

  d = broken("packed", base);  // packed size does not match the shape
  edit_weights(d, [&](auto& t) {
    if (t.name == up + ".weight") {
      t.shape = moe::Shape{t.shape[0], t.shape[1] / 2};
      t.bytes.resize(t.bytes.size() / 2);
    }
    return true;
  });
  expect_bad_input(gen(d), {"packed size does not match", up + ".weight"});

  d = broken("nan", base);  // NaN block scale
  edit_weights(d, [&](auto& t) {
    if (t.name == up + ".weight_scale") t.bytes[5] = std::byte{0x7F};
    return true;
  });
  expect_bad_input(gen(d), {"NaN", up + ".weight_scale"});

  d = broken("inf", base);  // Inf global scale
  edit_weights(d, [&](auto& t) {
    if (t.name == up + ".weight_scale_2") {
      float inf = INFINITY;
      std::memcpy(t.bytes.data(), &inf, 4);
    }
    return true;
  });
  expect_bad_input(gen(d), {"Inf", up + ".weight_scale_2"});

  d = broken("group", base);  // group size other than 16
  auto hq = nlohmann::json::parse(slurp(d / "hf_quant_config.json"));
  hq["quantization"]["group_size"] = 32;
  std::ofstream(d / "hf_quant_config.json", std::ios::trunc) << hq.dump();
  expect_bad_input(gen(d), {"group_size", "16"});

  d = broken("excluded", base);  // an excluded module that is quantized nevertheless
  hq = nlohmann::json::parse(slurp(d / "hf_quant_config.json"));
  hq["quantization"]["exclude_modules"].push_back("model.layers.1.mlp.experts.0*");
  std::ofstream(d / "hf_quant_config.json", std::ios::trunc) << hq.dump();
  expect_bad_input(
      gen(d), {"model.layers.1.mlp.experts.0.", "is quantized", "model.layers.1.mlp.experts.0*"});

  d = broken("algo", base);  // unknown quantization format
  hq = nlohmann::json::parse(slurp(d / "hf_quant_config.json"));
  hq["quantization"]["quant_algo"] = "W4A8_AWQ";
  std::ofstream(d / "hf_quant_config.json", std::ios::trunc) << hq.dump();
  expect_bad_input(gen(d), {"W4A8_AWQ", "supported: ModelOpt NVFP4"});
  d = copy_model("gptq");
  auto cfg = nlohmann::json::parse(slurp(d / "config.json"));
  cfg["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}};
  std::ofstream(d / "config.json", std::ios::trunc) << cfg.dump();
  expect_bad_input("inspect --model-path " + d.string(), {"quant_method 'gptq'", "fp8"});

  const std::string kvb = "model.layers.1.self_attn.kv_b_proj";  // FP8 block
  d = broken("fp8missing", base8);
  edit_weights(d, [&](auto& t) { return t.name != kvb + ".weight_scale_inv"; });
  expect_bad_input(gen(d), {"missing scale tensor", kvb + ".weight_scale_inv"});
  d = broken("fp8shape", base8);
  edit_weights(d, [&](auto& t) {
    if (t.name == kvb + ".weight_scale_inv") {
      t.shape = moe::Shape{2, 1};
      t.bytes.resize(8);
    }
    return true;
  });
  expect_bad_input(gen(d), {"wrong scale tensor", kvb + ".weight_scale_inv", "[1, 1]"});
  d = broken("fp8nan", base8);
  edit_weights(d, [&](auto& t) {
    if (t.name == kvb + ".weight_scale_inv") {
      float nan = NAN;
      std::memcpy(t.bytes.data(), &nan, 4);
    }
    return true;
  });
  expect_bad_input(gen(d), {"NaN", kvb + ".weight_scale_inv"});
  d = broken("fp8dense", base8);  // weights_proj stays BF16 in FP8 checkpoints
  edit_weights(d, [&](auto& t) {
    if (t.name == "model.layers.0.self_attn.indexer.weights_proj.weight") {
      t.dtype = moe::DType::kF8E4M3;
      t.bytes.resize(t.bytes.size() / 2);
    }
    return true;
  });
  expect_bad_input(gen(d), {"model.layers.0.self_attn.indexer.weights_proj.weight", "quantized"});
}

}  // namespace
