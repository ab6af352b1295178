// quantize_checkpoint: BF16 checkpoint -> NVFP4 (ModelOpt layout) or FP8 block (DeepSeek
// layout), streamed tensor by tensor into safetensors shards.
#include "model/quantize_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include "core/file.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "io/strict_json.h"
#include "model/weight_manifest.h"
#include "tensor/quant/fp8_block.h"
#include "tensor/quant/nvfp4.h"

namespace moe::model {

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// One tensor of the output: copied from the input, or one part of a quantized module.
struct OutTensor {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t bytes = 0;
  std::string source;                // input tensor to copy (empty for quantized parts)
  const WeightSpec* spec = nullptr;  // quantized part (spec of the quantized manifest)
  int shard = 0;
  uint64_t begin = 0;  // offset in the shard's data section
};

Status write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return invalid_argument("cannot write " + p.string());
  return Status();
}

// The input tensor as F32 (BF16/F16/F32 in a validated checkpoint).
Result<std::vector<float>> to_f32(const io::Checkpoint::Entry& e, const std::string& name) {
  std::span<const std::byte> b = e.file->bytes(*e.info);
  const int64_t n = e.info->shape.numel();
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    switch (e.info->dtype) {
      case DType::kF32:
        std::memcpy(&out[i], b.data() + 4 * i, 4);
        break;
      case DType::kBF16:
        std::memcpy(&h, b.data() + 2 * i, 2);
        out[i] = bf16_to_f32(h);
        break;
      case DType::kF16:
        std::memcpy(&h, b.data() + 2 * i, 2);
        out[i] = f16_to_f32(h);
        break;
      default:
        return invalid_argument(name + " is " + std::string(dtype_name(e.info->dtype)) +
                                "; quantize needs BF16, F16 or F32 matrices");
    }
    if (!std::isfinite(out[i]))
      return invalid_argument(name + " holds a non-finite value at flat index " +
                              std::to_string(i) + "; cannot quantize it");
  }
  return out;
}

float amax_of(const std::vector<float>& v) {
  float a = 0.f;
  for (float x : v) a = std::max(a, std::fabs(x));
  return a;
}

// Quantizes one module; returns its parts by tensor name.
class ModuleQuantizer {
 public:
  ModuleQuantizer(const io::Checkpoint& ckpt, const io::QuantConfig& q, ThreadPool& pool)
      : ckpt_(ckpt), q_(q), pool_(pool) {}

  Result<std::map<std::string, std::vector<std::byte>>> run(const WeightSpec& w) {
    const std::string src = w.module + ".weight";
    MOE_ASSIGN_OR_RETURN(std::vector<float> x, to_f32(*ckpt_.find(src), src));
    const int64_t N = w.logical_shape[0], K = w.logical_shape[1];
    std::map<std::string, std::vector<std::byte>> parts;
    auto& data = parts[src];
    if (w.format == ops::WeightFormat::kNvfp4) {
      if (K % quant::kNvfp4Group != 0)
        return invalid_argument("cannot quantize " + w.module +
                                " to NVFP4: K = " + std::to_string(K) + " is not a multiple of 16");
      MOE_ASSIGN_OR_RETURN(float amax, fused_amax(w, amax_of(x)));
      const float s2 = quant::nvfp4_global_scale(amax);
      data.resize(static_cast<size_t>(N * K / 2));
      auto& scale = parts[w.module + ".weight_scale"];
      scale.resize(static_cast<size_t>(N * K / quant::kNvfp4Group));
      pool_.parallel_for(N, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
          quant::nvfp4_quantize_row(x.data() + n * K, K, s2,
                                    reinterpret_cast<uint8_t*>(data.data()) + n * K / 2,
                                    reinterpret_cast<uint8_t*>(scale.data()) + n * K / 16);
        }
      });
      const float input_scale = 1.f;  // no calibration; W4A16 ignores it
      parts[w.module + ".weight_scale_2"] = scalar_bytes(s2);
      parts[w.module + ".input_scale"] = scalar_bytes(input_scale);
    } else {
      const int64_t b = q_.block;
      data.resize(static_cast<size_t>(N * K));
      auto& scale = parts[w.module + ".weight_scale_inv"];
      scale.resize(static_cast<size_t>(quant::ceil_div(N, b) * quant::ceil_div(K, b) * 4));
      // Row blocks are independent: each thread quantizes whole block rows.
      const int64_t KB = quant::ceil_div(K, b);
      pool_.parallel_for(quant::ceil_div(N, b), [&](int64_t r0, int64_t r1) {
        const int64_t n0 = r0 * b, n1 = std::min(N, r1 * b);
        quant::fp8_block_quantize(x.data() + n0 * K, n1 - n0, K, b,
                                  reinterpret_cast<uint8_t*>(data.data()) + n0 * K,
                                  reinterpret_cast<float*>(scale.data()) + r0 * KB);
      });
    }
    return parts;
  }

 private:
  static std::vector<std::byte> scalar_bytes(float f) {
    std::vector<std::byte> b(4);
    std::memcpy(b.data(), &f, 4);
    return b;
  }
  // ModelOpt gives gate_proj and up_proj of one MLP the same weight_scale_2 (they are fused
  // into one GEMM): the max of both amaxes.
  Result<float> fused_amax(const WeightSpec& w, float own) {
    std::string sibling;
    auto ends = [&](const char* s) {
      const size_t n = std::strlen(s);
      return w.module.size() >= n && w.module.compare(w.module.size() - n, n, s) == 0;
    };
    const std::string base = w.module.substr(0, w.module.rfind('.') + 1);
    if (ends(".gate_proj")) sibling = base + "up_proj";
    if (ends(".up_proj")) sibling = base + "gate_proj";
    if (sibling.empty()) return own;
    const io::Checkpoint::Entry* e = ckpt_.find(sibling + ".weight");
    if (e == nullptr) return own;
    MOE_ASSIGN_OR_RETURN(std::vector<float> y, to_f32(*e, sibling + ".weight"));
    return std::max(own, amax_of(y));
  }

  const io::Checkpoint& ckpt_;
  const io::QuantConfig& q_;
  ThreadPool& pool_;
};

