// Helpers for model tests: temp directories, tiny models, running prompts, comparing logits,
// reading the HF golden fixtures (tests/fixtures/<case>/golden.json, also the quantized ones).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "backends/reference/reference_ops.h"
#include "model/loader.h"
#include "model/tiny_model.h"
#include "runtime/generate.h"

namespace moe::testing {

inline std::filesystem::path temp_dir(const std::string& name) {
  auto base = std::filesystem::temp_directory_path() /
              ("moe_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  return base;
}

// Max |a - b| / max |b|: the relative error the golden tests use.
inline double max_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return err / std::max(scale, 1e-30);
}

// A model plus the machinery to run it on the reference backend.
struct Harness {
  ThreadPool pool{2};
  reference::ReferenceOps ops{pool};
  HostArena ws;
  model::LoadedModel loaded;

  static std::unique_ptr<Harness> load(const std::filesystem::path& dir) {
    auto h = std::make_unique<Harness>();
    auto r = model::load_model(dir, h->ops);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok()) return nullptr;
    h->loaded = std::move(r).value();
    return h;
  }
  model::KvCache make_cache(int64_t pages, int64_t page_size) {
    return model::KvCache(cfg(), pages, page_size, ops);
  }
  // generate() with greedy decoding and eos ignored, on a fresh cache of 4 pages of 16.
  Result<runtime::GenerateResult> greedy(const std::vector<int32_t>& prompt, int64_t n) {
    model::KvCache cache = make_cache(4, 16);
    runtime::GenerateOptions opt;
    opt.max_new_tokens = n;
    opt.ignore_eos = true;
    return runtime::generate(model(), ops, ws, cache, prompt, opt);
  }
  model::Model& model() { return *loaded.model; }
  const model::ModelConfig& cfg() { return loaded.model->config(); }

  // Runs one step over several sequences; returns logits [S][V].
  std::vector<std::vector<float>> step(model::KvCache& cache,
                                       std::vector<model::KvCache::Sequence*> seqs,
                                       const std::vector<std::vector<int32_t>>& tokens,
                                       model::MlaFormPolicy policy = model::MlaFormPolicy::kAuto) {
    const int64_t S = static_cast<int64_t>(seqs.size()), V = cfg().vocab_size;
    std::vector<model::SequenceInput> in;
    for (int64_t s = 0; s < S; ++s) in.push_back({tokens[s], seqs[s]});
    Tensor logits = Tensor::empty({S, V}, DType::kF32);
    std::fill_n(logits.data<float>(), S * V, std::nanf(""));  // poison
    Status st = model().forward(ops, ws, cache, in, logits.view(), policy);
    EXPECT_TRUE(st.ok()) << st.to_string();
    std::vector<std::vector<float>> out(S);
    for (int64_t s = 0; s < S; ++s)
      out[s].assign(logits.data<float>() + s * V, logits.data<float>() + (s + 1) * V);
    return out;
  }

  // Logits at the last position of `ids`, computed from scratch in one prefill.
  std::vector<float> prefill_logits(const std::vector<int32_t>& ids,
                                    model::MlaFormPolicy policy = model::MlaFormPolicy::kAuto) {
    model::KvCache cache = make_cache((static_cast<int64_t>(ids.size()) + 15) / 16, 16);
    model::KvCache::Sequence seq;
    return step(cache, {&seq}, {ids}, policy)[0];
  }
};

// A fixture directory: tests/fixtures/<name> ("quant/<case>" for the quantized ones). The
// repo root is MOE_SOURCE_DIR_OVERRIDE when set (a binary run from another checkout).
inline std::filesystem::path golden_fixture_dir(const std::string& name) {
  const char* root = std::getenv("MOE_SOURCE_DIR_OVERRIDE");
  return std::filesystem::path(root ? root : MOE_SOURCE_DIR) / "tests" / "fixtures" / name;
}

// What HF transformers computed for a fixture (tools/golden): the prompt, the logits at its last
// position, the 16 greedy ids (full recomputation), the residual stream at the last position
// after each layer, and for a quantized fixture the BF16 fixture it was made from.
// Prefill of `prompt` in both MLA forms against transformers: the last position's logits and
// the residual stream after each layer (traced as "layer_out") within `tol` relative error.
inline void expect_prefill_matches(Harness& h, const std::vector<int32_t>& prompt,
                                   const std::vector<float>& last_logits,
                                   const std::vector<std::vector<float>>& layer_outputs_last,
                                   double tol, const std::string& label) {
  std::vector<std::vector<float>> layer_out(h.cfg().num_hidden_layers);
  h.ops.set_trace_sink([&](ConstTensorView t, std::string_view name, int layer) {
    if (name != "layer_out") return;
    ConstTensorView row = t.row(t.dim(0) - 1);
    layer_out[layer].assign(row.data<float>(), row.data<float>() + row.numel());
  });
  for (auto policy : {model::MlaFormPolicy::kNaive, model::MlaFormPolicy::kAbsorbed}) {
    const std::vector<float> logits = h.prefill_logits(prompt, policy);
    const double err = max_rel_error(logits, last_logits);
    std::printf("%s policy %d: max rel logit error %.3g\n", label.c_str(), static_cast<int>(policy),
                err);
    EXPECT_LT(err, tol) << label << " policy " << static_cast<int>(policy);
    for (size_t l = 0; l < layer_out.size(); ++l)
      EXPECT_LT(max_rel_error(layer_out[l], layer_outputs_last[l]), tol)
          << label << " policy " << static_cast<int>(policy) << " layer " << l;
  }
  h.ops.set_trace_sink(nullptr);
}

// The seeded-sampling parameters the generation tests use (temperature 0.8, top-p 0.95).
inline ops::SamplingParams seeded_sampling() {
  ops::SamplingParams sp;
  sp.temperature = 0.8f;
  sp.top_p = 0.95f;
  sp.seed = 11;
  return sp;
}

struct Golden {
  std::vector<int32_t> prompt;
  std::vector<float> last_logits;
  std::vector<int32_t> greedy;
  std::vector<std::vector<float>> layer_outputs_last;
  std::string base;  // quantized fixtures: the base fixture's name; else empty
};

inline Golden read_golden(const std::filesystem::path& dir) {
  std::ifstream f(dir / "golden.json");
  EXPECT_TRUE(f.good()) << "cannot read " << (dir / "golden.json");
  nlohmann::json j = nlohmann::json::parse(f);
  Golden g;
  g.prompt = j["prompt_ids"].get<std::vector<int32_t>>();
  g.last_logits = j["last_logits"].get<std::vector<float>>();
  g.greedy = j["greedy_ids"].get<std::vector<int32_t>>();
  g.layer_outputs_last = j["layer_outputs_last"].get<std::vector<std::vector<float>>>();
  g.base = j.value("base", std::string());
  return g;
}

inline int argmax(const std::vector<float>& v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

inline std::vector<int32_t> random_ids(int n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = static_cast<int32_t>(rng() % vocab);
  return ids;
}

}  // namespace moe::testing
