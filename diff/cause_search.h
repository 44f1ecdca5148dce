// The search for the causes of a flip (driftscope explain; docs/metrics.md §13), over plain data:
// n candidate changes (knobs, or ops) that together turn run A into run B, and an oracle that runs
// one trial (A with a set of the changes applied, replayed to the flip row) and says whose token
// wins there. From the outcomes: a full factorial's effects and Shapley shares (small n), its
// minimal flipping sets, Zeller's ddmin (1-minimal sets, disjoint, for larger n), and a bisection
// over ops that expects one cause (⌈log2 n⌉ + 1 trials) and falls back to Go bisect's search for
// a minimal set of several.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ds::diff {

// Whose token a trial's flip row chooses: B's (the flip is reproduced), A's, or neither known
// (a third token, a refused combination, a token outside the recorded top-K): unresolved, never
// a verdict.
enum class TrialVerdict { b_wins, a_wins, unresolved };
const char* trial_verdict_name(TrialVerdict v);  // "b_wins", "a_wins", "unresolved"

struct TrialOutcome {
  TrialVerdict verdict = TrialVerdict::unresolved;
  // logit of B's token − logit of A's token at the flip row, as the trial's own choice rule sees
  // them (> 0: B's token ahead); NaN when unknown
  double margin = 0;
  std::string why;  // unresolved: why
};

// A set of changes: indices 0..n-1, ascending.
using ChangeSet = std::vector<int>;
// Runs the trial of a set (or answers it from what it already knows).
using Oracle = std::function<TrialOutcome(const ChangeSet&)>;

// The set of bit i ↔ change i (n ≤ 31).
ChangeSet set_of_mask(uint32_t mask);
uint32_t mask_of_set(const ChangeSet& s);

// An oracle that asks its inner oracle once per set and counts the sets asked: a search's trials.
class CountingOracle {
 public:
  explicit CountingOracle(Oracle inner) : inner_(std::move(inner)) {}
  TrialOutcome operator()(const ChangeSet& s);
  int trials() const { return static_cast<int>(asked_.size()); }
  // Marks `s` as known without a trial of this search (an endpoint its caller ran).
  void know(const ChangeSet& s, const TrialOutcome& o) { known_[s] = o; }
  // The trials asked, by set.
  const std::map<ChangeSet, TrialOutcome>& asked() const { return asked_; }

 private:
  Oracle inner_;
  std::map<ChangeSet, TrialOutcome> asked_, known_;
};

// The effects of n changes over a full factorial (2^n trials; the margin of set `mask` at
// y[mask]). Coded levels ±1: the effect of a set T of changes is (1/2^(n−1)) Σ_S y(S) Π_{i∈T}
// (+1 if i ∈ S else −1); for one change, the mean margin with it minus the mean without it (its
// main effect); for more, their interaction. Shapley value of change i: Σ over S ⊆ N∖{i} of
// |S|!(n−|S|−1)!/n! · (y(S ∪ {i}) − y(S)); the values add up to y(N) − y(∅), and a change's share
// is its value over that sum.
struct FactorialEffects {
  int n = 0;
  bool complete = false;  // every margin known; otherwise only `margin_a` and `margin_b` are set
  double margin_a = 0, margin_b = 0;  // y(∅), y(N): the margin before and after (NaN: unknown)
  std::vector<double> main;           // per change
  struct Interaction {
    ChangeSet changes;  // two or more
    double value = 0;
  };
  std::vector<Interaction> interactions;  // every set of 2+ changes, largest |value| first
  std::vector<double> shapley, share;     // per change; share NaN when y(N) = y(∅)
};
FactorialEffects factorial_effects(int n, const std::vector<double>& y);

// The minimal sets among the factorial's flipping ones: every set whose trial has b_wins and no
// proper subset of which has (each is 1-minimal: without any one of its changes, no flip). `v`:
// 2^n verdicts by mask. An unresolved subset counts as not flipping.
std::vector<ChangeSet> minimal_flipping_sets(int n, const std::vector<TrialVerdict>& v);

// Zeller's ddmin over changes 0..n-1: a 1-minimal set whose trial flips (b_wins), given that
// all n flip and none does not (the caller's endpoints, which `test` may answer without a trial);
// then, as Go's bisect does, another from the changes left out of every set found while those
// still flip together, up to `max_sets` disjoint sets. An unresolved trial counts as no flip.
struct DdResult {
  std::vector<ChangeSet> sets;
  std::vector<int> trials;  // the trials each set took (the test of what was left included)
};
DdResult dd_minimal_sets(int n, CountingOracle& test, int max_sets = 3);

// A minimal set of ops whose trial flips, among the candidates `order` (all of them flip together,
// none do not: the caller's endpoints): first each of `first` alone (the ops where the local error
// is largest), then a binary search in the order `order` (stable ids) that assumes one op is the
// cause (each step tests one half; ⌈log2 n⌉ trials, and one more to confirm the op alone), and
// when that op alone does not flip, Go bisect's search for a minimal set of several: halves
// tested alone, then each half minimised with the other forced on.
struct BisectResult {
  ChangeSet set;
  bool single = false;  // found by the single-cause search (a first try or the binary search)
};
BisectResult bisect_minimal_set(CountingOracle& test, const std::vector<int>& first,
                                const std::vector<int>& order);

// A flip's knobs (docs/metrics.md §13): the trial of none (A's configuration) must keep A's token
// and the trial of all n (B's) must choose B's, else there is nothing to search: "unresolved"
// (either prefers a third token, or A's replay does not keep A's token) or "no_cause" (A's token
// still wins under B's knobs). Then, with n ≤ factorial_max, the full factorial: every set's trial,
// its effects (the margins' main effects, interactions and Shapley shares) and its minimal flipping
// sets; with more, ddmin's disjoint 1-minimal sets. "explained" when a set is found, else
// "unresolved" (no set flips although all do: only unresolved trials between).
struct KnobSearch {
  std::string verdict;  // explained, no_cause, unresolved
  std::string why;      // of no_cause and unresolved
  std::string method;   // factorial, dd ("" when the endpoints stopped it)
  std::vector<ChangeSet> sets;
  std::vector<int> set_trials;                 // per set (factorial: every set took all 2^n)
  int trials = 0;                              // distinct trials, the endpoints included
  TrialOutcome before, after;                  // the trials of none and of all n
  FactorialEffects effects;                    // factorial only
  std::map<ChangeSet, TrialOutcome> outcomes;  // every trial asked
};
KnobSearch search_knobs(int n, const Oracle& test, int factorial_max = 6);

// A flip's ops, inside its knob set (docs/metrics.md §13): the trial of all n candidate ops at B's
// numerics must flip ("found" then bisect_minimal_set's set; else "none": B's numerics at every
// op keep A's token). The trial of none is A's, known to keep A's token (knob level).
struct OpSearch {
  std::string verdict;  // found, none
  ChangeSet set;
  bool single = false;
  int trials = 0;
  TrialOutcome all;  // the trial of every candidate op
  std::map<ChangeSet, TrialOutcome> outcomes;
};
OpSearch search_ops(int n, const Oracle& test, const std::vector<int>& first,
                    const std::vector<int>& order);

}  // namespace ds::diff
