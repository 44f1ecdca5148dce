// CLI flags of the run configuration (field names with dashes), shared by generate and run.
#pragma once

#include "src/run_config.h"

namespace CLI {
class App;
}

namespace ds {

void add_run_config_options(CLI::App& cmd, RunConfig& config);

}  // namespace ds
