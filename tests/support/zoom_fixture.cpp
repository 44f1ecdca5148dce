// The zoom tests' fixtures (see zoom_fixture.h).
#include "tests/support/zoom_fixture.h"

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/support/run_cli.h"
#include "tests/support/text.h"

namespace ds::test {

std::filesystem::path first_pass(const TempDir& dir, const std::string& name,
                                 const std::string& flags, int prompts) {
  const auto p = dir.path() / (name + ".txt");
  write_prompts(p, prompts);
  const auto t = dir.path() / (name + ".h5");
  const auto r = run_cli("run -q -n 24 --probes none --prompts " + p.string() + " " + flags +
                         " -o " + t.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return t;
}

std::filesystem::path single_token_prompts(const TempDir& dir) {
  const auto p = dir.path() / "single.jsonl";
  std::ofstream out(p);
  for (int id : {261, 300, 373, 403, 466, 500, 574, 600, 271, 399, 970, 969, 484, 22,  5,   7,
                 9,   10,  11,  401, 402, 404, 407, 433, 378, 440, 450, 460, 470, 480, 490, 510}) {
    out << "{\"ids\": [" << id << "]}\n";
  }
  return p;
}

int flip_step(const trace::SequenceInfo& a, const trace::SequenceInfo& b) {
  for (size_t p = a.prompt_len; p < a.tokens.size() && p < b.tokens.size(); ++p) {
    if (a.tokens[p] != b.tokens[p]) return static_cast<int>(p) - a.prompt_len;
  }
  return -1;
}

}  // namespace ds::test
