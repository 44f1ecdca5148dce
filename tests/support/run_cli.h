// Runs the driftscope executable in a test and captures its exit code, stdout and stderr.
#pragma once

#include <filesystem>
#include <string>

namespace ds::test {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `args` is appended to the executable path and run through /bin/sh; with `cwd`, in that folder.
CliResult run_cli(const std::string& args, const std::filesystem::path& cwd = {});

// Checks the CLI's input-error contract: exit code 2, "driftscope: <message>" containing
// `needle` on the first line, then a "hint: " line.
void check_input_error(const CliResult& r, const std::string& needle);

// A small trace of the bundled model (`run --prompt-ids 1,400 -n 3 -q <flags>`) written to
// dir/name; REQUIREs the run to succeed and returns the trace's path.
std::string run_trace(const std::filesystem::path& dir, const std::string& name,
                      const std::string& flags = "");

}  // namespace ds::test
