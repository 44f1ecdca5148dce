// The regression gate over a diff report.
#include "diff/gate.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "common/error.h"

namespace ds::diff {
namespace {

const char* kGateHint =
    "--fail-on takes flip, drift=<relative L2>, kl=<nats> or beyond-noise, e.g. --fail-on "
    "drift=1e-3";

// The first reason, common to every condition, to fail: prompts differ, nothing compared, NaN.
std::string universal_failure(const Report& r) {
  if (!r.skipped.empty()) {  // what could not be read cannot be vouched for
    const auto& k = r.skipped.front();
    return fmt::format(
        "seq {}: {} skipped (damaged trace{})", k.seq, k.what,
        r.skipped.size() > 1 ? fmt::format(", {} parts skipped", r.skipped.size()) : std::string());
  }
  if (r.sequences.empty()) return "nothing compared: no sequence";
  for (const auto& s : r.sequences) {
    if (!s.prompt_equal) {
      return fmt::format("seq {} prompts differ at position {}", s.index,
                         s.prompt_diff ? s.prompt_diff->first_index : 0);
    }
  }
  int64_t compared = 0;
  for (const auto& s : r.sequences) compared += s.compared;
  if (compared == 0) {  // a condition over no position would pass without having looked
    return fmt::format("nothing compared: 0 positions in {} sequence{}", r.sequences.size(),
                       r.sequences.size() == 1 ? "" : "s");
  }
  for (const auto& s : r.sequences) {
    for (const auto& d : s.drift) {
      if (d.nan_positions > 0) {
        return fmt::format("seq {} has NaN/Inf at {} ({} positions)", s.index, d.site,
                           d.nan_positions);
      }
    }
    if (s.has_logits && (std::isnan(s.logits.kl_max) || std::isnan(s.logits.logprob_rmse))) {
      return fmt::format("seq {} has NaN/Inf in the logits", s.index);
    }
  }
  return {};
}

std::string fmt_num(double x) {
  return fmt::format("{:.3g}", x);
}

// Whether one condition holds (the gate fails), and the evidence, for the verdict line.
struct Outcome {
  bool holds = false;
  std::string why;
};

// flip: the first sequence, in flip order, whose generated tokens differ.
Outcome flip_outcome(const Report& r) {
  const SequenceReport* first = nullptr;
  for (const auto* s : by_first_flip(r)) {
    if (s->first_flip) {
      first = s;
      break;
    }
  }
  Outcome o;
  o.holds = first != nullptr;
  o.why = o.holds
              ? fmt::format("seq {} flips at step {} (token {} vs {}); {} of {} sequences diverged",
                            first->index, first->first_flip->step, first->first_flip->token_a,
                            first->first_flip->token_b, r.summary.diverged, r.summary.sequences)
              : fmt::format("no flip in {} sequence{}", r.summary.sequences,
                            r.summary.sequences == 1 ? "" : "s");
  return o;
}

// A measured condition: it holds when `worst` exceeds the threshold; `evidence` says where.
Outcome above_threshold(double worst, const GateCondition& c, const std::string& evidence) {
  const bool holds = worst > c.threshold;
  return {holds, fmt::format("{} ({} {})", evidence, holds ? ">" : "<=", fmt_num(c.threshold))};
}

// drift=x: the largest relative L2 of any site of any sequence, against x.
Outcome drift_outcome(const Report& r, const GateCondition& c) {
  double worst = -1;
  const SequenceReport* ws = nullptr;
  const SiteDrift* wd = nullptr;
  for (const auto& s : r.sequences) {
    for (const auto& d : s.drift) {
      if (d.rel_l2_max > worst) {
        worst = d.rel_l2_max;
        ws = &s;
        wd = &d;
      }
    }
  }
  if (!wd) {
    throw Error("--fail-on drift: the traces have no hidden site in common",
                "record hidden states in both runs (driftscope run --probes default|all)");
  }
  return above_threshold(worst, c,
                         fmt::format("max relative L2 {} at {} position {}, seq {}", fmt_num(worst),
                                     wd->site, wd->rel_l2_max_position, ws->index));
}

// kl=x: the largest KL(A||B) of any sequence with logits, against x.
Outcome kl_outcome(const Report& r, const GateCondition& c) {
  double worst = -1;
  const SequenceReport* ws = nullptr;
  bool exact = true;
  for (const auto& s : r.sequences) {
    if (!s.has_logits) continue;
    exact &= s.logits.kl_exact;
    if (!ws || s.logits.kl_max > worst) {
      worst = s.logits.kl_max;
      ws = &s;
    }
  }
  if (!ws) {
    throw Error("--fail-on kl: the traces hold no logits to compare",
                "record logits in both runs (driftscope run --trace-topk N, or --full-logits)");
  }
  return above_threshold(
      worst, c,
      fmt::format("max KL(A||B) {}{} at position {}, seq {}", fmt_num(worst),
                  exact ? "" : " (top-K approximation)", ws->logits.kl_max_position, ws->index));
}

// beyond-noise: the floor's verdict (its headline says why).
Outcome noise_outcome(const Report& r) {
  if (!r.noise) {
    throw Error("--fail-on beyond-noise needs a noise floor",
                "give --floor FLOOR, calibrated on A (driftscope calibrate A.h5 -o FLOOR)");
  }
  return {r.noise->beyond, r.noise->headline};
}

// The outcome of one condition on a report (universal failures aside).
Outcome evaluate(const Report& r, const GateCondition& c) {
  if (c.kind == GateCondition::Kind::flip) return flip_outcome(r);
  if (c.kind == GateCondition::Kind::beyond_noise) return noise_outcome(r);
  if (c.kind == GateCondition::Kind::drift) return drift_outcome(r, c);
  return kl_outcome(r, c);
}

// " [A incomplete]" when a trace is incomplete, else nothing.
std::string incomplete_tail(const Report& r) {
  if (r.a.complete && r.b.complete) return {};
  return fmt::format(" [{} incomplete]", !r.a.complete && !r.b.complete ? "A and B"
                                         : !r.a.complete                ? "A"
                                                                        : "B");
}

}  // namespace

GateCondition parse_gate(const std::string& spec) {
  GateCondition c;
  c.spec = spec;
  if (spec == "flip") return c;
  if (spec == "beyond-noise") {
    c.kind = GateCondition::Kind::beyond_noise;
    return c;
  }
  const auto eq = spec.find('=');
  const std::string key = spec.substr(0, eq);
  if (eq == std::string::npos || (key != "drift" && key != "kl")) {
    throw Error(fmt::format("unknown --fail-on condition '{}'", spec), kGateHint);
  }
  const std::string val = spec.substr(eq + 1);
  char* end = nullptr;
  const double x = std::strtod(val.c_str(), &end);
  if (val.empty() || end != val.c_str() + val.size() || !std::isfinite(x) || x < 0) {
    throw Error(fmt::format("--fail-on {}: '{}' is not a number >= 0", key, val), kGateHint);
  }
  c.kind = key == "drift" ? GateCondition::Kind::drift : GateCondition::Kind::kl;
  c.threshold = x;
  return c;
}

GateResult evaluate_gates(const Report& r, const std::vector<GateCondition>& conditions) {
  GateResult res;
  std::vector<std::string> parts;
  const std::string universal = universal_failure(r);
  for (const auto& c : conditions) {
    const Outcome o = universal.empty() ? evaluate(r, c) : Outcome{true, universal};
    res.failed |= o.holds;
    if (universal.empty())
      parts.push_back(fmt::format("{}{}: {}", c.spec, o.holds ? "" : " ok", o.why));
  }
  if (!universal.empty()) {  // one reason fails every condition: say it once
    std::vector<std::string> specs;
    for (const auto& c : conditions) specs.push_back(c.spec);
    parts.push_back(fmt::format("{} (fails {})", universal, fmt::join(specs, ", ")));
  }
  res.verdict = fmt::format("gate {}: {}{}", res.failed ? "FAIL" : "PASS", fmt::join(parts, "; "),
                            incomplete_tail(r));
  return res;
}

}  // namespace ds::diff
