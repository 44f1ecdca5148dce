// A content digest of a trace: SHA-256 over every sequence's tokens, hidden rows, top-K ids and
// logits, log-sum-exp and full logits (raw bits, in file order). Metadata (times, paths, command
// line, config JSON) is left out, so two runs that computed the same numbers digest the same.
#pragma once

#include <filesystem>
#include <string>

namespace ds::test {

std::string trace_digest(const std::filesystem::path& trace);

}  // namespace ds::test
