// `show` and `diff` on damaged traces: real traces damaged with h5py (tests/trace/damage_trace.py),
// independently of driftscope's reader. What cannot be read is named and left out, the rest is
// compared; inconsistent metadata is named as damage, never silently half-used; invalid UTF-8
// in what a trace records is shown as U+FFFD, never a crash.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/damage_trace.h"
#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace fs = std::filesystem;
using ds::test::damage;
using ds::test::has;
using ds::test::run_cli;
using nlohmann::json;

namespace {

// A real trace of 3 story prompts with every probe and logits; copies of it get damaged. Deflated:
// a zeroed compressed chunk is unreadable, where a zeroed unfiltered one is only zeros.
const fs::path& reference_trace(const ds::test::TempDir& dir) {
  static fs::path made;
  made = dir.path() / "a.h5";
  const auto prompts = dir.path() / "prompts.txt";
  ds::test::write_prompts(prompts, 3);
  REQUIRE(run_cli("run --prompts " + prompts.string() +
                  " -n 12 -q --probes all --compression deflate -o " + made.string())
              .exit_code == 0);
  return made;
}

fs::path copy_of(const fs::path& a, const std::string& name) {
  const fs::path b = a.parent_path() / name;
  fs::copy_file(a, b, fs::copy_options::overwrite_existing);
  return b;
}

json diff_json(const fs::path& a, const fs::path& b, int& exit_code) {
  auto r = run_cli("diff -q --json - " + a.string() + " " + b.string());
  INFO(r.err);
  exit_code = r.exit_code;
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("damaged trace: a zeroed chunk skips one site of one sequence, the rest is compared",
          "[cli][damaged]") {
  ds::test::TempDir dir;
  const auto a = reference_trace(dir);
  const auto b = copy_of(a, "b.h5");
  REQUIRE(damage("zero-chunk " + b.string() + " seq/1/hidden/L1/out 0") == 0);
  // h5py, not our reader, says the dataset is now unreadable; the same dataset of A reads.
  CHECK(damage("read " + b.string() + " seq/1/hidden/L1/out") == 1);
  CHECK(damage("read " + a.string() + " seq/1/hidden/L1/out") == 0);

  int rc = -1;
  const json j = diff_json(a, b, rc);
  CHECK(rc == 0);
  REQUIRE(j["skipped"].size() == 1);
  CHECK(j["skipped"][0]["seq"] == 1);
  CHECK(j["skipped"][0]["what"] == "hidden/L1/out");
  CHECK(has(j["skipped"][0]["why"].get<std::string>(), "is damaged"));
  CHECK(j["summary"]["sequences"] == 3);
  for (const auto& s : j["sequences"]) {
    CHECK(s["verdict"] == "identical");  // B is a copy: everything that was read is identical
    bool has_l1_out = false, has_l0_out = false;
    for (const auto& d : s["drift"]) {
      has_l1_out |= d["site"] == "L1/out";
      has_l0_out |= d["site"] == "L0/out";
    }
    CHECK(has_l0_out);
    CHECK(has_l1_out == (s["index"] != 1));
  }
  auto t = run_cli("diff --color never " + a.string() + " " + b.string());
  CHECK(t.exit_code == 0);
  CHECK(has(t.out, "seq 1: hidden/L1/out skipped"));
  // A gate cannot vouch for what was not read.
  auto g = run_cli("diff -q --fail-on flip " + a.string() + " " + b.string());
  CHECK(g.exit_code == 1);
  CHECK(has(g.err, "gate FAIL: seq 1: hidden/L1/out skipped (damaged trace)"));
}

TEST_CASE("damaged trace: a zeroed tokens chunk skips that sequence in show and diff",
          "[cli][damaged]") {
  ds::test::TempDir dir;
  const auto a = reference_trace(dir);
  const auto b = copy_of(a, "b.h5");
  REQUIRE(damage("zero-chunk " + b.string() + " seq/2/tokens 0") == 0);
  CHECK(damage("read " + b.string() + " seq/2/tokens") == 1);

  int rc = -1;
  const json j = diff_json(a, b, rc);
  CHECK(rc == 0);
  REQUIRE(j["skipped"].size() == 1);
  CHECK(j["skipped"][0]["seq"] == 2);
  CHECK(j["skipped"][0]["what"] == "sequence");
  CHECK(has(j["skipped"][0]["why"].get<std::string>(), "is damaged: /seq/2"));
  CHECK(j["summary"]["sequences"] == 2);

  auto s = run_cli("show " + b.string());
  INFO(s.out << s.err);
  CHECK(s.exit_code == 0);
  CHECK(has(s.out, "seq 2    DAMAGED, not read: "));
  CHECK(has(s.out, "seq 1    prompt"));
  auto sj = run_cli("show --json " + b.string());
  REQUIRE(sj.exit_code == 0);
  const json doc = json::parse(sj.out);
  REQUIRE(doc["sequences"].size() == 3);
  CHECK(doc["sequences"][2]["index"] == 2);
  CHECK(doc["sequences"][2]["damaged"].is_string());
  CHECK(doc["sequences"][1]["tokens"].is_array());
}

TEST_CASE("damaged trace: inconsistent sequence metadata is named, not half-used",
          "[cli][damaged]") {
  ds::test::TempDir dir;
  const auto a = reference_trace(dir);
  struct Case {
    std::string name, damage, needle;
  };
  const Case cases[] = {
      {"tokens-2d", "tokens-2d {} 1", "/seq/1/tokens has rank 2, expected 1"},
      {"gen-len", "int-attr {} seq/1 gen_len -3", "gen_len -3 out of range"},
      {"width", "widen {} seq/1/hidden/L0/out", "is 129 wide, other sites 128"},
      {"rows", "drop-rows {} seq/1/hidden/L1/mlp_out 2", "rows"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const auto b = copy_of(a, c.name + ".h5");
    std::string args = c.damage;
    args.replace(args.find("{}"), 2, b.string());
    REQUIRE(damage(args) == 0);
    auto s = run_cli("show " + b.string());
    INFO(s.out << s.err);
    CHECK(s.exit_code == 0);
    CHECK(has(s.out, "seq 1    DAMAGED, not read: trace '" + b.string() + "' is damaged: /seq/1"));
    CHECK(has(s.out, c.needle));
    int rc = -1;
    const json j = diff_json(a, b, rc);
    CHECK(rc == 0);
    REQUIRE(j["skipped"].size() == 1);
    CHECK(j["skipped"][0]["seq"] == 1);
    CHECK(j["skipped"][0]["what"] == "sequence");
    CHECK(has(j["skipped"][0]["why"].get<std::string>(), c.needle));
    CHECK(j["summary"]["sequences"] == 2);
  }
}

TEST_CASE("damaged trace: /meta config_json that is not JSON is an input error", "[cli][damaged]") {
  ds::test::TempDir dir;
  const auto a = reference_trace(dir);
  const auto b = copy_of(a, "b.h5");
  REQUIRE(damage("attr " + b.string() + " meta config_json '{\"dtype\": fp32'") == 0);
  ds::test::check_input_error(run_cli("show " + b.string()),
                              "is damaged: attribute /meta@config_json is not a JSON object");
  ds::test::check_input_error(run_cli("diff " + a.string() + " " + b.string()),
                              "is damaged: attribute /meta@config_json is not a JSON object");
}

TEST_CASE("damaged trace: a truncated file is an input error, not a crash", "[cli][damaged]") {
  ds::test::TempDir dir;
  const auto a = reference_trace(dir);
  const auto b = copy_of(a, "b.h5");
  fs::resize_file(b, fs::file_size(b) / 2);
  auto s = run_cli("show " + b.string());
  INFO(s.out << s.err);
  CHECK((s.exit_code == 0 || s.exit_code == 2));
  CHECK(s.err.find("internal error") == std::string::npos);
  auto d = run_cli("diff -q " + a.string() + " " + b.string());
  INFO(d.err);
  CHECK((d.exit_code == 0 || d.exit_code == 2));
  if (d.exit_code == 2) CHECK(d.err.starts_with("driftscope: "));
}

TEST_CASE("show: invalid UTF-8 in a recorded prompt or command line shows as U+FFFD",
          "[cli][damaged]") {
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5";
  // The prompt's bytes: "Once" then 0xFF 0xC3 (never valid in UTF-8) then " upon".
  auto r = run_cli("run --prompt \"$(printf 'Once \\377\\303 upon')\" -n 6 -q -o " + t.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto s = run_cli("show " + t.string());
  INFO(s.out << s.err);
  CHECK(s.exit_code == 0);
  CHECK(has(s.out, "\xEF\xBF\xBD"));  // U+FFFD in the prompt line
  auto sj = run_cli("show --json " + t.string());
  INFO(sj.err);
  REQUIRE(sj.exit_code == 0);
  const json doc = json::parse(sj.out);  // valid UTF-8 JSON, or this throws
  CHECK(has(doc["command_line"].get<std::string>(), "Once \xEF\xBF\xBD"));
  // The prompt's invalid bytes also reach diff's config and JSON without a crash.
  auto d = run_cli("diff -q --json - " + t.string() + " " + t.string());
  CHECK(d.exit_code == 0);
  CHECK_NOTHROW(json::parse(d.out));
}
