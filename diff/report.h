// The diff report: everything `driftscope diff` found about two traces, as plain data. The diff
// fills it; the viewer renders it (terminal, JSON) and the gate reads it. Metrics: docs/metrics.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diff/noise_report.h"
#include "diff/noise_sums.h"

namespace ds::diff {

// One entry of a top-5 table: a token, its probability exp(logit - lse) and raw logit.
struct TokenProb {
  int32_t id = 0;
  double prob = 0;
  double logit = 0;
  std::string text;  // decoded token (empty when no tokenizer was available)
};

// The first generated step where the two token sequences differ (Div_Index).
struct FirstFlip {
  int step = 0;          // generated tokens counted from 0
  int64_t position = 0;  // index in tokens (= prompt_len + step)
  int64_t row = 0;       // logits row that chose it (= position - 1)
  int32_t token_a = 0, token_b = 0;
  std::string text_a, text_b;             // decoded flipped tokens
  std::vector<TokenProb> top5_a, top5_b;  // each side's top-5 at `row`
  double margin_a = 0, margin_b = 0;      // top-1 − top-2 probability
  double margin_logit_a = 0, margin_logit_b = 0;
  std::string context;                         // decoded tokens just before the flip
  std::string continuation_a, continuation_b;  // decoded tokens from the flip on
};

// When the prompts differ, where and how (reported before anything else).
struct PromptDiff {
  int64_t first_index = 0;  // first prompt position that differs (or the shorter length)
  std::vector<int32_t> prompt_a, prompt_b;
  std::string text_a, text_b;
};

// Logits comparison over the compared rows (the matching prefix).
struct LogitsStats {
  int64_t positions = 0;  // rows compared
  int topk_a = 0, topk_b = 0;
  double logprob_rmse = 0;      // of A's top-1 token
  int64_t logprob_bounded = 0;  // rows where logp_B(y) is an upper bound (y not in B's top-K)
  double top5_jaccard_mean = 1, top5_jaccard_min = 1;
  int top5_size = 5;  // min(5, K_A, K_B)
  double kl_mean = 0, kl_max = 0;
  int64_t kl_max_position = -1;
  bool kl_exact = false;        // both traces hold full logits
  int64_t top1_mismatch = 0;    // compared rows whose top-1 ids differ
  int64_t choice_rows = 0;      // compared rows that chose a generated token (row >= prompt_len-1)
  int64_t at_risk = 0;          // choice rows with margin_logit_a < 2 * logit_drift
  double margin_logit_min = 0;  // smallest A top-1/top-2 logit margin over choice rows
  int64_t margin_logit_min_position = -1;
  bool identical = true;  // ids, logits and lse bit-identical on every compared row
};

// Per compared row (logits row r = distribution of tokens[r+1]).
struct PositionRow {
  double kl = 0;
  double jaccard = 1;
  double margin_logit_a = 0, margin_logit_b = 0;  // NaN when K < 2
  double margin_prob_a = 0, margin_prob_b = 0;
  double logit_drift = 0;  // max |Δ logprob| over A's top-5 ids known on B
  bool at_risk = false;
  bool top1_differs = false;  // A's and B's top-1 ids differ (teacher forcing: B would flip here)
};

// Drift at one tapped site over the compared positions.
struct SiteDrift {
  std::string site;
  int layer = -1;          // -1 for embed, n_layers for final_norm
  std::string dtype;       // storage of the coarser side: float32, float16, bf16
  double noise_floor = 0;  // relative L2 indistinguishable from storage rounding
  double rel_l2_median = 0, rel_l2_max = 0;
  int64_t rel_l2_max_position = -1;
  double cos_median = 1, cos_min = 1;
  double max_abs_median = 0, max_abs = 0;
  int64_t nan_positions = 0;  // positions with a NaN/Inf on either side (always fails)
  int64_t above_floor = 0;    // positions whose relative L2 exceeds the noise floor
};

struct Onset {
  std::string site;
  int64_t position = 0;
  double rel_l2 = 0;
  double noise_floor = 0;
};

// One row of the layer view: the layer's residual output (L<l>/out, or its last recorded site).
struct LayerDrift {
  int layer = 0;
  std::string site;
  double rel_l2_median = 0;
  std::optional<double> growth;  // median(l) / median(l-1); none for the first or a zero base
  std::vector<float> rel_l2;     // per compared position (the heat map row)
};

enum class Verdict { identical, drift, flip, prompts_differ, empty };

struct SequenceReport {
  int index = 0;
  bool prompt_equal = true;
  std::optional<PromptDiff> prompt_diff;
  int prompt_len_a = 0, prompt_len_b = 0;
  int gen_len_a = 0, gen_len_b = 0;
  int64_t rows_a = 0, rows_b = 0;
  std::string stop_reason_a, stop_reason_b;
  int64_t compared = 0;  // positions compared: rows with identical inputs on both sides
  std::optional<FirstFlip> first_flip;
  bool has_logits = false;
  LogitsStats logits;
  std::vector<PositionRow> positions;  // compared rows (empty without logits)
  std::vector<SiteDrift> drift;        // every common site, forward order
  std::vector<std::string> sites_only_a, sites_only_b;
  std::optional<Onset> onset;
  std::vector<LayerDrift> layers;  // layer view: heat map rows and growth
  bool hidden_identical = true;    // every compared hidden row bit-identical
  Verdict verdict = Verdict::identical;
  std::vector<std::string> notes;  // truncation, length differences, ...
  std::optional<NoiseSums> noise;  // with DiffOptions::noise_sums: what a noise floor measures
};

struct ConfigDifference {
  std::string field;  // dotted path in config_json ("dtype", "trace.topk")
  std::string a, b;   // JSON text of each value; empty when the field is absent on that side
};

struct TraceSide {
  std::string path;
  bool complete = true;
  std::string stop_reason;
  std::string tool_version;
  std::vector<std::string> model_files;  // "name sha256"
  int sequences = 0;
  std::string producer;  // "driftscope 0.1.0" or e.g. "driftscope_trace 0.1.0 (transformers ...)"
  std::string certify;   // run --certify's verdict (trace/certificate.h); "" when none
};

struct Summary {
  int sequences = 0;       // compared
  int diverged = 0;        // with a first flip
  double div_percent = 0;  // 100 * diverged / sequences
  int prompts_differ = 0;
  int drifted = 0;  // compared sequences with any nonzero drift
};

// ---- kernels (the /kernels tables of two CUDA traces; docs/metrics.md §6) -------------

// One launch configuration of a kernel and how many launches used it.
struct KernelLaunch {
  std::array<int32_t, 3> grid{}, block{};
  int64_t launches = 0;
};

// One kernel at one site on one side, summed over the compared passes.
struct KernelUse {
  std::string op;    // the runtime's op label ("o_proj")
  std::string name;  // the kernel name as recorded (demangled, full)
  int64_t launches = 0;
  int64_t duration_ns = 0;
  std::vector<KernelLaunch> configs;  // distinct (grid, block), ascending
};

// The same (op, name) launched on both sides, but with different configurations (or different
// launch counts of a configuration): a split-K change shows as a different grid z.
struct KernelChange {
  KernelUse a, b;  // a.op == b.op, a.name == b.name
};

// The kernels of one site that differ between the traces, next to the drift at that site.
struct SiteKernels {
  std::string site;
  std::optional<double> rel_l2_median;     // largest SiteDrift::rel_l2_median of this site over
                                           // the compared sequences; none when not tapped in both
  std::vector<KernelUse> only_a, only_b;   // (op, name) launched by one side only, launch order
  std::vector<KernelChange> changed;       // in A's launch order
  int64_t launches_a = 0, launches_b = 0;  // every launch at the site
  int64_t duration_ns_a = 0, duration_ns_b = 0;  // total device time at the site
};

// Which traces hold a /kernels table (CUDA + CUPTI runs only); kernels are compared when both do.
enum class KernelTables { neither, only_a, only_b, both };

struct KernelReport {
  KernelTables tables = KernelTables::neither;
  int64_t records_a = 0, records_b = 0;  // rows of each table
  int passes_a = 0, passes_b = 0;        // distinct forward passes in each table
  int passes_compared = 0;               // passes in both tables: the only ones aggregated
  int sites_compared = 0;                // sites with a launch on either side in those passes
  int64_t duration_ns_a = 0, duration_ns_b = 0;  // device time over the compared passes
  std::vector<SiteKernels> sites;  // sites whose kernels differ, in forward order ("logits" last)
};

// "both", "only_a", "only_b", "neither" (the JSON value).
const char* kernel_tables_name(KernelTables t);

// Something the diff could not read and left out (a damaged trace): a whole sequence
// (`what` "sequence"), or one dataset of a compared sequence ("hidden/L3/out", "logits").
struct Skipped {
  int seq = 0;
  std::string what;
  std::string why;  // the reader's error: which trace, which dataset and rows
};

struct Report {
  TraceSide a, b;
  bool model_equal = true;
  bool model_known = true;  // both traces record model file hashes
  std::vector<ConfigDifference> config_diff;
  std::vector<SequenceReport> sequences;  // in index order
  std::vector<int> only_in_a, only_in_b;
  Summary summary;
  KernelReport kernels;
  std::vector<std::string> warnings;
  std::vector<Skipped> skipped;      // each one also has a warning line
  std::optional<NoiseReport> noise;  // diff --floor: B against A's noise floor
};

// "identical", "drift without flip", "flip at step 37", "prompts differ at position 0", ...
std::string verdict_text(const SequenceReport& s);

// Sequences ordered for the summary table: by first-flip step (flips first, earliest first),
// then prompt mismatches, then the rest; ties by index.
std::vector<const SequenceReport*> by_first_flip(const Report& r);

// Checks the report's internal invariants (bloaty's CheckConsistency): Jaccard in [0,1], one
// drift row per common site, flip position = prompt_len + step, counts agree with the summary,
// every listed kernel site has a difference and its counts add up.
// Returns one line per violation; empty when consistent.
std::vector<std::string> check_consistency(const Report& r);

}  // namespace ds::diff
