// Oracle test: every conversation in conversations/conversations.json rendered with every template
// of templates/manifest.json by ChatTemplate and by @huggingface/jinja (oracle/render_oracle.mjs,
// run through node) must be byte-identical. Needs node and scripts/npm-oracles.sh; fails if not.
#include "text/chat_template.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace moe::text {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

const std::string kRoot = MOE_SOURCE_DIR;

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TemplateCase {
  std::string name;
  std::string source;
  std::string bos, eos;
  json spec;
};

std::string npm_cache() {
  const char* env = std::getenv("MOE_NPM_CACHE");
  return env ? env : kRoot + "/.npm-cache";
}

std::vector<TemplateCase> load_templates() {
  const json manifest = json::parse(read_text(kRoot + "/tests/text/templates/manifest.json"));
  std::vector<TemplateCase> out;
  for (const auto& t : manifest["templates"]) {
    TemplateCase c;
    c.name = t["name"];
    c.spec = t;
    if (t.contains("package")) {
      const fs::path cfg = fs::path(npm_cache()) / "node_modules" /
                           t["package"].get<std::string>() / "models" / "tokenizer_config.json";
      const json config = json::parse(read_text(cfg));
      c.source = config["chat_template"];
      auto tok = [](const json& j) -> std::string {
        return j.is_string() ? j.get<std::string>() : j.is_object() ? j.value("content", "") : "";
      };
      c.bos = tok(config.value("bos_token", json()));
      c.eos = tok(config.value("eos_token", json()));
    } else {
      c.source = read_text(kRoot + "/tests/text/templates/" + t["file"].get<std::string>());
      c.bos = "<｜begin▁of▁sentence｜>";
      c.eos = "<｜end▁of▁sentence｜>";
    }
    out.push_back(std::move(c));
  }
  return out;
}

// Applies the template's input conventions (manifest) to a canonical conversation; returns false
// if the conversation does not apply to this template.
bool adapt(const json& spec, const json& conv, json* request) {
  json msgs = conv["messages"];
  for (auto& m : msgs) {
    if (spec.value("string_content_only", false) && !m["content"].is_string()) return false;
    if (!m.contains("tool_calls")) continue;
    if (spec.value("tool_call_content", "keep") == "null") m["content"] = nullptr;
    for (auto& tc : m["tool_calls"]) {
      if (spec.value("arguments", "object") == "string") {
        // Python json.dumps separators, as an OpenAI client would send arguments.
        auto t = jinja::from_json(tc["function"]["arguments"]);
        tc["function"]["arguments"] = jinja::to_json(t, jinja::JsonOptions{});
      }
    }
  }
  json r = json::object();
  r["messages"] = std::move(msgs);
  if (conv.contains("tools")) r["tools"] = conv["tools"];
  r["add_generation_prompt"] = conv["add_generation_prompt"];
  for (auto it = conv["kwargs"].begin(); it != conv["kwargs"].end(); ++it) r[it.key()] = it.value();
  *request = std::move(r);
  return true;
}

// The variables ChatTemplate::apply renders with (transformers' defaults), for the oracle.
json variables_of(const json& request, const TemplateCase& t) {
  json v = request;
  if (!v.contains("tools")) v["tools"] = nullptr;
  if (!v.contains("documents")) v["documents"] = nullptr;
  if (!v.contains("add_generation_prompt")) v["add_generation_prompt"] = false;
  v["bos_token"] = t.bos;
  v["eos_token"] = t.eos;
  return v;
}

std::string excerpt(const std::string& s, size_t at) {
  const size_t b = at > 60 ? at - 60 : 0;
  return json(s.substr(b, 160)).dump(-1, ' ', false, json::error_handler_t::replace);
}

