// Tokenizer throughput: moengine's encoder vs tokenizers.js on the same text, same run.
//   tokenize_bench --model-path DIR [--text FILE] [--seconds S] [--no-js]
// FILE defaults to the concatenated Debian license texts (/usr/share/common-licenses/*: ~0.3 MB
// of real English prose). Encoding is line by line without special tokens, one thread, one
// EncodeScratch reused across lines (its piece -> ids memo is part of what is measured; the first
// "cold" pass starts with an empty memo). Bytes model: MB/s = UTF-8 input bytes / wall time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "text/tokenizer.h"

#ifndef MOE_BENCH_SOURCE_DIR
#define MOE_BENCH_SOURCE_DIR "."  // the repository root; CMake sets it
#endif

namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, text_path, seconds = "3";
  bool run_js = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model-path" && i + 1 < argc) {
      model = argv[++i];
    } else if (a == "--text" && i + 1 < argc) {
      text_path = argv[++i];
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = argv[++i];
    } else if (a == "--no-js") {
      run_js = false;
    } else {
      std::fprintf(
          stderr, "usage: tokenize_bench --model-path DIR [--text FILE] [--seconds S] [--no-js]\n");
      return 2;
    }
  }
  if (model.empty()) {
    std::fprintf(stderr, "tokenize_bench: --model-path DIR is required\n");
    return 2;
  }
  std::string text;
  if (text_path.empty()) {
    text_path = "/tmp/moe_tokenize_bench_licenses.txt";
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator("/usr/share/common-licenses")) {
      if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) text += read_all(f.string());
    std::ofstream(text_path, std::ios::binary) << text;
  } else {
    text = read_all(text_path);
  }
  std::vector<std::string> lines;
  {
    std::stringstream ss(text);
    for (std::string l; std::getline(ss, l);) lines.push_back(l);
  }
  size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size();

  auto tok = moe::text::Tokenizer::from_dir(model);
  if (!tok.ok()) {
    std::fprintf(stderr, "tokenize_bench: %s\n", tok.status().to_string().c_str());
    return 2;
  }
  moe::text::EncodeScratch scratch;
  std::vector<int32_t> ids;
  const moe::text::EncodeOptions options{.add_special_tokens = false};
  using clock = std::chrono::steady_clock;
  auto cpu_seconds = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  };
  // Cold pass (empty memo).
  auto t0 = clock::now();
  size_t n_ids = 0;
  for (const auto& l : lines) {
    ids.clear();
    tok->encode(l, options, &scratch, &ids);
    n_ids += ids.size();
  }
  const double cold = std::chrono::duration<double>(clock::now() - t0).count();
  // Warm passes for at least `seconds`.
  const double budget = std::stod(seconds);
  int passes = 0;
  t0 = clock::now();
  const double cpu0 = cpu_seconds();
  double warm = 0;
  do {
    for (const auto& l : lines) {
      ids.clear();
      tok->encode(l, options, &scratch, &ids);
    }
    ++passes;
    warm = std::chrono::duration<double>(clock::now() - t0).count();
  } while (warm < budget);
  const double warm_cpu = cpu_seconds() - cpu0;
  std::printf("input: %s, %zu bytes, %zu lines, %zu ids\n", text_path.c_str(), bytes, lines.size(),
              n_ids);
  std::printf("moengine  cold pass: %8.3f s  %7.1f MB/s\n", cold, bytes / cold / 1e6);
  std::printf("moengine  warm     : %8.3f s  %7.1f MB/s  (%d passes, %.1f M ids/s)\n", warm,
              bytes * passes / warm / 1e6, passes, n_ids * passes / warm / 1e6);
  std::printf(
      "moengine  warm, per CPU-second of this thread: %7.1f MB/s (%.0f%% of wall time on "
      "CPU; the rest is other processes)\n",
      bytes * passes / warm_cpu / 1e6, 100 * warm_cpu / warm);
  if (run_js) {
    const std::string cmd = std::string("node '") + MOE_BENCH_SOURCE_DIR +
                            "/bench/text/tokenize_bench_js.mjs' --tokenizer-dir '" + model +
                            "' --text '" + text_path + "' --seconds " + seconds;
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[512];
    while (p && std::fgets(buf, sizeof(buf), p)) out += buf;
    const int rc = p ? pclose(p) : -1;
    if (rc != 0) {
      std::printf("tokenizers.js: failed (run scripts/npm-oracles.sh): %s\n", out.c_str());
      return 1;
    }
    std::printf("tokenizers.js      : %s", out.c_str());
  }
  return 0;
}
