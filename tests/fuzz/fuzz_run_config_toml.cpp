// Fuzz target: a run configuration TOML file (`--config FILE`) read by CLI11's TOML reader
// into the run-config options, then validated. A config that validates must print (to_toml, as
// --dry-run does) to a file that reads back to the same config.
#include "common/error.h"
#include "src/cli/run_config_args.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ds::fuzz::guarded([&] {
    const auto path = ds::fuzz::write_input({data, size}, "config.toml");
    const ds::RunConfig c = ds::with_config_file(ds::RunConfig{}, path.string());
    ds::validate(c);
    const std::string toml = ds::to_toml(c);
    const auto again_path = ds::fuzz::write_input(
        {reinterpret_cast<const uint8_t*>(toml.data()), toml.size()}, "config_again.toml");
    ds::RunConfig again;
    try {
      again = ds::with_config_file(ds::RunConfig{}, again_path.string());
    } catch (const ds::Error& e) {
      ds::fuzz::require(false, "--dry-run's TOML reads back without an error");
    }
    ds::fuzz::require(ds::to_json(again) == ds::to_json(c),
                      "--dry-run's TOML reads back to the same config");
  });
}
