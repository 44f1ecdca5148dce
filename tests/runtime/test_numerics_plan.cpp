// The per-op numerics plan (src/runtime/numerics_plan.h): op names, a replay of one sequence
// alone that decides as its batched run did (B's plan at A's batch gives B's bits), and a plan
// that takes another configuration at one op only.
#include <catch2/catch.hpp>
#include <cstring>
#include <map>

#include "src/experiment/generate.h"
#include "src/experiment/pass_shapes.h"
#include "src/model/model.h"
#include "src/runtime/numerics_plan.h"
#include "src/runtime/runtime.h"
#include "tests/support/paths.h"

namespace {

// Keeps every tapped tensor of one KV-cache slot, per site, rows in the order produced.
struct SlotHook final : ds::TapHook {
  int slot = 0;
  std::map<std::string, std::vector<float>> by_site;
  bool wants(const ds::Site&) override { return true; }
  void on_tap(const ds::Site& site, const ds::TapTensor& t) override {
    auto& rows = by_site[ds::site_name(site)];
    for (int r = 0; r < t.rows; ++r) {
      if (t.slot[r] != slot) continue;
      rows.insert(rows.end(), t.f32 + static_cast<size_t>(r) * t.width,
                  t.f32 + static_cast<size_t>(r + 1) * t.width);
    }
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const std::vector<std::vector<int32_t>> kPrompts = {
    {1, 403, 407}, {1, 261, 378, 433, 5}, {1, 22},        {1, 400, 401, 402, 403, 404},
    {1, 7},        {1, 300, 301},         {1, 9, 10, 11}, {1, 500}};

// Member `member` of kPrompts generated 12 tokens with the others at batch 8, its taps.
SlotHook batched(const ds::Model& m, const ds::Numerics& nx, int member,
                 std::vector<std::vector<int32_t>>& tokens) {
  auto rt = ds::make_cpu_runtime(m, nx, 64, 8);
  SlotHook hook;
  hook.slot = member;
  rt->set_tap_hook(&hook);
  std::vector<ds::SequenceRequest> reqs;
  for (size_t i = 0; i < kPrompts.size(); ++i) reqs.push_back({kPrompts[i], i});
  ds::GenerateOptions g;
  g.max_new = 12;
  tokens.clear();
  for (auto& r : ds::generate_batch(*rt, reqs, g)) tokens.push_back(r.tokens);
  return hook;
}

// Sequence `tokens` (prompt of prompt_len, then its generated tokens) replayed alone, forced,
// under `plan` when given: one prefill pass, then one pass per generated token but the last.
SlotHook alone(const ds::Model& m, const ds::Numerics& nx, const std::vector<int32_t>& tokens,
               int prompt_len, const ds::NumericsPlan* plan) {
  auto rt = ds::make_cpu_runtime(m, nx, 64, 1);
  if (plan != nullptr) rt->set_plan(*plan);
  SlotHook hook;
  rt->set_tap_hook(&hook);
  std::vector<ds::BatchRow> rows;
  for (int p = 0; p < prompt_len; ++p) rows.push_back({0, p, tokens[p]});
  rt->forward(rows);
  for (size_t p = prompt_len; p + 1 < tokens.size(); ++p) {
    const ds::BatchRow row{0, static_cast<int>(p), tokens[p]};
    rt->forward(std::span<const ds::BatchRow>(&row, 1));
  }
  return hook;
}

}  // namespace

TEST_CASE("numerics plan: op names round-trip and name every op once", "[runtime][plan]") {
  const auto ids = ds::all_op_ids(3);
  CHECK(ids.size() == 3u * ds::kLayerPlanOps + 3u);
  for (const ds::OpId& id : ids) {
    const auto back = ds::parse_op_id(ds::op_id_name(id), 3);
    REQUIRE(back.has_value());
    CHECK(*back == id);
  }
  CHECK(ds::op_id_name({2, ds::PlanOp::down_proj}) == "L2/down_proj");
  CHECK(ds::op_id_name({-1, ds::PlanOp::lm_head}) == "lm_head");
  CHECK_FALSE(ds::parse_op_id("L3/q_proj", 3).has_value());  // past the model's layers
  CHECK_FALSE(ds::parse_op_id("L1/qproj", 3).has_value());
  CHECK_FALSE(ds::parse_op_id("L-1/q_proj", 3).has_value());
  CHECK_FALSE(ds::parse_op_id("L1/", 3).has_value());
}

TEST_CASE(
    "numerics plan: a sequence replayed alone with its batch's pass shapes gives the "
    "batched run's bits",
    "[runtime][plan]") {
  // bf16 with heuristic GEMMs: batch changes split-K (M = 1 decodes reduce K in 4 parts, M = 8
  // in 2) and split-KV; nothing else. B's plan at A's batch must be B, bit for bit.
  const ds::Model m = ds::load_model(ds::test::model_bin());
  ds::Numerics nx;
  nx.dtype = ds::DType::bf16;
  nx.gemm_policy = ds::GemmPolicy::heuristic;
  const int member = 3;
  std::vector<std::vector<int32_t>> tokens;
  const SlotHook b = batched(m, nx, member, tokens);
  ds::GroupLengths group;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    group.prompt_lens.push_back(static_cast<int>(kPrompts[i].size()));
    group.gen_lens.push_back(static_cast<int>(tokens[i].size() - kPrompts[i].size()));
  }
  const int prompt_len = group.prompt_lens[member];
  const int decode_steps = group.gen_lens[member] - 1;
  ds::PlanSide side_b{nx, ds::member_pass_shapes(group, member, 0, false, decode_steps)};
  REQUIRE(side_b.shapes.size() == static_cast<size_t>(1 + decode_steps));
  CHECK(side_b.shapes[0] == ds::PassShape{27, 8});  // the prompts' 27 rows in one pass
  CHECK(side_b.shapes[1] == ds::PassShape{8, 8});
  const ds::NumericsPlan plan({nx, {}}, side_b, ds::all_op_ids(m.config.n_layers));
  const SlotHook replay = alone(m, nx, tokens[member], prompt_len, &plan);
  const SlotHook own = alone(m, nx, tokens[member], prompt_len, nullptr);
  int differ_alone = 0;
  for (const auto& [site, rows] : b.by_site) {
    INFO(site);
    REQUIRE(replay.by_site.count(site) == 1);
    CHECK(same_bits(replay.by_site.at(site), rows));
    differ_alone += !same_bits(own.by_site.at(site), rows);
  }
  // not vacuous: alone with its own shapes (batch 1), the sequence's numbers are others
  CHECK(differ_alone > 0);
}

TEST_CASE(
    "numerics plan: one op taken from another configuration changes that op's output and "
    "none before it",
    "[runtime][plan]") {
  const ds::Model m = ds::load_model(ds::test::model_bin());
  ds::Numerics a, b;  // fp32: a reordered sum shows in the output (bf16 would mostly hide it)
  b.split_k = 3;      // every GEMM reduces K in 3 parts
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 433, 5, 22, 9};
  const ds::NumericsPlan one_op({a, {}}, {b, {}}, {ds::OpId{1, ds::PlanOp::down_proj}});
  const ds::NumericsPlan all_b({a, {}}, {b, {}}, ds::all_op_ids(m.config.n_layers));
  const SlotHook ra = alone(m, a, tokens, 6, nullptr);
  const SlotHook rb = alone(m, b, tokens, 6, nullptr);
  const SlotHook mixed = alone(m, a, tokens, 6, &one_op);
  const SlotHook every = alone(m, a, tokens, 6, &all_b);
  for (const char* site : {"embed", "L0/out", "L1/attn_out", "L1/mlp_norm"}) {
    INFO(site);
    CHECK(same_bits(mixed.by_site.at(site), ra.by_site.at(site)));
  }
  CHECK_FALSE(same_bits(mixed.by_site.at("L1/mlp_out"), ra.by_site.at("L1/mlp_out")));
  for (const auto& [site, rows] : rb.by_site) {  // every op from B is B
    INFO(site);
    CHECK(same_bits(every.by_site.at(site), rows));
  }
}

