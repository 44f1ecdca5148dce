// The zoom and explain tests' fixtures (tests/cli/test_cli_zoom*.cpp, test_cli_explain*.cpp): cheap
// first-pass traces of the bundled model and where two traces' tokens part, read from the traces
// themselves.
#pragma once

#include <filesystem>
#include <string>

#include "tests/support/temp_dir.h"
#include "trace/reader.h"

namespace ds::test {

// A first-pass trace DIR/<name>.h5 of the first `prompts` test prompts (write_prompts), 24 tokens,
// no hidden states, with `flags` added to `driftscope run`.
std::filesystem::path first_pass(const TempDir& dir, const std::string& name,
                                 const std::string& flags, int prompts = 4);

// DIR/single.jsonl: 32 prompts of one token each ({"ids": [id]} lines), for explain's tests (a
// prefix cache has no prefix to reuse in them).
std::filesystem::path single_token_prompts(const TempDir& dir);

// The first generated step where the two sequences' tokens differ, -1 when none.
int flip_step(const trace::SequenceInfo& a, const trace::SequenceInfo& b);

}  // namespace ds::test
