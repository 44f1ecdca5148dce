// Command lines as a shell reads them: words quoted where needed, and this process's own command
// line (recorded in traces, shown in zoom.json and in hints).
#pragma once

#include <string>
#include <vector>

namespace ds {

// `s` as a shell word: as is when it holds only safe characters, else in single quotes.
std::string shell_quote(const std::string& s);
// A command line as one shell command: its words shell-quoted, joined by spaces.
std::string shell_command(const std::vector<std::string>& argv);

// Records the command line this process was started with (cli_main, before anything else).
void set_invocation(int argc, char** argv);
// The command line this process was started with, shell-quoted where needed (for traces).
const std::string& invocation();

}  // namespace ds
