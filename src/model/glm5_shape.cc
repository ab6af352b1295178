#include "model/glm5_shape.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "io/quant_config.h"
#include "model/model_config.h"
#include "model/weight_manifest.h"

namespace moe::model {
namespace {

using ojson = nlohmann::ordered_json;

// xorshift64*: fast deterministic bits for ~20 GB of random weights.
struct Bits {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
};

bool is_norm(WeightRole r) {
  return r == WeightRole::kAttnNorm || r == WeightRole::kFfnNorm || r == WeightRole::kFinalNorm ||
         r == WeightRole::kQaNorm || r == WeightRole::kKvaNorm || r == WeightRole::kIdxKNormWeight;
}

// BF16 matrices: magnitudes in [2^e, 2^(e+1)) with random sign and mantissa, rms ~ 1.5 * 2^e,
// e = floor(log2(stdev / 1.5)).
// Fills elements [i0, i1) of one tensor. Matrices: rms ~ 1/sqrt(K) (NVFP4: E2M1 codes with rms
// 2.93 times block scales in [0.5, 2) times weight_scale_2 = 1 / (2.93 * 1.25 * sqrt(K)));
// embeddings ~1; norms 1; biases 0; input_scale 1.
void fill(const WeightSpec& s, DType dt, Bits& b, std::byte* out, int64_t i0, int64_t i1) {
  const int64_t K = s.logical_shape.rank() == 2 ? s.logical_shape[1]
                    : s.shape.rank() > 0        ? s.shape[-1]
                                                : 1;
  if (dt == DType::kBF16) {
    uint16_t* p = reinterpret_cast<uint16_t*>(out);
    if (is_norm(s.role) || s.role == WeightRole::kIdxKNormBias) {
      std::fill(p + i0, p + i1, uint16_t{is_norm(s.role) ? uint16_t{0x3F80} : uint16_t{0}});
      return;
    }
    const double stdev = s.role == WeightRole::kEmbed ? 1.0 : 1.0 / std::sqrt(double(K));
    const int e = static_cast<int>(std::floor(std::log2(stdev / 1.5)));
    const uint16_t exp_bits = static_cast<uint16_t>((127 + e) << 7);
    for (int64_t i = i0; i < i1; i += 4) {  // 16 random bits per value: sign + 7 mantissa
      uint64_t r = b.next();
      for (int64_t j = i; j < std::min(i1, i + 4); ++j, r >>= 16)
        p[j] = static_cast<uint16_t>(((r & 1) << 15) | exp_bits | ((r >> 1) & 0x7F));
    }
    return;
  }
  if (dt == DType::kF32) {
    float* p = reinterpret_cast<float*>(out);
    float v = 0.f;
    if (s.part == TensorPart::kWeightScale2)
      v = static_cast<float>(1.0 / (2.93 * 1.25 * std::sqrt(double(K))));
    if (s.part == TensorPart::kInputScale || is_norm(s.role)) v = 1.f;
    std::fill(p + i0, p + i1, v);
    return;
  }
  uint8_t* p = reinterpret_cast<uint8_t*>(out);
  const bool scale = dt == DType::kF8E4M3;  // NVFP4 block scales: codes 0x30..0x3F = 0.5..1.875
  for (int64_t i = i0; i < i1; i += 8) {    // U8: packed E2M1 pairs, every nibble a valid code
    uint64_t r = b.next();
    for (int64_t j = i; j < std::min(i1, i + 8); ++j, r >>= 8)
      p[j] = scale ? static_cast<uint8_t>(0x30 | (r & 0xF)) : static_cast<uint8_t>(r);
  }
}

// All of one tensor, in chunks over the machine's threads (each chunk its own random stream).
void fill_parallel(const WeightSpec& s, uint64_t seed, std::byte* out) {
  const DType dt = s.dtypes.front();
  const int64_t n = s.shape.numel(), chunk = int64_t{1} << 22;
  const int64_t chunks = (n + chunk - 1) / chunk;
  const int threads = static_cast<int>(
      std::min<int64_t>(chunks, std::max(1u, std::min(16u, std::thread::hardware_concurrency()))));
  auto work = [&](int t) {
    for (int64_t c = t; c < chunks; c += threads) {
      Bits b{(seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(c + 1))) | 1};
      fill(s, dt, b, out, c * chunk, std::min(n, (c + 1) * chunk));
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
}

Status write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.close();
  if (!f) return invalid_argument("cannot write " + path.string());
  return Status();
}

struct Shard {
  std::vector<size_t> specs;
  uint64_t bytes = 0;
};

uint64_t spec_bytes(const WeightSpec& s) {
  return static_cast<uint64_t>(s.shape.numel()) * dtype_size(s.dtypes.front());
}

// Streams one safetensors file: header (8-byte length, JSON padded with spaces to 8 bytes),
// then each tensor's random bytes.
Status write_shard(const std::filesystem::path& path, const std::vector<WeightSpec>& specs,
                   const Shard& shard, uint64_t seed) {
  ojson h;
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t off = 0;
  for (size_t i : shard.specs) {
    const WeightSpec& s = specs[i];
    ojson shape = ojson::array();
    for (int d = 0; d < s.shape.rank(); ++d) shape.push_back(s.shape[d]);
    h[s.name] = {{"dtype", std::string(dtype_name(s.dtypes.front()))},
                 {"shape", shape},
                 {"data_offsets", {off, off + spec_bytes(s)}}};
    off += spec_bytes(s);
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');
  std::ofstream f(path, std::ios::binary);
  if (!f) return invalid_argument("cannot create " + path.string());
  const uint64_t len = header.size();
  f.write(reinterpret_cast<const char*>(&len), 8);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  std::vector<std::byte> buf;
  for (size_t i : shard.specs) {
    const WeightSpec& s = specs[i];
    buf.resize(spec_bytes(s));
    fill_parallel(s, seed + i * 0xD1B54A32D192ED03ull, buf.data());
    f.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
  }
  f.close();
  if (!f) return invalid_argument("cannot write " + path.string() + " (disk full?)");
  return Status();
}

}  // namespace

std::string glm5_shape_config_json(const Glm5ShapeOptions& o) {
  const int64_t d = std::max<int64_t>(o.shrink, 1);
  ojson j;
  j["architectures"] = {"GlmMoeDsaForCausalLM"};
  j["model_type"] = "glm_moe_dsa";
  j["hidden_size"] = 6144 / d;
  j["num_hidden_layers"] = o.layers;
  j["first_k_dense_replace"] = 1;
  j["moe_layer_freq"] = 1;
  j["intermediate_size"] = 12288 / d;
  j["moe_intermediate_size"] = 2048 / d;
  j["n_routed_experts"] = 256 / d;
  j["n_shared_experts"] = 1;
  j["num_experts_per_tok"] = std::min<int64_t>(8, 256 / d);
  j["n_group"] = 1;
  j["topk_group"] = 1;
  j["topk_method"] = "noaux_tc";
  j["scoring_func"] = "sigmoid";
  j["norm_topk_prob"] = true;
  j["routed_scaling_factor"] = 2.5;
  j["num_attention_heads"] = 64 / d;
  j["num_key_value_heads"] = 64 / d;
  j["q_lora_rank"] = 2048 / d;
  j["kv_lora_rank"] = 512 / d;
  j["qk_nope_head_dim"] = 192 / d;
  j["qk_rope_head_dim"] = 64 / d;
  j["v_head_dim"] = 256 / d;
  j["index_n_heads"] = 32 / d;
  j["index_head_dim"] = 128 / d;
  j["index_topk"] = 2048 / d;
  j["indexer_rope_interleave"] = true;
  j["rope_interleave"] = true;
  j["rope_parameters"] = {{"rope_theta", 1000000.0}, {"rope_type", "default"}};
  j["max_position_embeddings"] = 202752;
  j["rms_norm_eps"] = 1e-5;
  j["hidden_act"] = "silu";
  j["vocab_size"] = 154880 / d;
  j["eos_token_id"] = {154880 / d - 60, 154880 / d - 53};
  j["bos_token_id"] = 0;
  j["pad_token_id"] = 154880 / d - 60;
  j["num_nextn_predict_layers"] = 0;
  j["tie_word_embeddings"] = false;
  j["torch_dtype"] = "bfloat16";
  return j.dump(2) + "\n";
}

std::string glm5_shape_quant_config_json() {
  ojson j;
  j["producer"] = {{"name", "modelopt"}, {"version", "0.37.0"}};
  j["quantization"] = {{"quant_algo", "NVFP4"},
                       {"kv_cache_quant_algo", nullptr},
                       {"group_size", 16},
                       {"exclude_modules", {"lm_head", "model.layers.*.self_attn*"}}};
  return j.dump(4) + "\n";
}

Status write_glm5_shape_model(const std::filesystem::path& dir, const Glm5ShapeOptions& o) {
  if (o.layers < 1 || o.layers > 78)
    return invalid_argument("--layers must be in [1, 78] (GLM-5 has 78), got " +
                            std::to_string(o.layers));
  const std::string config = glm5_shape_config_json(o);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return invalid_argument("cannot create directory " + dir.string() + ": " + ec.message());
  MOE_RETURN_IF_ERROR(write_text(dir / "config.json", config));
  std::filesystem::remove(dir / "hf_quant_config.json", ec);
  if (o.nvfp4)
    MOE_RETURN_IF_ERROR(write_text(dir / "hf_quant_config.json", glm5_shape_quant_config_json()));
  MOE_ASSIGN_OR_RETURN(ModelConfig cfg, load_model_config(dir));
  const std::vector<WeightSpec> specs = weight_manifest(cfg);

  std::vector<Shard> shards(1);
  uint64_t total = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const uint64_t b = spec_bytes(specs[i]);
    if (!shards.back().specs.empty() && shards.back().bytes + b > o.max_shard_bytes)
      shards.emplace_back();
    shards.back().specs.push_back(i);
    shards.back().bytes += b;
    total += b;
  }
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors" ||
        e.path().filename() == "model.safetensors.index.json")
      std::filesystem::remove(e.path(), ec);
  const uint64_t seed = o.seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  const int n = static_cast<int>(shards.size());
  ojson weight_map = ojson::object();
  uint64_t done = 0;
  for (int k = 0; k < n; ++k) {
    char name[64];
    if (n == 1)
      std::snprintf(name, sizeof name, "model.safetensors");
    else
      std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", k + 1, n);
    MOE_RETURN_IF_ERROR(write_shard(dir / name, specs, shards[k], seed));
    for (size_t i : shards[k].specs) weight_map[specs[i].name] = name;
    done += shards[k].bytes;
    if (o.progress) o.progress(done, total);
  }
  if (n > 1) {
    ojson index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = weight_map;
    MOE_RETURN_IF_ERROR(write_text(dir / "model.safetensors.index.json", index.dump(2) + "\n"));
  }
  return Status();
}

}  // namespace moe::model
