// What a trace holds, in one struct: root status, metadata, and per sequence the tokens and the
// recorded sites with shapes and dtypes. Used by `driftscope show` and tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trace/reader.h"

namespace ds::trace {

struct TraceSummary {
  std::string path;
  uint64_t file_bytes = 0;
  int format_version = 0;
  std::string tool_version;
  std::string producer;  // "driftscope 0.1.0", or a foreign writer's producer attribute
  bool complete = false;
  std::string stop_reason;
  std::string config_json, model_json, env_json, command_line;
  std::string certify_json;  // run --certify's verdict (certificate.h); "" when none
  // Set when the file is shorter than HDF5's record of its end; every row of every sequence was
  // then read, and a sequence with data past the cut is listed in `damaged`.
  std::optional<TraceReader::CutShort> cut_short;
  std::vector<SequenceInfo> sequences;
  // Sequences that could not be read (a damaged trace): index and the reader's error. The others
  // are summarized as usual.
  std::vector<std::pair<int, std::string>> damaged;
};

TraceSummary summarize(const TraceReader& reader);

// Reads every row of every dataset of every sequence (a block at a time) and the kernel table:
// throws ds::Error naming the first part that cannot be read, or a file cut short. For a resume
// that must not trust a trace it has not read (sweep, zoom: trace_done).
void read_whole(const TraceReader& reader);

// The summary as JSON (sites with name, shape, dtype; tokens; metadata parsed as objects; a
// damaged sequence as {"index", "damaged": why}, in index order with the others). Invalid UTF-8
// in recorded strings is written as U+FFFD.
std::string to_json(const TraceSummary& s);

}  // namespace ds::trace
