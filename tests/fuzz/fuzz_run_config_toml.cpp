// Fuzz target: a run configuration TOML file (`--config FILE`) read against the field table
// (src/experiment/run_config_file.h), then validated. A config that validates must print (to_toml,
// as --dry-run does) to a file that reads back to the same config.
#include "common/error.h"
#include "src/experiment/run_config_file.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ds::fuzz::guarded([&] {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const ds::RunConfig c = ds::config_from_toml(text, "config.toml");
    ds::validate(c);
    const std::string toml = ds::to_toml(c);
    ds::RunConfig again;
    try {
      again = ds::config_from_toml(toml, "config_again.toml");
    } catch (const ds::Error& e) {
      ds::fuzz::require(false, "--dry-run's TOML reads back without an error");
    }
    ds::fuzz::require(again == c && ds::to_json(again) == ds::to_json(c),
                      "--dry-run's TOML reads back to the same config");
  });
}