std::string shard_name(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, n);
  return buf;
}

// The safetensors header of one shard (tensors in `list`, offsets already assigned).
std::string shard_header(const std::vector<const OutTensor*>& list) {
  ojson h = ojson::object();
  h["__metadata__"] = {{"format", "pt"}};
  for (const OutTensor* t : list) {
    ojson e;
    e["dtype"] = std::string(dtype_name(t->dtype));
    ojson shape = ojson::array();
    for (int d = 0; d < t->shape.rank(); ++d) shape.push_back(t->shape[d]);
    e["shape"] = shape;
    e["data_offsets"] = {t->begin, t->begin + t->bytes};
    h[t->name] = e;
  }
  std::string text = h.dump();
  while ((text.size() + 8) % 8 != 0) text.push_back(' ');
  return text;
}

}  // namespace

std::vector<std::string> default_exclusions(const ModelConfig& cfg, io::QuantFormat format) {
  std::vector<std::string> ex;
  const int mtp_end = cfg.num_hidden_layers + cfg.num_nextn_predict_layers;
  if (format == io::QuantFormat::kNvfp4) {
    ex.push_back("lm_head");
    for (int l = 0; l < cfg.num_hidden_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      ex.push_back(p + "self_attn*");
      if (cfg.is_moe_layer(l)) ex.push_back(p + "mlp.gate");
    }
  }
  for (int l = cfg.num_hidden_layers; l < mtp_end; ++l)
    ex.push_back("model.layers." + std::to_string(l) + "*");
  return ex;
}

