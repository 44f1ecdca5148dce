// Zoom's plan (src/workflow/zoom_plan.h) from two hand-built traces: which sequences are replayed,
// with which batch neighbours, how far, and on whose tokens.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "diff/report.h"
#include "src/workflow/zoom_plan.h"
#include "tests/diff/trace_builder.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

using Catch::Contains;

namespace {

// Seven sequences of prompt {1, 2} and six generated tokens, run with `batch`; `own` replaces the
// generated tokens of sequence 0.
ds::test::TraceSpec seven(int batch, const std::vector<int32_t>& own = {}) {
  ds::test::TraceSpec t;
  t.config_json = R"({"device":"cpu","dtype":"fp32","batch":)" + std::to_string(batch) + "}";
  for (int i = 0; i < 7; ++i) {
    ds::test::SeqSpec s;
    s.prompt = {1, 2};
    s.generated = i == 0 && !own.empty() ? own : std::vector<int32_t>{3, 4, 5, 6, 7, 3};
    t.seqs.push_back(s);
  }
  return t;
}

// The diff of A vs B as make_zoom_plan reads it: sequence `flipped` flips at generated step 1.
ds::diff::Report flipped_at(int flipped) {
  ds::diff::Report d;
  for (int i = 0; i < 7; ++i) {
    ds::diff::SequenceReport s;
    s.index = i;
    s.verdict = ds::diff::Verdict::identical;
    if (i == flipped) {
      s.verdict = ds::diff::Verdict::flip;
      s.first_flip = ds::diff::FirstFlip{};
      s.first_flip->step = 1;
    }
    d.sequences.push_back(s);
  }
  return d;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("zoom plan: a flip is replayed with the batch neighbours of both runs",
          "[workflow][zoom]") {
  ds::test::TempDir dir;
  ds::test::write_trace(dir.path() / "a.h5", seven(2));
  ds::test::write_trace(dir.path() / "b.h5", seven(3, {3, 4, 9, 9, 9, 9}));
  const auto a = ds::trace::TraceReader::open(dir.path() / "a.h5");
  const auto b = ds::trace::TraceReader::open(dir.path() / "b.h5");
  const ds::ZoomPlan p = ds::make_zoom_plan(a, b, flipped_at(4), {}, /*after=*/2);
  REQUIRE(p.seqs.size() == 1);
  CHECK(p.seqs[0].seq == 4);
  CHECK(p.seqs[0].flip_step == 1);
  CHECK(p.seqs[0].replayed == 4);  // the flip's step, its token and --after 2
  // batches of 2 and 3: groups line up every lcm = 6 sequences, so 0..5 replay together
  CHECK(p.replay == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(p.seqs[0].replay_index == 4);
  CHECK(p.forced_len_a == std::vector<int>(6, 4));
  CHECK(p.forced_len_b == std::vector<int>(6, 4));
  CHECK(p.side_a.config.batch == 2);
  CHECK(p.side_b.config.batch == 3);
  // a neighbour runs on its own side's tokens; the zoomed sequence on A's on both sides
  const auto prompts_b = lines(ds::replay_prompts(p, a, b, /*side_is_a=*/false));
  REQUIRE(prompts_b.size() == 6);
  CHECK(prompts_b[0] == R"({"forced":[3,4,9,9],"ids":[1,2]})");
  CHECK(prompts_b[4] == R"({"forced":[3,4,5,6],"ids":[1,2]})");
}

TEST_CASE("zoom plan: nothing to zoom into, or a --seq not in the traces, is refused",
          "[workflow][zoom]") {
  ds::test::TempDir dir;
  ds::test::write_trace(dir.path() / "a.h5", seven(1));
  const auto a = ds::trace::TraceReader::open(dir.path() / "a.h5");
  CHECK_THROWS_WITH(ds::make_zoom_plan(a, a, flipped_at(-1), {}, 8),
                    Contains("no sequence flipped"));
  CHECK_THROWS_WITH(ds::make_zoom_plan(a, a, flipped_at(-1), {9}, 8),
                    Contains("sequence 9 is not in both traces"));
  const ds::ZoomPlan p = ds::make_zoom_plan(a, a, flipped_at(-1), {2}, 8);  // drift, no flip
  REQUIRE(p.seqs.size() == 1);
  CHECK(p.seqs[0].flip_step == -1);
  CHECK(p.seqs[0].replayed == 6);  // every generated token
  CHECK(p.replay == std::vector<int>{2});
}

TEST_CASE("zoom plan: --after near INT_MAX replays to the end of A's sequence, never wraps",
          "[workflow][zoom]") {
  // The flip step + 1 + --after overflowed an int: a negative length reached a std::vector
  // (issue 45, second round). The command refuses --after above 2^24; the plan holds anyway.
  ds::test::TempDir dir;
  ds::test::write_trace(dir.path() / "a.h5", seven(1));
  const auto a = ds::trace::TraceReader::open(dir.path() / "a.h5");
  const ds::ZoomPlan p = ds::make_zoom_plan(a, a, flipped_at(3), {}, 2147483647);
  REQUIRE(p.seqs.size() == 1);
  CHECK(p.seqs[0].replayed == 6);
  CHECK(p.forced_len_a == std::vector<int>{6});
  CHECK(lines(ds::replay_prompts(p, a, a, true)).size() == 1);
}

TEST_CASE(
    "zoom plan for explain: every sequence of a replayed block runs as long as its longest "
    "zoomed one, so each pass up to a flip holds the rows it held",
    "[workflow][zoom][explain]") {
  ds::test::TempDir dir;
  ds::test::write_trace(dir.path() / "a.h5", seven(2));
  ds::test::write_trace(dir.path() / "b.h5", seven(3));
  const auto a = ds::trace::TraceReader::open(dir.path() / "a.h5");
  const auto b = ds::trace::TraceReader::open(dir.path() / "b.h5");
  ds::diff::Report d = flipped_at(4);  // step 1
  d.sequences[1].verdict = ds::diff::Verdict::flip;
  d.sequences[1].first_flip = ds::diff::FirstFlip{};
  d.sequences[1].first_flip->step = 3;
  // zoom's own plan: each zoomed sequence stops after its flip, so sequence 4's passes past its
  // step 1 would hold fewer rows than sequence 1's in the original runs
  const ds::ZoomPlan z = ds::make_zoom_plan(a, b, d, {}, /*after=*/0);
  CHECK(z.forced_len_a == std::vector<int>{4, 4, 4, 4, 2, 4});
  const ds::ZoomPlan e = ds::make_zoom_plan(a, b, d, {}, /*after=*/0, /*whole_blocks=*/true);
  CHECK(e.forced_len_a == std::vector<int>(6, 4));
  CHECK(e.forced_len_b == std::vector<int>(6, 4));
  CHECK(e.seqs[1].replayed == 2);  // what is diffed and explained is the flip's own
}
