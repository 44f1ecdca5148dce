// The command-line interface: parses arguments, runs one command, maps errors to exit codes.
#pragma once

#include <string>
#include <vector>

namespace ds {

// Exit codes: 0 success; 1 a --fail-on condition held (diff); 2 usage or input error;
// 3 internal error; 130 a run interrupted by Ctrl-C; 141 stdout closed by its reader (| head).
// Errors print "driftscope: <message>" and, when the user can fix it, "hint: ...".
int cli_main(int argc, char** argv);

// `s` as a shell word: as is when it holds only safe characters, else in single quotes.
std::string shell_quote(const std::string& s);
// A command line as one shell command: its words shell-quoted, joined by spaces.
std::string shell_command(const std::vector<std::string>& argv);

// The command line this process was started with, shell-quoted where needed (for traces).
const std::string& invocation();

}  // namespace ds
