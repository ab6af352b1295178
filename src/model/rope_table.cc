#include "model/rope_table.h"

#include <algorithm>
#include <cmath>

namespace moe::model {
namespace {

// YaRN: dimension index at which a frequency makes `rotations` turns over the original context.
double correction_dim(double rotations, int dim, double base, double max_pos) {
  return dim * std::log(max_pos / (rotations * 2 * M_PI)) / (2 * std::log(base));
}

double yarn_mscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

}  // namespace

RopeTable make_rope_table(const RopeConfig& rope, int dim) {
  RopeTable t;
  const int half = dim / 2;
  t.inv_freq.resize(half);
  // PyTorch computes base ** (2i / dim) in f32; do the same so the angles agree bit-for-bit.
  std::vector<float> pos_freq(half);
  for (int i = 0; i < half; ++i)
    pos_freq[i] = std::pow(static_cast<float>(rope.theta),
                           static_cast<float>(2 * i) / static_cast<float>(dim));
  if (rope.type == RopeType::kDefault) {
    for (int i = 0; i < half; ++i) t.inv_freq[i] = 1.0f / pos_freq[i];
    return t;
  }
  const double factor = rope.factor;
  const double max_pos = static_cast<double>(rope.original_max_position_embeddings);
  double low = std::floor(correction_dim(rope.beta_fast, dim, rope.theta, max_pos));
  double high = std::ceil(correction_dim(rope.beta_slow, dim, rope.theta, max_pos));
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (int i = 0; i < half; ++i) {
    float ramp = std::clamp(static_cast<float>((i - low) / (high - low)), 0.0f, 1.0f);
    float extrapolation_factor = 1.0f - ramp;
    float extra = 1.0f / pos_freq[i];
    float inter = 1.0f / (static_cast<float>(factor) * pos_freq[i]);
    t.inv_freq[i] = inter * (1.0f - extrapolation_factor) + extra * extrapolation_factor;
  }
  if (rope.attention_factor) {
    t.attention_factor = static_cast<float>(*rope.attention_factor);
  } else if (rope.mscale != 0.0 && rope.mscale_all_dim != 0.0) {
    t.attention_factor = static_cast<float>(yarn_mscale(factor, rope.mscale) /
                                            yarn_mscale(factor, rope.mscale_all_dim));
  } else {
    t.attention_factor = static_cast<float>(yarn_mscale(factor, 1.0));
  }
  return t;
}

}  // namespace moe::model
