// Registration of each subcommand on the CLI11 app.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace ds {

// Each register_* adds a subcommand and returns the function to run when it was chosen.
using CommandRun = std::function<int()>;
CommandRun register_generate(CLI::App& app);
CommandRun register_tokenize(CLI::App& app);
CommandRun register_run(CLI::App& app);
CommandRun register_show(CLI::App& app);
CommandRun register_diff(CLI::App& app);
CommandRun register_demo(CLI::App& app);
CommandRun register_synth(CLI::App& app);
CommandRun register_attribute(CLI::App& app);
CommandRun register_sweep(CLI::App& app);
CommandRun register_stats(CLI::App& app);
CommandRun register_zoom(CLI::App& app);

}  // namespace ds
