#include "tests/support/pass_outputs.h"

#include <cstring>
#include <span>

#include "tests/support/capture_hook.h"

namespace ds::test {

PassOutputs run_passes(const Model& m, const Numerics& nx) {
  auto rt = make_cpu_runtime(m, nx, 32);
  CaptureHook hook;
  rt->set_tap_hook(&hook);
  const int V = m.config.vocab_size;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 13; ++i) prompt.push_back((i * 37 + 5) % V);
  PassOutputs o;
  std::vector<double> logits;
  rt->forward(prompt, 0, logits);
  o.logits = logits;
  std::vector<int32_t> chunk;
  for (int i = 0; i < 5; ++i) chunk.push_back((i * 29 + 3) % V);
  rt->forward(chunk, 13, logits);
  o.logits.insert(o.logits.end(), logits.begin(), logits.end());
  for (int s = 0; s < 3; ++s) {
    const int32_t tok = (s * 53 + 11) % V;
    rt->forward(std::span<const int32_t>(&tok, 1), 18 + s, logits);
    o.logits.insert(o.logits.end(), logits.begin(), logits.end());
  }
  o.hidden = std::move(hook.by_site);
  return o;
}

bool same_bits(const PassOutputs& a, const PassOutputs& b) {
  if (a.logits.size() != b.logits.size() || a.hidden.size() != b.hidden.size()) return false;
  if (std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(double)) != 0)
    return false;
  for (const auto& [site, v] : a.hidden) {
    auto it = b.hidden.find(site);
    if (it == b.hidden.end() || it->second.size() != v.size()) return false;
    if (std::memcmp(v.data(), it->second.data(), v.size() * sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace ds::test
