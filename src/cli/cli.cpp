// CLI entry: one error boundary for every command (exit codes documented in cli.h and docs/cli.md).
#include "src/cli/cli.h"

#include <csignal>
#include <cstdio>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "src/cli/commands.h"
#include "common/error.h"

namespace ds {

namespace {
std::string g_invocation;

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=,:+@%") == std::string::npos) {
    return s;
  }
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

const std::string& invocation() { return g_invocation; }

int cli_main(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) g_invocation += (i ? " " : "") + shell_quote(argv[i]);
  std::signal(SIGPIPE, SIG_IGN);  // `driftscope ... | head` ends quietly
  CLI::App app{
      "driftscope: find where two runs of the same LLM, under two runtime configurations, part "
      "ways.\nRuns a transformer on a CPU reference backend, taps every layer boundary, and "
      "compares runs.",
      "driftscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("driftscope ") + DRIFTSCOPE_VERSION);
  std::vector<std::pair<std::string, CommandRun>> commands = {
      {"generate", register_generate(app)},
      {"tokenize", register_tokenize(app)},
      {"run", register_run(app)},
      {"show", register_show(app)},
      {"diff", register_diff(app)},
      {"attribute", register_attribute(app)},
      {"demo", register_demo(app)},
      {"synth", register_synth(app)},
      {"sweep", register_sweep(app)},
      {"stats", register_stats(app)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help / version / the error
    return code == 0 ? 0 : 2;
  }
  try {
    for (const auto& [name, run] : commands) {
      if (app.got_subcommand(name)) return run();
    }
    return 2;
  } catch (const Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "driftscope: {}\n", e.what());
    if (!e.hint().empty()) fmt::print(stderr, "hint: {}\n", e.hint());
    return 2;
  } catch (const std::bad_alloc&) {  // what the up-front memory checks did not foresee
    std::fflush(stdout);
    fmt::print(stderr, "driftscope: out of memory\nhint: a smaller model, a shorter --max-new or "
                       "a smaller --batch needs less; or use a machine with more memory\n");
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "driftscope: internal error: {}\n", e.what());
    return 3;
  }
}

}  // namespace ds
