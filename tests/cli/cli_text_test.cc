// moengine with text: tiny models come with a tiny byte-level BPE tokenizer and a chat template,
// so `generate --prompt/--chat`, `tokenize` and `chat-template` run end to end.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Out {
  int code = -1;
  std::string out, err;
};

Out sh(const std::string& args, const std::string& stdin_text = "") {
  static int n = 0;
  fs::path d = fs::temp_directory_path() / ("moe_clitext_" + std::to_string(::getpid()));
  fs::create_directories(d);
  std::string tag = std::to_string(n++);
  fs::path in = d / ("in" + tag), out = d / ("out" + tag), err = d / ("err" + tag);
  std::ofstream(in) << stdin_text;
  std::string cmd = std::string(MOE_BINARY_DIR) + "/bin/moengine " + args + " <" + in.string() +
                    " >" + out.string() + " 2>" + err.string();
  int st = std::system(cmd.c_str());
  Out o;
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream fo(out), fe(err);
  o.out.assign(std::istreambuf_iterator<char>(fo), {});
  o.err.assign(std::istreambuf_iterator<char>(fe), {});
  return o;
}

class CliTextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ =
        (fs::temp_directory_path() / ("moe_clitext_model_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    Out r = sh("make-tiny --arch glm_moe_dsa --out " + dir_ + " --seed 2");
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string dir_;
};
std::string CliTextTest::dir_;

TEST_F(CliTextTest, PromptTextEqualsItsTokenIds) {
  Out t = sh("tokenize --model-path " + dir_ + " --text 'The quick brown fox'");
  ASSERT_EQ(t.code, 0) << t.err;
  auto ids = nlohmann::json::parse(t.out)["ids"];
  ASSERT_GT(ids.size(), 2u);
  EXPECT_EQ(ids[0], 0) << "BOS from tokenizer_config add_bos_token";
  std::string csv;
  for (auto& id : ids) csv += (csv.empty() ? "" : ",") + std::to_string(id.get<int>());
  Out a =
      sh("generate --model-path " + dir_ +
         " --prompt 'The quick brown fox' --max-new-tokens 6 --ignore-eos --output-format json");
  Out b = sh("generate --model-path " + dir_ + " --prompt-ids " + csv +
             " --max-new-tokens 6 --ignore-eos --output-format json");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["prompt_ids"], ids);
  EXPECT_EQ(ja["generated_ids"], jb["generated_ids"]);
  EXPECT_EQ(ja["text"], jb["text"]);
  // The text is the decode of the generated ids.
  std::string gen;
  for (auto& id : ja["generated_ids"])
    gen += (gen.empty() ? "" : ",") + std::to_string(id.get<int>());
  EXPECT_FALSE(ja["text"].get<std::string>().empty() && !ja["generated_ids"].empty() &&
               ja["generated_ids"][0].get<int>() > 4);
}

TEST_F(CliTextTest, ChatUsesTheTemplateWithOneBos) {
  Out c =
      sh("chat-template --model-path " + dir_,
         R"({"messages":[{"role":"user","content":"Hello world"}],"add_generation_prompt":true})");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, "<|begin_of_text|><|user|>Hello world<|assistant|>");
  Out g = sh("generate --model-path " + dir_ +
             " --chat 'Hello world' --max-new-tokens 3 --ignore-eos --output-format json");
  ASSERT_EQ(g.code, 0) << g.err;
  auto p = nlohmann::json::parse(g.out)["prompt_ids"];
  ASSERT_GE(p.size(), 4u);
  EXPECT_EQ(p[0], 0);
  EXPECT_NE(p[1], 0) << "no double BOS";
  EXPECT_EQ(p[1], 2) << "<|user|> is one special token";
  EXPECT_EQ(p.back(), 3) << "ends with <|assistant|>";
}

TEST_F(CliTextTest, BadTextInput) {
  Out r = sh("generate --model-path " + dir_ + " --prompt hi --prompt-ids 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("exactly one of"), std::string::npos) << r.err;
  fs::path no_tok = dir_ + "_notok";
  fs::remove_all(no_tok);
  fs::create_directories(no_tok);
  fs::copy_file(dir_ + "/config.json", no_tok / "config.json");
  fs::copy_file(dir_ + "/model.safetensors", no_tok / "model.safetensors");
  r = sh("generate --model-path " + no_tok.string() + " --prompt hi");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("tokenizer.json"), std::string::npos) << r.err;
  r = sh("generate --model-path " + no_tok.string() +
         " --prompt-ids 5,6 --max-new-tokens 2 "
         "--output-format json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["text"], "");
  r = sh("generate --model-path " + dir_ + " --prompt-ids 1 --device cuda");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--device cuda"), std::string::npos) << r.err;
  r = sh("tokenize --model-path " + dir_, "{\"text\": \"ok\"}\nnot json\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  fs::remove_all(no_tok);
}

}  // namespace
