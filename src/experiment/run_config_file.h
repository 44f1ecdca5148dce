// Run-configuration files (`--config FILE`, what `--dry-run` prints): TOML holding one
// `field = value` a line, read against the field table (run_config.h). The fields of a run
// configuration are top-level keys: TOML tables and dotted keys are refused, as are keys that
// are not fields (a command-line option such as `force` is named as one). Values keep their TOML
// type (1_000 is the integer 1000), and each field takes the types of its own.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/experiment/run_config.h"

namespace ds {

// One `key = value` line of a run-configuration file.
struct ConfigFileEntry {
  std::string key;                        // as written
  const RunConfigField* field = nullptr;  // null: no run-configuration field has that name
  FieldValue value;
  int line = 0;
};

// The entries of a run-configuration file's text, in file order (a leading UTF-8 byte order mark
// skipped, as in prompts files). `file` names it in messages. Throws ds::Error naming the file
// and the line for text that is not TOML, a table, a dotted key, an array or inline table, and a
// key given twice (also as `split-k` beside `split_k`).
std::vector<ConfigFileEntry> read_config_entries(std::string_view text, const std::string& file);

// Sets the fields of `c` that `entries` give, except those `given` says the command line gave
// (flags win). Throws ds::Error naming the file for an entry that is no field (`flag_of(key)`:
// the command-line option of that name, e.g. "--force", which the message then names; "" for
// none) and for a value its field does not take.
void apply_config_entries(RunConfig& c, const std::vector<ConfigFileEntry>& entries,
                          const std::string& file,
                          const std::function<bool(const RunConfigField&)>& given = {},
                          const std::function<std::string(const std::string& key)>& flag_of = {});

// `base` with a run-configuration file's text applied (read_config_entries, then
// apply_config_entries).
RunConfig config_from_toml(std::string_view text, const std::string& file, RunConfig base = {});

}  // namespace ds
