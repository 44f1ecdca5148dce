// explain's knobs (src/workflow/explain_knobs.h) from two zoom sides built by hand: the fields
// that differ, those left out and why, a trial's configuration or recorder command, and the pairs
// of runs whose knobs cannot be mixed.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "src/workflow/explain_knobs.h"

using Catch::Contains;

namespace {

ds::ZoomSide side(const ds::RunConfig& c) {
  ds::ZoomSide s;
  s.config = c;
  return s;
}

ds::ZoomSide recorder_side(std::vector<std::string> options) {
  ds::ZoomSide s;
  ds::RecorderReplay r;
  r.engine = "transformers";
  r.options = std::move(options);
  s.recorder = r;
  return s;
}

std::vector<std::string> names(const ds::KnobSpace& s) {
  std::vector<std::string> out;
  for (const auto& k : s.knobs) out.push_back(k.name);
  return out;
}

}  // namespace

TEST_CASE(
    "explain knobs: the fields that differ, in the configuration's order, and a trial's "
    "configuration",
    "[workflow][explain]") {
  ds::RunConfig a, b;
  b.dtype = ds::DType::bf16;
  b.batch = 8;
  b.max_new = 12;  // not a knob: it ends generation
  b.seed = 3;      // not a knob under greedy decoding
  b.test_perturb = "L2/mlp_add:+ulp";
  const ds::KnobSpace s = ds::knob_space(side(a), side(b));
  CHECK(s.engine == "driftscope");
  CHECK(names(s) == std::vector<std::string>{"dtype", "batch", "test_perturb"});
  CHECK(s.knobs[2].a.empty());
  REQUIRE(s.left_out.size() == 2);
  CHECK_THAT(s.left_out[0], Contains("max_new") && Contains("ends generation"));
  CHECK_THAT(s.left_out[1], Contains("seed") && Contains("greedy"));
  const ds::RunConfig t = ds::trial_config(a, s, {1, 2});
  CHECK(t.dtype == ds::DType::fp32);
  CHECK(t.batch == 8);
  CHECK(t.test_perturb == "L2/mlp_add:+ulp");
  CHECK(t.max_new == a.max_new);
  CHECK(ds::sets_batch(s, {1}));
  CHECK_FALSE(ds::sets_batch(s, {0, 2}));
  CHECK(ds::op_level_knob("batch"));
  CHECK_FALSE(ds::op_level_knob("tie_break"));
  CHECK_FALSE(ds::op_level_knob("prefill_chunk"));
}

TEST_CASE("explain knobs: a recorder's options, and a trial's command sets some at B's values",
          "[workflow][explain]") {
  const ds::ZoomSide a = recorder_side({"run", "-m", "/m", "--dtype", "bf16", "--batch", "1",
                                        "--threads", "1", "--full-logits", "-n", "8"});
  const ds::ZoomSide b = recorder_side({"run", "-m", "/m", "--dtype", "bf16", "--batch", "8",
                                        "--threads", "2", "--full-logits", "-n", "9"});
  const ds::KnobSpace s = ds::knob_space(a, b);
  CHECK(s.engine == "transformers");
  CHECK(names(s) == std::vector<std::string>{"batch", "threads"});
  REQUIRE(s.left_out.size() == 1);
  CHECK_THAT(s.left_out[0], Contains("-n (8 vs 9)"));
  CHECK(ds::trial_options(*a.recorder, s, {0}) ==
        std::vector<std::string>{"run", "-m", "/m", "--dtype", "bf16", "--batch", "8", "--threads",
                                 "1", "--full-logits", "-n", "8"});
  CHECK(ds::sets_batch(s, {0}));
}

TEST_CASE("explain knobs: runs whose knobs cannot be mixed are refused", "[workflow][explain]") {
  ds::RunConfig a, sampled;
  sampled.temperature = 0.7;
  CHECK_THROWS_WITH(ds::knob_space(side(a), side(sampled)),
                    Contains("explain replays greedy choices"));
  CHECK_THROWS_WITH(ds::knob_space(side(a), recorder_side({"run", "--batch", "1"})),
                    Contains("cannot mix a driftscope run's knobs with a recorder's"));
  ds::ZoomSide llama = recorder_side({"llamacpp", "-m", "/g.gguf"});
  llama.recorder->engine = "llama.cpp";
  CHECK_THROWS_WITH(ds::knob_space(recorder_side({"run", "-m", "/m"}), llama),
                    Contains("cannot mix two engines' knobs"));
}
