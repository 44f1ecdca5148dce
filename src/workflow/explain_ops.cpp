// explain's op level: the candidates and the plans of a flip's op trials.
#include "src/workflow/explain_ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "src/experiment/generate.h"
#include "src/experiment/perturb.h"

namespace ds {
namespace {

// The attribution block an op belongs to (attention, mlp or the whole layer of its layer,
// final_norm, logits); embedding has none.
bool in_block(const diff::BlockError& b, OpId id, bool split) {
  if (id.layer >= 0) {
    if (b.layer != id.layer) return false;
    if (!split) return b.kind == diff::kLayerBlock;
    return b.kind == (id.op <= PlanOp::attn_add ? diff::kAttentionBlock : diff::kMlpBlock);
  }
  return (id.op == PlanOp::final_norm && b.kind == diff::kFinalNormBlock) ||
         (id.op == PlanOp::lm_head && b.kind == diff::kLogitsBlock);
}

// An op's local error as the attribution measured its block (NaN first: a block that made one);
// -inf without one.
double local_error(const diff::AttributionReport* a, OpId id) {
  if (a == nullptr) return -std::numeric_limits<double>::infinity();
  for (const diff::BlockError& b : a->blocks) {
    if (!in_block(b, id, a->split)) continue;
    return std::isnan(b.local) ? std::numeric_limits<double>::infinity() : b.local;
  }
  return -std::numeric_limits<double>::infinity();
}

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The passes of one sequence replayed alone: its prefill passes, then one decode pass per step.
struct ReplayPass {
  PassShape own;
  SeqRows rows;
};
std::vector<ReplayPass> replay_passes(const RunConfig& c, int prompt_len, int steps) {
  std::vector<ReplayPass> out;
  for (const PrefillPass& pass : prefill_passes({prompt_len}, c.prefill_chunk, c.prefix_cache)) {
    for (const PrefillPart& part : pass) {
      out.push_back({{part.count, 1}, {0, part.count, part.begin + part.count}});
    }
  }
  for (int k = 1; k <= steps; ++k) out.push_back({{1, 1}, {0, 1, prompt_len + k}});
  return out;
}

}  // namespace

std::string op_set_id(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  uint64_t h = fnv1a("ops");
  for (const std::string& n : names) h = fnv1a(n + "\n", h);
  return fmt::format("{:016x}", h);
}

OpLevelPlan op_level_plan(const ModelConfig& m, const RunConfig& a, const RunConfig& b,
                          const MemberOf& ga, const MemberOf& gb, int prompt_len, int steps,
                          const diff::AttributionReport* attribution) {
  OpLevelPlan p;
  p.spec.a_shapes = member_pass_shapes(ga.group, ga.member, a.prefill_chunk, a.prefix_cache, steps);
  p.spec.b = b;
  p.spec.b_shapes = member_pass_shapes(gb.group, gb.member, b.prefill_chunk, b.prefix_cache, steps);
  const PlanSide side_a{numerics(a), p.spec.a_shapes, parse_perturbation(a.test_perturb)};
  const PlanSide side_b{numerics(b), p.spec.b_shapes, parse_perturbation(b.test_perturb)};
  NumericsPlan plan_a(side_a), plan_b(side_b);
  const std::vector<OpId> ops = all_op_ids(m.n_layers);
  // per op, each change with the passes it holds at
  std::vector<std::map<std::string, int>> changes(ops.size());
  const std::vector<ReplayPass> passes = replay_passes(a, prompt_len, steps);
  for (const ReplayPass& pass : passes) {
    plan_a.begin_pass(pass.own);
    plan_b.begin_pass(pass.own);
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto d = decision_changes(ops[i], op_decision(plan_a, ops[i], m, pass.rows),
                                      op_decision(plan_b, ops[i], m, pass.rows));
      for (const std::string& c : d) ++changes[i][c];
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (changes[i].empty()) continue;
    std::vector<std::string> what;
    for (const auto& [c, n] : changes[i]) {
      what.push_back(n == static_cast<int>(passes.size())
                         ? c
                         : fmt::format("{} ({} of {} passes)", c, n, passes.size()));
    }
    p.candidates.push_back(ops[i]);
    p.what.push_back(fmt::format("{}", fmt::join(what, ", ")));
  }
  const int n = static_cast<int>(p.candidates.size());
  if (n == 0) return p;
  int top = 0;
  for (int i = 1; i < n; ++i) {
    if (local_error(attribution, p.candidates[i]) > local_error(attribution, p.candidates[top])) {
      top = i;
    }
  }
  if (n > 1 && attribution != nullptr) p.first = {top};
  for (int i = 0; i < n; ++i) p.order.push_back(i);
  std::sort(p.order.begin(), p.order.end(), [&](int x, int y) {
    return fnv1a(op_id_name(p.candidates[x])) < fnv1a(op_id_name(p.candidates[y]));
  });
  return p;
}

}  // namespace ds
