// The search for a flip's causes (diff/cause_search.h) over oracles whose causes are known: the
// factorial's effects and Shapley values against hand-computed ones, an AND pair found as one
// set, independent causes as two, benign changes blamed for nothing, and the trial counts.
#include <catch2/catch.hpp>
#include <cmath>

#include "diff/cause_search.h"

using Catch::Matchers::WithinAbs;
using namespace ds::diff;

namespace {

bool has(const ChangeSet& s, int i) {
  return std::find(s.begin(), s.end(), i) != s.end();
}

// A trial whose outcome is B's token when `flip(set)`, with a margin that grows by one per change
// in the set (so that every margin is known and distinct).
Oracle oracle(std::function<bool(const ChangeSet&)> flip) {
  return [flip](const ChangeSet& s) {
    TrialOutcome o;
    o.verdict = flip(s) ? TrialVerdict::b_wins : TrialVerdict::a_wins;
    o.margin = (flip(s) ? 1.0 : -1.0) + 0.01 * static_cast<double>(s.size());
    return o;
  };
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace

TEST_CASE("cause search: factorial effects and Shapley values of a two-knob margin", "[explain]") {
  // y = 2·[0] + 1·[1] + 3·[0][1]: main effects 3.5 and 2.5, interaction 3/2 (coded ±1),
  // Shapley 3.5 and 2.5 (the interaction split evenly), adding up to y(N) − y(∅) = 6
  const std::vector<double> y = {0, 2, 1, 6};
  const FactorialEffects e = factorial_effects(2, y);
  REQUIRE(e.complete);
  CHECK(e.margin_a == 0);
  CHECK(e.margin_b == 6);
  CHECK_THAT(e.main[0], WithinAbs(3.5, 1e-12));
  CHECK_THAT(e.main[1], WithinAbs(2.5, 1e-12));
  REQUIRE(e.interactions.size() == 1);
  CHECK(e.interactions[0].changes == ChangeSet{0, 1});
  CHECK_THAT(e.interactions[0].value, WithinAbs(1.5, 1e-12));
  CHECK_THAT(e.shapley[0], WithinAbs(3.5, 1e-12));
  CHECK_THAT(e.shapley[1], WithinAbs(2.5, 1e-12));
  CHECK_THAT(e.share[0] + e.share[1], WithinAbs(1.0, 1e-12));

  // three knobs, one of them inert: its main effect, interactions and Shapley value are 0
  std::vector<double> y3(8);
  for (uint32_t m = 0; m < 8; ++m) y3[m] = 0.7 * (m & 1) - 0.2 * ((m >> 2) & 1);
  const FactorialEffects e3 = factorial_effects(3, y3);
  CHECK_THAT(e3.main[1], WithinAbs(0, 1e-12));
  CHECK_THAT(e3.shapley[0], WithinAbs(0.7, 1e-12));
  CHECK_THAT(e3.shapley[1], WithinAbs(0, 1e-12));
  CHECK_THAT(e3.shapley[2], WithinAbs(-0.2, 1e-12));
  for (const auto& i : e3.interactions) CHECK_THAT(i.value, WithinAbs(0, 1e-12));

  // an unknown margin: no effects, the endpoints kept
  const FactorialEffects partial = factorial_effects(2, {0, NAN, 1, 6});
  CHECK_FALSE(partial.complete);
  CHECK(partial.main.empty());
  CHECK(partial.margin_b == 6);
}

TEST_CASE("cause search: an AND pair is one set, independent causes are two", "[explain]") {
  std::vector<TrialVerdict> both(16), either(16), none(16);
  for (uint32_t m = 0; m < 16; ++m) {
    both[m] = (m & 0b0101) == 0b0101 ? TrialVerdict::b_wins : TrialVerdict::a_wins;
    either[m] = (m & 0b0101) != 0 ? TrialVerdict::b_wins : TrialVerdict::a_wins;
    none[m] = TrialVerdict::a_wins;
  }
  CHECK(minimal_flipping_sets(4, both) == std::vector<ChangeSet>{{0, 2}});
  CHECK(minimal_flipping_sets(4, either) == std::vector<ChangeSet>{{0}, {2}});
  CHECK(minimal_flipping_sets(4, none).empty());
  // an unresolved trial is no flip: {0} refused leaves {0, 1} minimal
  std::vector<TrialVerdict> refused(4, TrialVerdict::a_wins);
  refused[0b01] = TrialVerdict::unresolved;
  refused[0b11] = TrialVerdict::b_wins;
  CHECK(minimal_flipping_sets(2, refused) == std::vector<ChangeSet>{{0, 1}});

  // the same through search_knobs, with its verdicts
  const KnobSearch pair =
      search_knobs(4, oracle([](const ChangeSet& s) { return has(s, 0) && has(s, 2); }));
  CHECK(pair.verdict == "explained");
  CHECK(pair.method == "factorial");
  CHECK(pair.sets == std::vector<ChangeSet>{{0, 2}});
  CHECK(pair.trials == 16);
  const KnobSearch two =
      search_knobs(4, oracle([](const ChangeSet& s) { return has(s, 1) || has(s, 3); }));
  CHECK(two.sets == std::vector<ChangeSet>{{1}, {3}});
}

TEST_CASE("cause search: benign knobs are blamed for nothing", "[explain]") {
  const KnobSearch k = search_knobs(5, oracle([](const ChangeSet&) { return false; }));
  CHECK(k.verdict == "no_cause");
  CHECK(k.why == "A's token still wins under B's knobs");
  CHECK(k.sets.empty());
  CHECK(k.trials == 2);  // the endpoints only
  // A's own replay choosing a third token: unresolved, not a verdict
  const KnobSearch third = search_knobs(3, [](const ChangeSet& s) {
    TrialOutcome o;
    o.verdict = s.empty() ? TrialVerdict::unresolved : TrialVerdict::b_wins;
    o.why = "a third token (7) wins";
    return o;
  });
  CHECK(third.verdict == "unresolved");
  CHECK(third.why.find("a third token (7) wins") != std::string::npos);
}

TEST_CASE("cause search: ddmin over many knobs finds the pair and the disjoint second cause",
          "[explain]") {
  // 10 knobs: {3, 7} together, or 8 alone
  const KnobSearch k = search_knobs(
      10, oracle([](const ChangeSet& s) { return (has(s, 3) && has(s, 7)) || has(s, 8); }));
  REQUIRE(k.verdict == "explained");
  CHECK(k.method == "dd");
  REQUIRE(k.sets.size() == 2);
  CHECK(((k.sets[0] == ChangeSet{8} && k.sets[1] == ChangeSet{3, 7}) ||
         (k.sets[0] == ChangeSet{3, 7} && k.sets[1] == ChangeSet{8})));
  CHECK(k.trials < 1 << 10);
  int per_set = 0;
  for (int t : k.set_trials) per_set += t;
  CHECK(per_set + 2 == k.trials);  // every trial but the endpoints belongs to a set
  // one knob among 40: ddmin needs far fewer trials than the knobs
  const KnobSearch one = search_knobs(40, oracle([](const ChangeSet& s) { return has(s, 29); }));
  CHECK(one.sets == std::vector<ChangeSet>{{29}});
  CHECK(one.trials <= 2 + 2 * ceil_log2(40) + 2);
}

TEST_CASE("cause search: one op among n in ⌈log2 n⌉ + 1 trials, an AND pair of ops as one set",
          "[explain]") {
  for (const int n : {1, 2, 5, 59, 64}) {
    for (int culprit = 0; culprit < n; culprit += std::max(1, n / 7)) {
      INFO("n " << n << " culprit " << culprit);
      std::vector<int> order;
      for (int i = n - 1; i >= 0; --i) order.push_back(i);  // any stable order
      const OpSearch r = search_ops(
          n, oracle([culprit](const ChangeSet& s) { return has(s, culprit); }), {}, order);
      CHECK(r.verdict == "found");
      CHECK(r.set == ChangeSet{culprit});
      CHECK(r.single);
      CHECK(r.trials <= ceil_log2(n) + 1 + (n > 1 ? 1 : 0));  // + the trial of all n
    }
  }
  // the top-ranked op tried first: found in the endpoint and one trial
  const OpSearch top =
      search_ops(59, oracle([](const ChangeSet& s) { return has(s, 17); }), {17}, {});
  CHECK(top.set == ChangeSet{17});
  CHECK(top.trials == 2);
  // two ops needed together
  std::vector<int> order;
  for (int i = 0; i < 59; ++i) order.push_back(i);
  const OpSearch pair = search_ops(
      59, oracle([](const ChangeSet& s) { return has(s, 4) && has(s, 50); }), {2}, order);
  CHECK(pair.verdict == "found");
  CHECK(pair.set == ChangeSet{4, 50});
  CHECK_FALSE(pair.single);
  // B's numerics at every op keep A's token
  const OpSearch none = search_ops(59, oracle([](const ChangeSet&) { return false; }), {}, order);
  CHECK(none.verdict == "none");
  CHECK(none.trials == 1);
}
