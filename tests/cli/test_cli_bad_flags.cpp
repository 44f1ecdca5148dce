// Flag and input values outside what driftscope can honour: each is refused up front with exit 2,
// "driftscope: <what>" and a hint, before any output file exists, rather than clamped, wrapped
// or silently replaced by something the user did not ask for.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "tests/support/run_cli.h"
#include "tests/support/synthetic_checkpoint.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace fs = std::filesystem;
using ds::test::check_input_error;
using ds::test::has;
using ds::test::run_cli;

TEST_CASE("seeds beyond 2^64 - 1 are refused from the flag and the config file",
          "[cli][bad-input]") {
  const std::string big = "99999999999999999999999";
  const std::string outside = "seed " + big + " is outside 0..18446744073709551615";
  auto r = run_cli("run --dry-run --seed " + big);
  check_input_error(r, outside);
  CHECK_FALSE(has(r.out, "seed=18446744073709551615"));
  check_input_error(run_cli("synth --shape tiny --seed " + big + " -o /nonexistent/x"), outside);
  ds::test::TempDir dir;
  std::ofstream(dir.path() / "s.toml") << "seed = " << big << "\n";
  check_input_error(run_cli("run --dry-run --config " + (dir.path() / "s.toml").string()), outside);
  // the largest seed itself is fine
  r = run_cli("run --dry-run --seed 18446744073709551615");
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "seed=18446744073709551615"));
}

TEST_CASE("a JSONL prompt with both text and ids is refused before the trace exists",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path prompts = dir.path() / "p.jsonl", trace = dir.path() / "t.h5";
  std::ofstream(prompts) << R"({"text": "In the beginning"})"
                         << "\n"
                         << R"({"text": "Once upon a time", "ids": [1, 403]})"
                         << "\n";
  check_input_error(run_cli("run -q -n 2 --prompts " + prompts.string() + " -o " + trace.string()),
                    prompts.string() + R"(:2: give "text" or "ids", not both)");
  CHECK_FALSE(fs::exists(trace));
}

TEST_CASE("a UTF-8 byte order mark before the first prompt is skipped", "[cli]") {
  ds::test::TempDir dir;
  const std::string bom = "\xEF\xBB\xBF";
  std::ofstream(dir.path() / "plain.txt") << "In the beginning\n";
  std::ofstream(dir.path() / "bom.txt") << bom << "In the beginning\n";
  std::ofstream(dir.path() / "bom.jsonl") << bom << R"({"text": "In the beginning"})"
                                          << "\n";
  std::string shown[3];
  int i = 0;
  for (const char* name : {"plain.txt", "bom.txt", "bom.jsonl"}) {
    const fs::path trace = dir.path() / (std::string(name) + ".h5");
    REQUIRE(
        run_cli("run -q -n 1 --prompts " + (dir.path() / name).string() + " -o " + trace.string())
            .exit_code == 0);
    const auto r = run_cli("show --json " + trace.string());
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    shown[i++] = j["sequences"][0]["tokens"].dump();
    CHECK_FALSE(has(run_cli("show " + trace.string()).out, bom));
  }
  CHECK(shown[1] == shown[0]);
  CHECK(shown[2] == shown[0]);
}

TEST_CASE("a --trace-topk above the vocabulary is refused before the trace exists",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path trace = dir.path() / "tk.h5";
  // the bundled kjv-llama has 1024 tokens
  check_input_error(
      run_cli("run -q --prompt-ids 1,400 -n 2 --trace-topk 1000000000 -o " + trace.string()),
      "--trace-topk 1000000000 is more than the model's 1024 tokens");
  CHECK_FALSE(fs::exists(trace));
  REQUIRE(
      run_cli("run -q --prompt-ids 1,400 -n 2 --trace-topk 1024 -o " + trace.string()).exit_code ==
      0);
  CHECK(has(run_cli("show " + trace.string()).out, "\"topk\":1024"));
}

TEST_CASE("the default trace top-K is cut to a smaller vocabulary and recorded as held", "[cli]") {
  ds::test::TempDir dir;
  ds::test::SyntheticSpec spec;
  spec.vocab = 13;
  ds::test::write_synthetic_checkpoint(dir.path() / "m", spec);
  const fs::path trace = dir.path() / "t.h5";
  REQUIRE(run_cli("run -q -m " + (dir.path() / "m").string() + " --prompt-ids 1,2 -n 2 -o " +
                  trace.string())
              .exit_code == 0);
  const auto out = run_cli("show " + trace.string()).out;
  CHECK(has(out, "\"topk\":13"));
  CHECK(has(out, "top-13 ids/logits"));
}

namespace {

// The columns of the longest line of `text` (UTF-8 code points: a ruler's '─' is one column).
size_t longest_line_columns(const std::string& text) {
  size_t longest = 0, columns = 0;
  for (const char ch : text) {
    if (ch == '\n') {
      columns = 0;
    } else if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) {
      longest = std::max(longest, ++columns);
    }
  }
  return longest;
}

}  // namespace

TEST_CASE("diff: --width outside 40..1000 is refused and COLUMNS is clamped into it",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const std::string a = (dir.path() / "a.h5").string(), b = (dir.path() / "b.h5").string();
  REQUIRE(run_cli("run -q --prompt-ids 1,400 -n 3 -o " + a).exit_code == 0);
  REQUIRE(run_cli("run -q --prompt-ids 1,400 -n 3 --dtype bf16 -o " + b).exit_code == 0);
  const std::string ab = " " + a + " " + b;
  for (const char* w : {"0", "-5", "39", "1001", "100000000"}) {
    check_input_error(run_cli("diff --width=" + std::string(w) + ab),
                      "--width: " + std::string(w) + " is outside 40..1000 columns");
  }
  check_input_error(run_cli("attribute --dtype bf16 -q --width 0 " + a), "is outside 40..1000");
  check_input_error(run_cli("demo --width 2000 --out " + (dir.path() / "demo").string()),
                    "is outside 40..1000");
  CHECK_FALSE(fs::exists(dir.path() / "demo"));
  // COLUMNS is the environment, not the user's ask: clamped into the range, never refused
  const char* old = std::getenv("COLUMNS");
  const std::string saved = old != nullptr ? old : "";
  for (const auto& [columns, widest] :
       {std::pair{"100000", size_t{1000}}, std::pair{"5", size_t{100}}}) {
    ::setenv("COLUMNS", columns, 1);
    const auto r = run_cli("diff --color never" + ab);
    CHECK(r.exit_code == 0);
    CHECK(longest_line_columns(r.out) <= widest);
    CHECK(longest_line_columns(r.out) >= 40);
  }
  if (old != nullptr) {
    ::setenv("COLUMNS", saved.c_str(), 1);
  } else {
    ::unsetenv("COLUMNS");
  }
}

TEST_CASE("run: --threads above 1024 is refused before any work or output file",
          "[cli][bad-input]") {
  check_input_error(run_cli("generate -p hi -n 3 --threads 100000"),
                    "--threads 100000 is more than 1024");
  ds::test::TempDir dir;
  const fs::path trace = dir.path() / "t.h5";
  check_input_error(run_cli("run -q -p hi -n 3 --threads 100000 -o " + trace.string()),
                    "--threads 100000 is more than 1024");
  CHECK_FALSE(fs::exists(trace));
  CHECK(run_cli("generate -p hi -n 1 --threads 3").exit_code == 0);
}
