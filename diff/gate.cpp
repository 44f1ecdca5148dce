// The regression gate over a diff report.
#include "diff/gate.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "common/error.h"

namespace ds::diff {
namespace {

const char* kGateHint =
    "--fail-on takes flip, drift=<relative L2> or kl=<nats>, e.g. --fail-on drift=1e-3";

// The first reason, common to every condition, to fail: prompts differ, NaN, nothing compared.
std::string universal_failure(const Report& r) {
  if (!r.skipped.empty()) {  // what could not be read cannot be vouched for
    const auto& k = r.skipped.front();
    return fmt::format(
        "seq {}: {} skipped (damaged trace{})", k.seq, k.what,
        r.skipped.size() > 1 ? fmt::format(", {} parts skipped", r.skipped.size()) : std::string());
  }
  if (r.sequences.empty()) return "no sequence was compared";
  for (const auto& s : r.sequences) {
    if (!s.prompt_equal) {
      return fmt::format("seq {} prompts differ at position {}", s.index,
                         s.prompt_diff ? s.prompt_diff->first_index : 0);
    }
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

}  // namespace

GateCondition parse_gate(const std::string& spec) {
  GateCondition c;
  c.spec = spec;
  if (spec == "flip") return c;
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
    std::string why;
    bool holds = false;
    if (!universal.empty()) {
      holds = true;
      why = universal;
    } else if (c.kind == GateCondition::Kind::flip) {
      const SequenceReport* first = nullptr;
      for (const auto* s : by_first_flip(r)) {
        if (s->first_flip) {
          first = s;
          break;
        }
      }
      holds = first != nullptr;
      why = holds ? fmt::format(
                        "seq {} flips at step {} (token {} vs {}); {} of {} sequences diverged",
                        first->index, first->first_flip->step, first->first_flip->token_a,
                        first->first_flip->token_b, r.summary.diverged, r.summary.sequences)
                  : fmt::format("no flip in {} sequence{}", r.summary.sequences,
                                r.summary.sequences == 1 ? "" : "s");
    } else if (c.kind == GateCondition::Kind::drift) {
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
      holds = worst > c.threshold;
      why = fmt::format("max relative L2 {} at {} position {}, seq {} ({} {})", fmt_num(worst),
                        wd->site, wd->rel_l2_max_position, ws->index,
                        holds ? ">" : "<=", fmt_num(c.threshold));
    } else {
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
      holds = worst > c.threshold;
      why = fmt::format("max KL(A||B) {}{} at position {}, seq {} ({} {})", fmt_num(worst),
                        exact ? "" : " (top-K approximation)", ws->logits.kl_max_position,
                        ws->index, holds ? ">" : "<=", fmt_num(c.threshold));
    }
    res.failed |= holds;
    if (universal.empty())
      parts.push_back(fmt::format("{}{}: {}", c.spec, holds ? "" : " ok", why));
  }
  if (!universal.empty()) {  // one reason fails every condition: say it once
    std::vector<std::string> specs;
    for (const auto& c : conditions) specs.push_back(c.spec);
    parts.push_back(fmt::format("{} (fails {})", universal, fmt::join(specs, ", ")));
  }
  std::string tail;
  if (!r.a.complete || !r.b.complete) {
    tail = fmt::format(" [{} incomplete]", !r.a.complete && !r.b.complete ? "A and B"
                                           : !r.a.complete                ? "A"
                                                                          : "B");
  }
  res.verdict =
      fmt::format("gate {}: {}{}", res.failed ? "FAIL" : "PASS", fmt::join(parts, "; "), tail);
  return res;
}

}  // namespace ds::diff