Result<QuantizeReport> quantize_checkpoint(const fs::path& in, const fs::path& out,
                                           const QuantizeOptions& options) {
  if (options.format == io::QuantFormat::kNone)
    return invalid_argument("quantize: format must be nvfp4 or fp8-block");
  std::error_code ec;
  if (!fs::is_directory(in, ec))
    return not_found("model path " + in.string() + " is not a directory");
  if (fs::exists(out, ec) && fs::equivalent(in, out, ec))
    return invalid_argument("--out " + out.string() + " is the input directory; choose another");
  MOE_ASSIGN_OR_RETURN(ModelConfig cfg, load_model_config(in));
  if (cfg.quant.format != io::QuantFormat::kNone)
    return invalid_argument(in.string() + " is already quantized (" +
                            std::string(io::quant_format_name(cfg.quant.format)) + ", " +
                            cfg.quant.source + "); quantize needs a BF16/F16/F32 checkpoint");
  MOE_ASSIGN_OR_RETURN(io::Checkpoint ckpt, io::Checkpoint::open(in));
  MOE_RETURN_IF_ERROR(validate_checkpoint(cfg, ckpt));

  // The target config and its manifest: which modules become which tensors.
  ModelConfig qcfg = cfg;
  qcfg.quant.format = options.format;
  qcfg.quant.exclude = default_exclusions(cfg, options.format);
  qcfg.quant.source =
      options.format == io::QuantFormat::kNvfp4 ? "hf_quant_config.json" : "config.json";
  const std::vector<WeightSpec> manifest = weight_manifest(qcfg);
  std::map<std::string, std::vector<const WeightSpec*>> quantized;  // module -> parts
  for (const WeightSpec& w : manifest)
    if (w.format != ops::WeightFormat::kDense) quantized[w.module].push_back(&w);

  // Plan every output tensor in input order (a quantized module's parts stay together).
  std::vector<OutTensor> plan;
  QuantizeReport report;
  for (const auto& [name, e] : ckpt.entries()) {
    report.bytes_in += e.info->end - e.info->begin;
    const std::string module =
        name.size() > 7 && name.ends_with(".weight") ? name.substr(0, name.size() - 7) : "";
    auto it = quantized.find(module);
    if (it == quantized.end()) {
      plan.push_back({name, e.info->dtype, e.info->shape, e.info->end - e.info->begin, name});
      continue;
    }
    ++report.modules_quantized;
    for (const WeightSpec* w : it->second) {
      OutTensor t{w->name, w->dtypes[0], w->shape, 0, "", w};
      t.bytes = static_cast<uint64_t>(w->shape.numel()) * dtype_size(w->dtypes[0]);
      plan.push_back(std::move(t));
    }
  }
  // Shards.
  int shards = 1;
  uint64_t fill = 0;
  for (OutTensor& t : plan) {
    if (fill > 0 && fill + t.bytes > options.max_shard_bytes) {
      ++shards;
      fill = 0;
    }
    t.shard = shards - 1;
    t.begin = fill;
    fill += t.bytes;
  }

  fs::create_directories(out, ec);
  if (ec) return invalid_argument("cannot create directory " + out.string() + ": " + ec.message());
  // Remove stale weights of an earlier run so the directory holds one checkpoint.
  for (const auto& f : fs::directory_iterator(out, ec)) {
    const std::string n = f.path().filename().string();
    if (n.ends_with(".safetensors") || n == "model.safetensors.index.json" ||
        n == "hf_quant_config.json")
      fs::remove(f.path(), ec);
  }

  // Config files.
  for (const auto& f : fs::directory_iterator(in, ec)) {
    const std::string n = f.path().filename().string();
    if (!f.is_regular_file() || n.ends_with(".safetensors") ||
        n == "model.safetensors.index.json" || n == "config.json" || n == "hf_quant_config.json")
      continue;
    fs::copy_file(f.path(), out / n, fs::copy_options::overwrite_existing, ec);
    if (ec) return invalid_argument("cannot copy " + f.path().string() + ": " + ec.message());
  }
  MOE_ASSIGN_OR_RETURN(std::string cfg_text, read_small_file(in / "config.json", 16u << 20));
  if (options.format == io::QuantFormat::kNvfp4) {
    MOE_RETURN_IF_ERROR(write_text(out / "config.json", cfg_text));
    ojson hq;
    hq["producer"] = {{"name", "moengine"}, {"version", "0.1"}};
    hq["quantization"] = {{"quant_algo", "NVFP4"},
                          {"kv_cache_quant_algo", nullptr},
                          {"group_size", 16},
                          {"exclude_modules", qcfg.quant.exclude}};
    MOE_RETURN_IF_ERROR(write_text(out / "hf_quant_config.json", hq.dump(4) + "\n"));
  } else {
    ojson c = ojson::parse(cfg_text);  // parsed strictly above
    ojson qc = {{"activation_scheme", "dynamic"},
                {"fmt", "e4m3"},
                {"quant_method", "fp8"},
                {"weight_block_size", {quant::kFp8BlockDefault, quant::kFp8BlockDefault}}};
    if (!qcfg.quant.exclude.empty()) qc["modules_to_not_convert"] = qcfg.quant.exclude;
    c["quantization_config"] = qc;
    MOE_RETURN_IF_ERROR(write_text(out / "config.json", c.dump(2) + "\n"));
  }

  // Tensors, shard by shard; a quantized module is computed once and its parts written as
  // their turn comes.
  ThreadPool pool(options.threads);
  ModuleQuantizer mq(ckpt, qcfg.quant, pool);
  std::map<std::string, std::vector<std::byte>> pending;
  ojson weight_map = ojson::object();
  int64_t done = 0;
  size_t next = 0;
  for (int s = 0; s < shards; ++s) {
    std::vector<const OutTensor*> list;
    for (size_t i = next; i < plan.size() && plan[i].shard == s; ++i) list.push_back(&plan[i]);
    const std::string file = shards == 1 ? "model.safetensors" : shard_name(s, shards);
    std::ofstream f(out / file, std::ios::binary | std::ios::trunc);
    if (!f) return invalid_argument("cannot write " + (out / file).string());
    const std::string header = shard_header(list);
    const uint64_t hlen = header.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(hlen >> (8 * i));
    f.write(reinterpret_cast<const char*>(len), 8);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const OutTensor* t : list) {
      if (!t->source.empty()) {
        std::span<const std::byte> b =
            ckpt.find(t->source)->file->bytes(*ckpt.find(t->source)->info);
        f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
      } else {
        if (!pending.count(t->name)) {
          MOE_ASSIGN_OR_RETURN(auto parts, mq.run(*t->spec));
          for (auto& [n, bytes] : parts) pending[n] = std::move(bytes);
        }
        const std::vector<std::byte>& b = pending.at(t->name);
        if (b.size() != t->bytes) return internal_error("quantize: size mismatch for " + t->name);
        f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
        pending.erase(t->name);
      }
      weight_map[t->name] = file;
      report.bytes_out += t->bytes;
      ++report.tensors_written;
      if (options.progress) options.progress(++done, static_cast<int64_t>(plan.size()), t->name);
    }
    f.close();
    if (!f) return invalid_argument("cannot write " + (out / file).string() + " (disk full?)");
    next += list.size();
  }
  if (shards > 1) {
    ojson index;
    index["metadata"] = {{"total_size", report.bytes_out}};
    index["weight_map"] = weight_map;
    MOE_RETURN_IF_ERROR(write_text(out / "model.safetensors.index.json", index.dump(2) + "\n"));
  }
  report.shards = shards;
  return report;
}

}  // namespace moe::model
