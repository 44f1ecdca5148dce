// The table of commands: each one's name, the function that registers it on the CLI11 app (in its
// cmd_<name>.cpp), whether it reads traces from anyone, and what needs less memory. Adding a
// command: its cmd_<name>.cpp and one row of kCommands (docs/architecture.md, "How to add a
// command").
#pragma once

#include <functional>
#include <string_view>

namespace CLI {
class App;
}

namespace ds {

// What runs a command once it was chosen; returns its exit code.
using CommandRun = std::function<int()>;

struct Command {
  std::string_view name;
  // Gives `cmd` (the subcommand `name`) its description and options; returns what runs it.
  CommandRun (*add)(CLI::App* cmd);
  // Reads traces from anyone (its inputs, or those a resume finds in its folder), so runs in a
  // watched child (trace/read_supervisor.h).
  bool reads_untrusted_traces;
  // What needs less memory, said when the command ran out of it.
  std::string_view memory_hint;
  // An option that makes it read a trace from anyone (run --force-tokens): then it runs watched
  // too. Empty: none.
  std::string_view untrusted_with;
};

CommandRun register_generate(CLI::App* cmd);
CommandRun register_tokenize(CLI::App* cmd);
CommandRun register_run(CLI::App* cmd);
CommandRun register_show(CLI::App* cmd);
CommandRun register_diff(CLI::App* cmd);
CommandRun register_attribute(CLI::App* cmd);
CommandRun register_demo(CLI::App* cmd);
CommandRun register_synth(CLI::App* cmd);
CommandRun register_sweep(CLI::App* cmd);
CommandRun register_stats(CLI::App* cmd);
CommandRun register_zoom(CLI::App* cmd);
CommandRun register_explain(CLI::App* cmd);
CommandRun register_calibrate(CLI::App* cmd);

inline constexpr std::string_view kLessModel =
    "a smaller model, a shorter --max-new or a smaller --batch needs less";
inline constexpr std::string_view kLessTraces =
    "fewer or shorter traces (diff --seq compares some sequences) need less";

// In the order `driftscope --help` lists them.
inline constexpr Command kCommands[] = {
    {"generate", register_generate, false, kLessModel, {}},
    {"tokenize", register_tokenize, false, "shorter texts need less (split the file)", {}},
    {"run", register_run, false, kLessModel, "--force-tokens"},
    {"show", register_show, true, kLessTraces, {}},
    {"diff", register_diff, true, kLessTraces, {}},
    {"attribute", register_attribute, true, kLessTraces, {}},
    {"demo", register_demo, false, kLessModel, {}},
    {"synth", register_synth, false, "a smaller --shape or fewer --layers need less", {}},
    {"sweep", register_sweep, true, "a sweep of fewer configurations needs less", {}},
    {"stats", register_stats, true, kLessTraces, {}},
    {"zoom", register_zoom, true, kLessModel, {}},
    {"explain", register_explain, true, kLessModel, {}},
    {"calibrate", register_calibrate, true, kLessModel, {}},
};

}  // namespace ds
