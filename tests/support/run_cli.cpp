// Runs the driftscope executable through /bin/sh with stdout and stderr captured in temp files.
#include "tests/support/run_cli.h"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "tests/support/paths.h"
#include "tests/support/text.h"

namespace ds::test {

CliResult run_cli(const std::string& args, const std::filesystem::path& cwd) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path();
  const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const auto out = dir / ("ds_cli_out_" + tag);
  const auto err = dir / ("ds_cli_err_" + tag);
  const std::string cmd = (cwd.empty() ? "" : "cd '" + cwd.string() + "' && ") + "'" + exe() +
                          "' " + args + " >'" + out.string() + "' 2>'" + err.string() +
                          "' </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

void check_input_error(const CliResult& r, const std::string& needle) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.starts_with("driftscope: "));
  CHECK(r.err.find(needle) != std::string::npos);
  CHECK(r.err.find("\nhint: ") != std::string::npos);
}

std::string run_trace(const std::filesystem::path& dir, const std::string& name,
                      const std::string& flags) {
  const std::string path = (dir / name).string();
  REQUIRE(run_cli("run --prompt-ids 1,400 -n 3 -q " + flags + " -o " + path).exit_code == 0);
  return path;
}

}  // namespace ds::test
