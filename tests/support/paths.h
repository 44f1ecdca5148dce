// Paths of the bundled models and the built executable, for tests.
#pragma once

#include <string>

namespace ds::test {

inline std::string source_dir() { return DRIFTSCOPE_SOURCE_DIR; }
inline std::string stories_bin() { return source_dir() + "/models/stories260K/stories260K.bin"; }
inline std::string stories_tok() { return source_dir() + "/models/stories260K/tok512.bin"; }
inline std::string stories_hf() { return source_dir() + "/models/stories260K-hf"; }
inline std::string aidreams_bin() { return source_dir() + "/models/aidreams260K/aidreams260K.bin"; }
inline std::string aidreams_tok() { return source_dir() + "/models/aidreams260K/tok512.bin"; }
inline std::string exe() { return DRIFTSCOPE_EXE; }

}  // namespace ds::test
