// Rotary-embedding cos/sin tables for a model config (rope_theta, optional llama3 scaling).
#pragma once

#include <vector>

#include "src/model/config.h"

namespace ds {

// Inverse frequencies inv_freq[i] = theta^(-2i/head_dim), i < head_dim/2, with llama3 scaling
// applied when configured. Computed in double.
std::vector<double> rope_inv_freq(const ModelConfig& c);

// cos and sin of p * inv_freq[i] for p < n_pos, each (n_pos, head_dim/2), computed in double.
struct RopeTable {
  std::vector<double> cos, sin;
};
RopeTable rope_table(const ModelConfig& c, int n_pos);

}  // namespace ds
