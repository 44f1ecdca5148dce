// The command-line interface: parses arguments, runs one command, maps errors to exit codes.
#pragma once

namespace ds {

// Exit codes: 0 success; 1 a --fail-on condition held (diff); 2 usage or input error;
// 3 internal error; 130 a run interrupted by Ctrl-C; 141 stdout closed by its reader (| head).
// Errors print "driftscope: <message>" and, when the user can fix it, "hint: ...".
int cli_main(int argc, char** argv);

}  // namespace ds
