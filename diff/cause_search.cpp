// The search for a flip's causes (cause_search.h): factorial effects, Shapley values, ddmin and
// the op bisection, over an oracle.
#include "diff/cause_search.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>

namespace ds::diff {
namespace {

bool flips(const TrialOutcome& o) {
  return o.verdict == TrialVerdict::b_wins;
}

ChangeSet sorted(ChangeSet s) {
  std::sort(s.begin(), s.end());
  return s;
}

ChangeSet joined(const ChangeSet& a, const ChangeSet& b) {
  ChangeSet out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

ChangeSet without(const ChangeSet& a, const ChangeSet& b) {
  ChangeSet out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// `c` cut into `parts` contiguous pieces whose sizes differ by at most one (larger first).
std::vector<ChangeSet> split(const ChangeSet& c, size_t parts) {
  std::vector<ChangeSet> out;
  size_t at = 0;
  for (size_t p = 0; p < parts; ++p) {
    const size_t size = c.size() / parts + (p < c.size() % parts ? 1 : 0);
    out.emplace_back(c.begin() + static_cast<std::ptrdiff_t>(at),
                     c.begin() + static_cast<std::ptrdiff_t>(at + size));
    at += size;
  }
  return out;
}

// Zeller's ddmin: a 1-minimal subset of `c` (whose trial flips) whose trial flips.
ChangeSet ddmin(ChangeSet c, CountingOracle& test) {
  size_t granularity = 2;
  while (c.size() >= 2) {
    const std::vector<ChangeSet> parts = split(c, std::min(granularity, c.size()));
    bool reduced = false;
    for (const ChangeSet& d : parts) {  // a part alone flips: go on inside it
      if (flips(test(d))) {
        c = d;
        granularity = 2;
        reduced = true;
        break;
      }
    }
    if (!reduced && parts.size() > 2) {  // a complement flips: drop that part
      for (const ChangeSet& d : parts) {
        const ChangeSet rest = without(c, d);
        if (flips(test(rest))) {
          c = rest;
          granularity = std::max<size_t>(parts.size() - 1, 2);
          reduced = true;
          break;
        }
      }
    }
    if (!reduced) {
      if (parts.size() >= c.size()) break;  // every single change is needed
      granularity = std::min(c.size(), parts.size() * 2);
    }
  }
  return c;
}

// Go bisect's FindMin: a minimal subset T of `targets` (in that order) such that forced ∪ T
// flips, given that forced ∪ targets flips and forced alone does not.
ChangeSet find_min(const ChangeSet& forced, const std::vector<int>& targets, CountingOracle& test) {
  if (targets.size() <= 1) return sorted(targets);
  const size_t h = (targets.size() + 1) / 2;
  const std::vector<int> left(targets.begin(), targets.begin() + static_cast<std::ptrdiff_t>(h));
  const std::vector<int> right(targets.begin() + static_cast<std::ptrdiff_t>(h), targets.end());
  if (flips(test(joined(forced, sorted(left))))) return find_min(forced, left, test);
  if (flips(test(joined(forced, sorted(right))))) return find_min(forced, right, test);
  const ChangeSet lm = find_min(joined(forced, sorted(right)), left, test);
  const ChangeSet rm = find_min(joined(forced, lm), right, test);
  return joined(lm, rm);
}

double factorial(int k) {
  double f = 1;
  for (int i = 2; i <= k; ++i) f *= i;
  return f;
}

}  // namespace

const char* trial_verdict_name(TrialVerdict v) {
  switch (v) {
    case TrialVerdict::b_wins:
      return "b_wins";
    case TrialVerdict::a_wins:
      return "a_wins";
    default:
      return "unresolved";
  }
}

ChangeSet set_of_mask(uint32_t mask) {
  ChangeSet s;
  for (int i = 0; i < 32; ++i) {
    if ((mask >> i) & 1u) s.push_back(i);
  }
  return s;
}

uint32_t mask_of_set(const ChangeSet& s) {
  uint32_t m = 0;
  for (int i : s) m |= 1u << i;
  return m;
}

TrialOutcome CountingOracle::operator()(const ChangeSet& s) {
  if (const auto k = known_.find(s); k != known_.end()) return k->second;
  if (const auto a = asked_.find(s); a != asked_.end()) return a->second;
  TrialOutcome o = inner_(s);  // may throw (a trial not run yet): nothing is recorded then
  asked_.emplace(s, o);
  return o;
}

FactorialEffects factorial_effects(int n, const std::vector<double>& y) {
  FactorialEffects e;
  e.n = n;
  const uint32_t all = (1u << n) - 1;
  e.margin_a = y.at(0);
  e.margin_b = y.at(all);
  e.complete = std::all_of(y.begin(), y.end(), [](double v) { return std::isfinite(v); });
  if (!e.complete) return e;
  e.main.assign(n, 0);
  for (uint32_t t = 1; t <= all; ++t) {
    double value = 0;
    for (uint32_t s = 0; s <= all; ++s) {
      value += (std::popcount(t & ~s) % 2 == 0 ? 1.0 : -1.0) * y[s];  // Π ±1 = (−1)^{|T∖S|}
    }
    value /= static_cast<double>(1u << (n - 1));
    if (std::popcount(t) == 1) {
      e.main[std::countr_zero(t)] = value;
    } else {
      e.interactions.push_back({set_of_mask(t), value});
    }
  }
  std::stable_sort(e.interactions.begin(), e.interactions.end(), [](const auto& x, const auto& z) {
    return std::fabs(x.value) > std::fabs(z.value);
  });
  const double change = e.margin_b - e.margin_a;
  for (int i = 0; i < n; ++i) {
    double phi = 0;
    for (uint32_t s = 0; s <= all; ++s) {
      if ((s >> i) & 1u) continue;
      const int k = std::popcount(s);
      phi += factorial(k) * factorial(n - k - 1) / factorial(n) * (y[s | (1u << i)] - y[s]);
    }
    e.shapley.push_back(phi);
    e.share.push_back(change != 0 ? phi / change : NAN);
  }
  return e;
}

std::vector<ChangeSet> minimal_flipping_sets(int n, const std::vector<TrialVerdict>& v) {
  const uint32_t all = (1u << n) - 1;
  std::vector<uint32_t> masks;
  for (uint32_t m = 0; m <= all; ++m) {
    if (v.at(m) == TrialVerdict::b_wins) masks.push_back(m);
  }
  std::stable_sort(masks.begin(), masks.end(),
                   [](uint32_t x, uint32_t z) { return std::popcount(x) < std::popcount(z); });
  std::vector<ChangeSet> out;
  std::vector<uint32_t> kept;
  for (uint32_t m : masks) {
    // a flipping proper subset is a smaller flipping set, kept before it (fewer changes first)
    const bool holds_one =
        std::any_of(kept.begin(), kept.end(), [m](uint32_t k) { return (k & m) == k && k != m; });
    if (holds_one) continue;
    kept.push_back(m);
    out.push_back(set_of_mask(m));
  }
  return out;
}

DdResult dd_minimal_sets(int n, CountingOracle& test, int max_sets) {
  DdResult r;
  ChangeSet left;
  for (int i = 0; i < n; ++i) left.push_back(i);
  while (!left.empty() && static_cast<int>(r.sets.size()) < max_sets) {
    const int before = test.trials();
    if (!r.sets.empty() && !flips(test(left))) {  // what is left does not flip on its own
      r.trials.back() += test.trials() - before;
      break;
    }
    const ChangeSet found = ddmin(left, test);
    r.sets.push_back(found);
    r.trials.push_back(test.trials() - before);
    left = without(left, found);
  }
  return r;
}

BisectResult bisect_minimal_set(CountingOracle& test, const std::vector<int>& first,
                                const std::vector<int>& order) {
  for (int f : first) {
    if (flips(test({f}))) return {{f}, true};
  }
  // one op assumed to be the cause: halve the candidates, keeping the half that flips alone
  std::vector<int> in = order;
  while (in.size() > 1) {
    const size_t h = (in.size() + 1) / 2;
    std::vector<int> half(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(h));
    if (flips(test(sorted(half)))) {
      in = std::move(half);
    } else {
      in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(h));
    }
  }
  if (!in.empty() && flips(test({in.front()}))) return {{in.front()}, true};
  return {find_min({}, order, test), false};
}

KnobSearch search_knobs(int n, const Oracle& test, int factorial_max) {
  KnobSearch k;
  CountingOracle ask(test);
  ChangeSet all;
  for (int i = 0; i < n; ++i) all.push_back(i);
  k.before = ask({});
  k.after = ask(all);
  auto done = [&](const char* verdict, std::string why) {
    k.verdict = verdict;
    k.why = std::move(why);
    k.trials = ask.trials();
    k.outcomes = ask.asked();
    return k;
  };
  if (k.before.verdict != TrialVerdict::a_wins) {
    return done("unresolved", k.before.verdict == TrialVerdict::b_wins
                                  ? "A's configuration replayed chooses B's token"
                                  : "A's configuration replayed: " + k.before.why);
  }
  if (k.after.verdict == TrialVerdict::a_wins) {
    return done("no_cause", "A's token still wins under B's knobs");
  }
  if (k.after.verdict == TrialVerdict::unresolved) {
    return done("unresolved", "B's configuration replayed: " + k.after.why);
  }
  if (n <= factorial_max) {
    k.method = "factorial";
    const uint32_t masks = 1u << n;
    std::vector<double> y(masks);
    std::vector<TrialVerdict> v(masks);
    for (uint32_t m = 0; m < masks; ++m) {
      const TrialOutcome o = ask(set_of_mask(m));
      v[m] = o.verdict;
      y[m] = o.margin;
    }
    k.effects = factorial_effects(n, y);
    k.sets = minimal_flipping_sets(n, v);
    k.set_trials.assign(k.sets.size(), static_cast<int>(masks));
  } else {
    k.method = "dd";  // the endpoints, asked above, are answered from memory
    const DdResult d = dd_minimal_sets(n, ask);
    k.sets = d.sets;
    k.set_trials = d.trials;
  }
  if (k.sets.empty()) return done("unresolved", "no set of knobs resolves to B's token");
  return done("explained", "");
}

OpSearch search_ops(int n, const Oracle& test, const std::vector<int>& first,
                    const std::vector<int>& order) {
  OpSearch r;
  CountingOracle ask(test);
  ChangeSet all;
  for (int i = 0; i < n; ++i) all.push_back(i);
  TrialOutcome a;
  a.verdict = TrialVerdict::a_wins;
  ask.know({}, a);
  r.all = ask(all);
  if (r.all.verdict == TrialVerdict::b_wins) {
    const BisectResult b = bisect_minimal_set(ask, first, order);
    r.verdict = "found";
    r.set = b.set;
    r.single = b.single;
  } else {
    r.verdict = "none";
  }
  r.trials = ask.trials();
  r.outcomes = ask.asked();
  return r;
}

}  // namespace ds::diff
