// Zoom's replay of a trace written by the Python recorder (driftscope_trace: its transformers or
// its llama.cpp recorder): the recorder's own command, with the options that change numerics or
// tokens rebuilt from the trace's config_json and model_json, teacher-forced on zoom's prompts
// file with every probe. The command is $DRIFTSCOPE_TRACE when set, else driftscope-trace on PATH.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "trace/reader.h"

namespace ds {

struct RecorderReplay {
  std::string engine;                // "transformers" or "llama.cpp"
  std::string producer;              // of the original trace
  std::vector<std::string> options;  // the subcommand and its options, the prompts and -o apart
  int batch = 1;
  std::string device;                // "cpu", "cuda", "cuda:1", ...
  std::vector<std::string> command;  // the recorder, resolved (find_recorder); empty: not looked up
};

// Whether the trace was written by the Python recorder (producer "driftscope_trace ...").
bool written_by_recorder(const trace::TraceReader& t);

// The replay of a recorder trace. Throws ds::Error naming the trace when its config_json or
// model_json lacks what the command needs, or it was recorded from another engine.
RecorderReplay recorder_replay(const trace::TraceReader& t);

// The recorder's command line for `r` (its resolved command, else `driftscope-trace`): the
// options, then --prompts, --probes all, -o, --force, -q.
std::vector<std::string> recorder_argv(const RecorderReplay& r,
                                       const std::filesystem::path& prompts,
                                       const std::filesystem::path& trace);

// Sets r.command: the words of $DRIFTSCOPE_TRACE when set (split at spaces), else
// driftscope-trace, the first word resolved on PATH (unless it holds a '/'). Throws ds::Error
// naming the recorder that wrote `source`, with how to install it and the exact replay command,
// when there is no such executable.
void find_recorder(RecorderReplay& r, const std::string& source,
                   const std::filesystem::path& prompts, const std::filesystem::path& trace);

// Whether `trace` is a complete replay of `r` by the recorder with every probe: a recorder trace
// whose rebuilt options equal r's.
bool recorder_replay_done(const std::filesystem::path& trace, const RecorderReplay& r);

}  // namespace ds
