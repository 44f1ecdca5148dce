// Damages a copy of a trace for a test with tests/trace/damage_trace.py (h5py, the system
// python3): `args` is its command line, e.g. "zero-chunk FILE seq/1/tokens 0". 0 when it worked.
#pragma once

#include <cstdlib>
#include <string>

#include "tests/support/paths.h"

namespace ds::test {

inline int damage(const std::string& args) {
  const std::string cmd = "/usr/bin/python3 " + source_dir() + "/tests/trace/damage_trace.py " +
                          args + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0 ? 0 : 1;
}

}  // namespace ds::test
