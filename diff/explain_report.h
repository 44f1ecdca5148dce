// The explain report (driftscope explain, zoom --explain; docs/metrics.md §13): per flipped
// sequence, which knobs and which ops cause its flip, with the trials that found them; across the
// flips, the causes with their counts and the knobs' effects on the margin. Plain data: the
// workflow (src/workflow/explain*) fills it, viewer/explain_* render it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diff/cause_search.h"
#include "diff/flip_aggregate.h"

namespace ds::diff {

// A candidate: a run-configuration field (or a recorder's option) whose value differs.
struct ExplainKnob {
  std::string name;  // "dtype", "batch", ...; a recorder's flag ("--attn-implementation")
  std::string a, b;  // its value in A and in B
};

// One trial of a flip: A with `set` at B's values (knob names, or op names), and its outcome.
struct ExplainTrial {
  std::vector<std::string> set;
  TrialOutcome outcome;
};

// The op level of a flip (inside its first minimal knob set).
struct OpCause {
  std::string status;              // found, none (B's numerics at every op keep A's token), skipped
  std::string why;                 // of none and skipped, one line
  std::vector<std::string> knobs;  // the knob set whose ops were searched
  int candidates = 0;              // ops whose decisions differ between the two sides
  std::vector<std::string> ops;    // found: the minimal set, forward order
  std::vector<std::string> what;   // per op of the set: what B's side changes there
  bool single = false;             // found by the single-cause search
  int trials = 0;                  // the op trials (the trial of every candidate op included)
  double margin_all = 0;           // the margin with every candidate op at B's numerics
  // B's plan replayed alone at A's batch against the knob set's own batched replay, bit for bit
  // over the sequence's logits rows (top-K ids, logits, lse): "yes", "no", or "" (not compared:
  // the weights differ, or the op level did not run)
  std::string plan_bits;
  std::vector<ExplainTrial> trials_run;
};

struct FlipExplanation {
  int seq = 0;
  int step = 0;     // generated tokens before the flip
  int64_t row = 0;  // the logits row that chose otherwise
  int32_t token_a = 0, token_b = 0;
  std::string text_a, text_b;  // decoded, when the tokenizer was found
  std::string verdict;         // explained, no_cause, unresolved (cause_search.h KnobSearch)
  std::string why;
  std::string method;        // factorial, dd
  double margin_before = 0;  // logit(B's token) − logit(A's) under A's knobs
  double margin_after = 0;   // ... under B's knobs
  std::vector<std::vector<std::string>> knob_sets;  // the minimal sets, knobs in report order
  std::vector<int> knob_set_trials;                 // the trials each took
  int knob_trials = 0;                              // the knob trials of this flip
  std::vector<ExplainTrial> trials;                 // every knob trial, by set
  // factorial: per knob of the report (NaN when unknown), and interactions by |value|
  std::vector<double> main_effect, shapley, share;
  std::vector<std::pair<std::vector<std::string>, double>> interactions;
  OpCause ops;
  // where the cause is: the first op of the op set, else the attribution's born-in block, else
  // the diff's onset (the raw onset kept beside it)
  std::string place;
  std::string onset;  // "embed @0"; "" without one
  std::string born_in;
};

// A cause across the flips: a minimal knob set and the flips it explains (a flip with two sets
// counts under each), with the first ops of their op sets.
struct CauseCount {
  std::vector<std::string> knobs;
  std::vector<int> seqs;
  struct OpCount {
    std::string op;
    int flips = 0;
  };
  std::vector<OpCount> ops;  // most flips first
};

// A knob across the flips: in how many minimal sets, and its factorial numbers' means.
struct KnobEffect {
  std::string knob;
  int in_sets = 0;
  int measured = 0;                      // flips with a complete factorial
  double main_mean = 0, share_mean = 0;  // over those (NaN when none)
};

struct ExplainReport {
  std::string a_path, b_path;
  std::string engine;  // "driftscope", or the recorder's engine ("transformers", "llama.cpp")
  std::vector<ExplainKnob> knobs;
  std::vector<std::string> left_out;  // fields that differ but are no knobs, each with why
  std::string op_level;               // "" when ops were searched; else the one line why not
  std::vector<FlipExplanation> flips;
  int factorial_max = 6;
  // across the flips (explain_aggregate)
  int explained = 0, no_cause = 0, unresolved = 0;
  std::vector<CauseCount> causes;   // most flips first
  std::vector<KnobEffect> effects;  // in knob order
  // every set of 2+ knobs with its interaction's mean over the flips with a complete factorial,
  // largest |mean| first
  std::vector<std::pair<std::vector<std::string>, double>> interactions;
  int knob_runs = 0;  // knob trials run (each replays every flip's sequence at once)
  int op_runs = 0;    // op trials run (one sequence each)
  double wall_s = 0;  // of the trials
  std::string summary;
  std::vector<std::string> notes;
};

// Fills the aggregate fields of `r` from its flips.
void explain_aggregate(ExplainReport& r);

// What a flips report's onset column shows for a zoomed sequence: with an explanation of its flip,
// where the cause is (FlipExplanation::place: the first op of its op set, else the attribution's
// born-in block); otherwise the diff's onset site ("–" without one).
std::string onset_column(const FlipCase& c, const ExplainReport* explained);

// "{dtype}", "{batch, gemm_policy}".
std::string knob_set_text(const std::vector<std::string>& knobs);

}  // namespace ds::diff