TEST(ChatTemplateOracle, ConversationsMatchHuggingFaceJinja) {
  const std::string oracle = kRoot + "/tests/text/oracle/render_oracle.mjs";
  const std::string pkg = npm_cache() + "/node_modules/@huggingface/jinja/dist/index.js";
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0)
      << "node not found: install Node.js 20 and run scripts/npm-oracles.sh";
  ASSERT_TRUE(fs::exists(pkg)) << pkg << " missing: run scripts/npm-oracles.sh";

  const std::vector<TemplateCase> templates = load_templates();
  const json convs = json::parse(read_text(kRoot + "/tests/text/conversations/conversations.json"));
  ASSERT_GE(convs.size(), 50u);

  struct Job {
    size_t t;
    std::string conv;
    json request;
  };
  std::vector<Job> jobs;
  json oracle_jobs = json::array();
  for (size_t ti = 0; ti < templates.size(); ++ti) {
    for (const auto& c : convs) {
      json req;
      if (!adapt(templates[ti].spec, c, &req)) continue;
      oracle_jobs.push_back(
          {{"template", templates[ti].source}, {"context", variables_of(req, templates[ti])}});
      jobs.push_back({ti, c["name"], std::move(req)});
    }
  }

  char dir_tmpl[] = "/tmp/moe_chat_oracle_XXXXXX";
  ASSERT_NE(mkdtemp(dir_tmpl), nullptr);
  const std::string dir = dir_tmpl;
  std::ofstream(dir + "/jobs.json") << oracle_jobs.dump();
  const std::string cmd = "node '" + oracle + "' '" + dir + "/jobs.json' '" + dir + "/out.json'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "oracle failed: " << cmd;
  const json results = json::parse(read_text(dir + "/out.json"));
  fs::remove_all(dir);
  ASSERT_EQ(results.size(), jobs.size());

  std::vector<int> identical(templates.size()), both_error(templates.size()),
      total(templates.size());
  int mismatches = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const TemplateCase& t = templates[j.t];
    ++total[j.t];
    auto tmpl = ChatTemplate::from_string(t.source, t.bos, t.eos);
    ASSERT_TRUE(tmpl.ok()) << t.name << ": " << tmpl.status().to_string();
    const auto ours = tmpl->apply(j.request);
    const json& ref = results[i];
    if (t.spec.contains("expect_error") && t.spec["expect_error"].contains(j.conv)) {
      EXPECT_FALSE(ours.ok()) << t.name << " / " << j.conv << " should fail like Python Jinja2: "
                              << t.spec["expect_error"][j.conv].get<std::string>();
      ++both_error[j.t];
      continue;
    }
    if (!ref["ok"].get<bool>()) {
      if (!ours.ok()) {
        ++both_error[j.t];
        continue;
      }
      ++mismatches;
      ADD_FAILURE() << t.name << " / " << j.conv << ": @huggingface/jinja failed ("
                    << ref["error"].get<std::string>() << ") but we rendered";
      continue;
    }
    if (!ours.ok()) {
      ++mismatches;
      ADD_FAILURE() << t.name << " / " << j.conv << ": " << ours.status().to_string();
      continue;
    }
    const std::string& want = ref["text"].get_ref<const std::string&>();
    if (*ours == want) {
      ++identical[j.t];
      continue;
    }
    ++mismatches;
    size_t at = 0;
    while (at < want.size() && at < ours->size() && want[at] == (*ours)[at]) ++at;
    ADD_FAILURE() << t.name << " / " << j.conv << ": differs at byte " << at
                  << "\n  ours:   " << excerpt(*ours, at) << "\n  oracle: " << excerpt(want, at);
  }
  int sum = 0;
  for (size_t ti = 0; ti < templates.size(); ++ti) {
    std::printf("  %-20s %3d/%3d byte-identical, %d expected errors\n", templates[ti].name.c_str(),
                identical[ti], total[ti], both_error[ti]);
    sum += identical[ti];
    EXPECT_GT(identical[ti], 0) << templates[ti].name << " rendered nothing identically";
  }
  std::printf("  total: %d renders byte-identical, %d mismatches\n", sum, mismatches);
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace moe::text
