// The zoom tests' fixtures (see zoom_fixture.h).
#include "tests/support/zoom_fixture.h"

#include <catch2/catch.hpp>

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

int flip_step(const trace::SequenceInfo& a, const trace::SequenceInfo& b) {
  for (size_t p = a.prompt_len; p < a.tokens.size() && p < b.tokens.size(); ++p) {
    if (a.tokens[p] != b.tokens[p]) return static_cast<int>(p) - a.prompt_len;
  }
  return -1;
}

}  // namespace ds::test
