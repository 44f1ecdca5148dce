// The test-only perturbation knob test_perturb: its parsing.
#include "src/experiment/perturb.h"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "common/error.h"
#include "common/number_format.h"
#include "trace/schema.h"

namespace ds {
namespace {

// The op that writes each per-layer tap site (forward.h: the tap follows its op).
constexpr std::array<std::pair<trace::SiteKind, PlanOp>, 4> kSiteOps = {
    {{trace::SiteKind::attn_out, PlanOp::o_proj},
     {trace::SiteKind::resid_mid, PlanOp::attn_add},
     {trace::SiteKind::mlp_out, PlanOp::down_proj},
     {trace::SiteKind::out, PlanOp::mlp_add}}};

}  // namespace

OpPerturb parse_perturbation(const std::string& spec, int n_layers) {
  if (spec.empty()) return {};
  auto bad = [&](const std::string& why) {
    return Error(fmt::format("invalid test_perturb '{}': {}", spec, why),
                 "it takes <op>:<bf16|f16|+ulp|-ulp>, the op as a numerics plan names it "
                 "(L3/down_proj, lm_head) or a per-layer tap site (L3/mlp_out); test-only");
  };
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos) throw bad("no ':<how>'");
  std::string op = spec.substr(0, colon);
  const std::string how = spec.substr(colon + 1);
  OpPerturb p;
  if (how == traits(NumberFormat::bf16).name) {
    p.how = Nudge::bf16;
  } else if (how == traits(NumberFormat::f16).name) {
    p.how = Nudge::f16;
  } else if (how == "+ulp") {
    p.how = Nudge::ulp_up;
  } else if (how == "-ulp") {
    p.how = Nudge::ulp_down;
  } else {
    throw bad(fmt::format("'{}' is not bf16, f16, +ulp or -ulp", how));
  }
  if (const size_t slash = op.find('/'); slash != std::string::npos) {
    for (const auto& [site, site_op] : kSiteOps) {
      if (std::string_view(op).substr(slash + 1) == trace::site_kind_name(site)) {
        op = op.substr(0, slash + 1) + plan_op_name(site_op);
      }
    }
  }
  const auto id = parse_op_id(op, n_layers);
  if (!id) {
    throw bad(n_layers == std::numeric_limits<int>::max()
                  ? fmt::format("no op '{}'", op)
                  : fmt::format("no op '{}' in a {}-layer model", op, n_layers));
  }
  p.op = *id;
  return p;
}

}  // namespace ds
