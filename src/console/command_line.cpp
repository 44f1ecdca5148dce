// Shell quoting and this process's command line.
#include "src/console/command_line.h"

namespace ds {
namespace {
std::string g_invocation;
}  // namespace

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=,:+@%") == std::string::npos) {
    return s;
  }
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string shell_command(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';  // (a quoted word is never empty)
    s += shell_quote(a);
  }
  return s;
}

void set_invocation(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (i > 0) g_invocation += ' ';
    g_invocation += shell_quote(argv[i]);
  }
}

const std::string& invocation() {
  return g_invocation;
}

}  // namespace ds
