// Runs the driftscope executable in a test and captures its exit code, stdout and stderr.
#pragma once

#include <string>

namespace ds::test {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `args` is appended to the executable path and run through /bin/sh.
CliResult run_cli(const std::string& args);

// Checks the CLI's input-error contract: exit code 2, "driftscope: <message>" containing
// `needle` on the first line, then a "hint: " line.
void check_input_error(const CliResult& r, const std::string& needle);

}  // namespace ds::test
