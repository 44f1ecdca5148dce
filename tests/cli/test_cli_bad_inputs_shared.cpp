// The inputs driftscope run and the Python recorder (driftscope-trace run) must treat alike:
// tests/data/bad_inputs/run.json, one table read here against driftscope and by
// tests/engines/test_recorder_basics.py against the recorder. A bad case exits 2 with its message
// on the "driftscope: " line and its hint (driftscope's own where the table names one) on the
// "hint: " line, and writes no trace; a good one records.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace fs = std::filesystem;

namespace {

// `text` with every "{dir}" replaced by `dir`.
std::string in_dir(std::string text, const std::string& dir) {
  for (size_t at = text.find("{dir}"); at != std::string::npos; at = text.find("{dir}", at)) {
    text.replace(at, 5, dir);
    at += dir.size();
  }
  return text;
}

// One argument for /bin/sh, single-quoted.
std::string quoted(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

TEST_CASE("driftscope run treats the shared bad-input table as the Python recorder does",
          "[cli][bad-input]") {
  const nlohmann::json table =
      ds::test::slurp_json(ds::test::source_dir() + "/tests/data/bad_inputs/run.json");
  REQUIRE(table["cases"].size() >= 1);
  ds::test::TempDir tmp;
  int n = 0;
  for (const auto& c : table["cases"]) {
    const std::string name = c["name"];
    INFO("case: " << name);
    const fs::path dir = tmp.path() / std::to_string(n++);
    fs::create_directories(dir);
    const nlohmann::json files = c.value("files", nlohmann::json::object());
    for (const auto& [file, text] : files.items()) {
      std::ofstream(dir / file, std::ios::binary) << text.get<std::string>();
    }
    const fs::path out = dir / "out.h5";
    std::string args = "run --model " +
                       quoted(ds::test::source_dir() + "/" + table["model"].get<std::string>()) +
                       " -n 1 -q -o " + quoted(out.string());
    for (const auto& a : c["args"]) args += " " + quoted(in_dir(a, dir.string()));
    const auto r = ds::test::run_cli(args);
    if (c["exit"] == 0) {
      INFO("stderr: " << r.err);
      CHECK(r.exit_code == 0);
      CHECK(fs::exists(out));
      continue;
    }
    const std::string message = in_dir(c["message"], dir.string());
    ds::test::check_input_error(r, message);
    CHECK(r.err.substr(0, r.err.find('\n')).find(message) != std::string::npos);  // first line
    const std::string hint = c.value("driftscope_hint", c["hint"].get<std::string>());
    const size_t hint_line = r.err.find("\nhint: ");
    CHECK((hint_line != std::string::npos && r.err.find(hint, hint_line) != std::string::npos));
    CHECK(r.exit_code == c["exit"].get<int>());
    CHECK_FALSE(fs::exists(out));
  }
}
