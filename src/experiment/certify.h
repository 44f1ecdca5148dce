// `run --certify` (docs/cli.md): the proof, per run, that tapping changed nothing. The runtime is
// wrapped so that every logits row of every forward pass is digested (64-bit FNV-1a of its
// values as float64) and the token chosen after it kept, by sequence and row; the run is
// generated once untapped (no probes, no logits summary: nothing handed to a hook) and once
// tapped into the trace, with the same batch groups and a fresh copy of the same plan, and the
// two are compared (trace/certificate.h). A row that differs is found while the tapped pass
// runs, so the first one's values are kept, and the untapped pass is run again only then, for
// its row's values (the distance in ulps). The CPU and CUDA backends take the same path.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "src/runtime/runtime.h"
#include "trace/certificate.h"

namespace ds {

// The digest of one logits row.
uint64_t logits_digest(std::span<const double> row);

// The largest distance between two logits rows in ulps of float32 (float64 with `fp64`); -1 when
// one side holds a NaN where the other does not.
int64_t logits_ulps(std::span<const double> a, std::span<const double> b, bool fp64);

// A runtime that digests every logits row its forward passes return.
class DigestingRuntime final : public Runtime {
 public:
  explicit DigestingRuntime(Runtime& inner) : inner_(inner) {}

  PassLogits& forward(std::span<const BatchRow> rows) override;
  void set_tap_hook(TapHook* hook) override { inner_.set_tap_hook(hook); }
  void set_kernel_recorder(trace::KernelRecorder* r) override { inner_.set_kernel_recorder(r); }
  void set_shadow_source(ShadowSource* s) override { inner_.set_shadow_source(s); }
  void set_plan(NumericsPlan plan) override;
  int capacity() const override { return inner_.capacity(); }
  int slots() const override { return inner_.slots(); }
  const ModelConfig& config() const override { return inner_.config(); }

  // Rows of KV-cache slot `slot` belong to sequence `seq` from now on.
  void bind_slot(int slot, int seq);
  // The token chosen after row `row` of sequence `seq`.
  void chose(int seq, int row, int32_t token);

  // Compare every row with `reference`'s as it passes, keeping the values of the first that
  // differs (by sequence, then row).
  void compare_with(const DigestingRuntime* reference) { reference_ = reference; }
  // Keep the values of row (seq, row) when it passes.
  void capture(int seq, int row) { capture_at_ = {seq, row}; }

  const std::vector<std::vector<uint64_t>>& digests() const { return digests_; }
  const std::vector<std::vector<int32_t>>& tokens() const { return tokens_; }
  // The first differing row found by compare_with, and its values; or the captured row's.
  const std::optional<std::pair<int, int>>& first_differing() const { return first_; }
  const std::vector<double>& kept_row() const { return kept_; }

 private:
  Runtime& inner_;
  std::vector<int> slot_seq_;
  std::vector<std::vector<uint64_t>> digests_;  // [seq][row]
  std::vector<std::vector<int32_t>> tokens_;    // [seq][row], -1: none chosen
  const DigestingRuntime* reference_ = nullptr;
  std::optional<std::pair<int, int>> capture_at_, first_;
  std::vector<double> kept_;
};

// The certificate of an untapped and a tapped pass over the same prompts (prompt_lens by
// sequence): digests and tokens compared row by row; `ulps` the distance at the first row that
// differs (0 when none does).
trace::Certificate make_certificate(const DigestingRuntime& untapped,
                                    const DigestingRuntime& tapped,
                                    const std::vector<int>& prompt_lens, int64_t ulps);

}  // namespace ds
