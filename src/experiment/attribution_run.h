// The run behind `driftscope attribute`: configuration B teacher-forced on reference trace A's
// tokens, with every layer shadowed on A's recorded inputs (src/runtime/shadow.h). Each tapped
// tensor, of B's own run or of a shadow, is handed to a sink beside A's rows at the same
// positions; what is made of them is diff/attribution.h's business.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/experiment/prompts.h"
#include "src/experiment/run_config.h"
#include "src/model/model.h"
#include "src/runtime/shadow.h"
#include "trace/reader.h"

namespace ds {

// Every sequence of a trace as a prompt whose continuation is forced to the trace's tokens.
// Throws ds::Error for a trace with no sequence or a gap in the sequence indices.
std::vector<Prompt> forced_prompts(const trace::TraceReader& r);

// The sites of A an attribution needs: embed, every L<l>/out, final_norm (and logits).
std::vector<std::string> attribution_needed_sites(int n_layers);

// One tapped tensor's rows of one sequence: B's values at `site` (of B's own run when `shadow`
// is empty, else of that shadow), at positions first_pos .. first_pos + rows - 1, beside A's
// recorded rows of the same site and positions (`a`; null for logits, whose reference is A's
// top-K: read it from the trace).
struct PairedRows {
  int seq = 0;
  std::string site;                  // "L3/out", "final_norm", "logits", ...
  std::optional<ShadowKind> shadow;  // none: B's own (full) run
  int first_pos = 0, rows = 0, width = 0;
  const float* b = nullptr;  // (rows, width)
  const float* a = nullptr;  // (rows, width), or null for logits
};
using PairSink = std::function<void(const PairedRows&)>;

// Throws ds::Error with a hint unless the configuration runs on the CPU (the CUDA backend defers
// its taps to the end of a pass, too late for a shadow layer).
void check_attribution_device(const RunConfig& c);

struct AttributionRunOptions {
  RunConfig config;        // configuration B (device cpu)
  bool split_mlp = false;  // also shadow each MLP on A's L<l>/resid_mid (A must hold it)
  std::function<void(int seq, int n_seqs)> progress;  // after each sequence
};

// Runs B on A's tokens with the shadows and hands every tap to `sink`. Throws ds::Error with a
// hint when A lacks a needed site, stores hidden states other than float32, or B asks for the
// CUDA device; and for everything run_traced refuses.
void run_attribution(const Model& model, const trace::TraceReader& a,
                     const AttributionRunOptions& opt, const PairSink& sink);

}  // namespace ds
