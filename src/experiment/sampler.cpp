// Greedy and seeded temperature / top-k / top-p sampling.
#include "src/experiment/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/error.h"

namespace ds {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

int32_t argmax(std::span<const double> logits, bool highest_id) {
  return greedy_argmax(logits, highest_id);
}

int32_t argmax_lowest_id(std::span<const double> logits) {
  return argmax(logits, false);
}

double sampling_uniform(uint64_t seed, uint64_t stream, uint64_t step) {
  const uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ step);
  return static_cast<double>(h >> 11) * 0x1p-53;
}

void validate(const SamplingParams& p) {
  if (!(p.temperature >= 0) || !std::isfinite(p.temperature)) {
    throw Error(fmt::format("temperature {} is invalid", p.temperature),
                "--temperature takes a finite value >= 0 (0 = greedy)");
  }
  if (!(p.top_p > 0 && p.top_p <= 1)) {
    throw Error(fmt::format("top_p {} is outside (0, 1]", p.top_p), "--top-p takes 0 < p <= 1");
  }
  if (p.top_k < 0) throw Error(fmt::format("top_k {} is negative", p.top_k), "--top-k takes >= 0");
  if (!(p.repetition_penalty > 0)) {
    throw Error(fmt::format("repetition_penalty {} is invalid", p.repetition_penalty),
                "--repetition-penalty takes a value > 0 (1 = off)");
  }
}

int32_t sample_next(std::span<const double> raw, const SamplingParams& params, uint64_t stream,
                    uint64_t step, std::span<const int32_t> history) {
  std::vector<double> penalised;
  std::span<const double> logits = raw;
  if (params.repetition_penalty != 1.0 && !history.empty()) {
    penalised.assign(raw.begin(), raw.end());
    std::vector<bool> seen(raw.size(), false);
    for (int32_t id : history) {
      if (id < 0 || static_cast<size_t>(id) >= raw.size() || seen[id]) continue;
      seen[id] = true;
      double& l = penalised[id];
      l = l > 0 ? l / params.repetition_penalty : l * params.repetition_penalty;
    }
    logits = penalised;
  }
  if (params.temperature == 0.0) return argmax(logits, params.highest_id_ties);
  const size_t V = logits.size();
  std::vector<int32_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  size_t keep = params.top_k > 0 ? std::min<size_t>(params.top_k, V) : V;
  const double max_logit = logits[order[0]];
  std::vector<double> p(keep);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    p[i] = std::exp((logits[order[i]] - max_logit) / params.temperature);
    total += p[i];
  }
  if (params.top_p < 1.0) {
    double mass = 0;
    size_t n = 0;
    while (n < keep) {
      mass += p[n++];
      if (mass >= params.top_p * total) break;
    }
    keep = n;
    total = mass;
  }
  const double target = sampling_uniform(params.seed, stream, step) * total;
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += p[i];
    if (target < cum) return order[i];
  }
  return order[keep - 1];
}

}  // namespace ds
