// A trial's outcome at a flip row (src/workflow/explain_trials.h flip_outcome) from hand-built
// traces: whose token the trial's own rule chooses over its recorded top-K (greedy, its tie rule,
// its repetition penalty on the tokens before the flip), the margin between B's token and A's, and
// what is unresolved: a third token, a choice the recorded top-K cannot decide.
#include <catch2/catch.hpp>
#include <cmath>

#include "src/workflow/explain_trials.h"
#include "tests/diff/trace_builder.h"
#include "tests/support/temp_dir.h"

namespace {

// One sequence, prompt {1, 2}, one generated token 3; row 1 (the flip row) holds `row`.
ds::diff::TrialOutcome outcome(const std::vector<double>& row, const std::string& config,
                               const std::vector<int32_t>& history = {1, 2}) {
  ds::test::TempDir dir;
  ds::test::TraceSpec t;
  t.config_json = config;
  ds::test::SeqSpec s;
  s.prompt = {1, 2};
  s.generated = {3};
  s.logits = {std::vector<double>(8, 0.0), row};
  t.seqs.push_back(s);
  ds::test::write_trace(dir.path() / "t.h5", t);
  const auto tr = ds::trace::TraceReader::open(dir.path() / "t.h5");
  ds::FlipRow f;
  f.row = 1;
  f.token_a = 5;
  f.token_b = 6;
  f.history = history;
  return ds::flip_outcome(tr, f);
}

const std::string kGreedy = R"({"device":"cpu","tie_break":"lowest_id","repetition_penalty":1.0})";

}  // namespace

TEST_CASE("explain trial outcome: whose token the trial's rule chooses, and the margin",
          "[workflow][explain]") {
  // B's token (6) ahead of A's (5) by 0.5
  auto o = outcome({0, 0, 0, 0, 1, 2.0, 2.5, 0}, kGreedy);
  CHECK(o.verdict == ds::diff::TrialVerdict::b_wins);
  CHECK(o.margin == 0.5);
  o = outcome({0, 0, 0, 0, 1, 2.5, 2.0, 0}, kGreedy);
  CHECK(o.verdict == ds::diff::TrialVerdict::a_wins);
  CHECK(o.margin == -0.5);
  // a tie: the tie rule decides, the margin is 0
  o = outcome({0, 0, 0, 0, 1, 2.0, 2.0, 0}, kGreedy);
  CHECK(o.verdict == ds::diff::TrialVerdict::a_wins);
  CHECK(o.margin == 0);
  o = outcome({0, 0, 0, 0, 1, 2.0, 2.0, 0},
              R"({"device":"cpu","tie_break":"highest_id","repetition_penalty":1.0})");
  CHECK(o.verdict == ds::diff::TrialVerdict::b_wins);
  // a third token: unresolved, never a verdict
  o = outcome({0, 0, 0, 0, 3.0, 2.0, 2.5, 0}, kGreedy);
  CHECK(o.verdict == ds::diff::TrialVerdict::unresolved);
  CHECK(o.why == "a third token (4) wins");
  CHECK(o.margin == 0.5);  // still known: both tokens are in the top-K
}

TEST_CASE("explain trial outcome: the trial's repetition penalty on the tokens before the flip",
          "[workflow][explain]") {
  const std::string penalty =
      R"({"device":"cpu","tie_break":"lowest_id","repetition_penalty":2.0})";
  // B's token 6 was seen before the flip: 2.5 / 2 = 1.25 < A's 2.0
  auto o = outcome({0, 0, 0, 0, 1, 2.0, 2.5, 0}, penalty, {1, 2, 6});
  CHECK(o.verdict == ds::diff::TrialVerdict::a_wins);
  CHECK(o.margin == -0.75);
  // every recorded logit (the top-4: ids 6, 5, 4, 7) penalised below the 4th, 2.1: an unrecorded
  // token, at most 2.1, could be the one chosen
  o = outcome({0, 0, 0, 0, 2.2, 2.4, 2.5, 2.1}, penalty, {4, 5, 6, 7});
  CHECK(o.verdict == ds::diff::TrialVerdict::unresolved);
  CHECK(o.why.find("outside the top-4") != std::string::npos);
}