TEST_CASE(
    "numerics plan: a side's test perturbation is a decision of its op, taken with the op and "
    "left with it",
    "[runtime][plan]") {
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const ds::Numerics nx;  // fp32 on both sides: the perturbation is the only difference
  const ds::OpId at{1, ds::PlanOp::down_proj};
  const ds::OpPerturb up{at, ds::Nudge::ulp_up};
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 433, 5, 22, 9};
  const ds::NumericsPlan b_alone(ds::PlanSide{nx, {}, up});
  const ds::NumericsPlan b_at_op({nx, {}, {}}, {nx, {}, up}, {at});
  const ds::NumericsPlan b_elsewhere({nx, {}, {}}, {nx, {}, up}, {{1, ds::PlanOp::up_proj}});
  CHECK(b_alone.perturbs());
  CHECK(b_at_op.perturbs());
  CHECK_FALSE(b_elsewhere.perturbs());
  const SlotHook ra = alone(m, nx, tokens, 6, nullptr);
  const SlotHook rb = alone(m, nx, tokens, 6, &b_alone);
  const SlotHook mixed = alone(m, nx, tokens, 6, &b_at_op);
  const SlotHook left = alone(m, nx, tokens, 6, &b_elsewhere);
  // not vacuous: the perturbation moves layer 1's MLP output, and nothing before it
  CHECK_FALSE(same_bits(rb.by_site.at("L1/mlp_out"), ra.by_site.at("L1/mlp_out")));
  CHECK(same_bits(rb.by_site.at("L1/mlp_norm"), ra.by_site.at("L1/mlp_norm")));
  for (const auto& [site, rows] : ra.by_site) {
    INFO(site);
    CHECK(same_bits(mixed.by_site.at(site), rb.by_site.at(site)));  // B's op: B's bits
    CHECK(same_bits(left.by_site.at(site), rows));                  // B at another op: A's
  }
  // each value of L1/mlp_out is its A value rounded to bf16 and moved one bf16 ulp up
  const auto& a_out = ra.by_site.at("L1/mlp_out");
  const auto& b_out = rb.by_site.at("L1/mlp_out");
  for (size_t i = 0; i < a_out.size(); ++i) CHECK(b_out[i] == ds::bf16_step(a_out[i], 1));
}
