// Rotary-embedding tables, following Hugging Face's rope initialisation ("default" and "llama3").
#include "src/runtime/rope_table.h"

#include <cmath>
#include <numbers>

namespace ds {

std::vector<double> rope_inv_freq(const ModelConfig& c) {
  const int half = c.head_dim / 2;
  std::vector<double> inv(half);
  for (int i = 0; i < half; ++i) {
    inv[i] = 1.0 / std::pow(c.rope_theta, (2.0 * i) / c.head_dim);
  }
  if (c.rope_scaling && c.rope_scaling->type == "llama3") {
    const RopeScaling& s = *c.rope_scaling;
    const double low_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
    const double high_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen < high_wavelen) continue;  // high frequencies: unchanged
      if (wavelen > low_wavelen) {           // low frequencies: slowed by factor
        f /= s.factor;
        continue;
      }
      const double smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      f = (1.0 - smooth) * f / s.factor + smooth * f;
    }
  }
  return inv;
}

RopeTable rope_table(const ModelConfig& c, int n_pos) {
  const std::vector<double> inv = rope_inv_freq(c);
  const size_t half = inv.size();
  RopeTable t;
  t.cos.resize(static_cast<size_t>(n_pos) * half);
  t.sin.resize(static_cast<size_t>(n_pos) * half);
  for (int p = 0; p < n_pos; ++p) {
    for (size_t i = 0; i < half; ++i) {
      const double a = p * inv[i];
      t.cos[p * half + i] = std::cos(a);
      t.sin[p * half + i] = std::sin(a);
    }
  }
  return t;
}

}  // namespace ds
