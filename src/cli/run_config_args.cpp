// CLI flags of the run configuration; every knob of docs/configurations.md.
#include "src/cli/run_config_args.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "kernels/cpu/cpu_exec.h"
#include "src/experiment/run_config_file.h"
#include "src/model/text_file.h"

namespace ds {

CLI::Validator seed_in_range() {
  return CLI::Validator(
      [](std::string& v) {
        try {
          parse_seed(v);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      },
      "", "SEED");
}

void add_run_config_options(CLI::App& cmd, RunConfigArgs& a) {
  cmd.add_option("--config", a.config_file,
                 "read the run configuration from a TOML file (keys: the field names, e.g. "
                 "dtype = \"bf16\"); flags given on the command line win");
  // One option per field of the table, parsed by the field as a --config file's value is; the
  // default shown is the field's value in a.config as the command set it up.
  for (const RunConfigField& f : run_config_fields()) {
    RunConfig& c = a.config;
    cmd.add_option(
           f.flag,
           [&c, &f](const CLI::results_t& given) {
             try {
               f.set(c, f, {FieldValue::Kind::word, given.back()});
             } catch (const Error& e) {  // named as CLI11 names a malformed value: "--batch: ..."
               const std::string flag = f.flag;
               throw Error(fmt::format("{}: {}", flag.substr(flag.find("--")), e.what()), e.hint());
             }
             return true;
           },
           f.help)
        ->type_name(f.type_name)
        ->default_str(f.get(c).text)
        ->group(f.test_only ? "" : "Run configuration (docs/configurations.md)");  // "": hidden
  }
  cmd.add_flag("--dry-run", a.dry_run, "print the resolved configuration and exit");
  // Not a field of RunConfig: threads change the speed of the CPU backend, never its numbers.
  cmd.add_option("--threads", a.threads,
                 fmt::format("threads of the CPU backend, 1..{0} (default: every core this "
                             "process may use, at most {0}); any N gives the same bits",
                             ops::kMaxCpuThreads))
      ->type_name("N");
}

void add_compression_option(CLI::App& cmd, std::string& compression) {
  cmd.add_option("--compression", compression,
                 "filters of the trace's datasets: none (no filter: the cheapest to write and to "
                 "diff), deflate (HDF5 shuffle + deflate level 1: up to 16% smaller when "
                 "generation is fast, e.g. a small model with long sequences), or deflate1 ... "
                 "deflate9 (shuffle + deflate at that level); the values read back are the same "
                 "bits with any choice (docs/trace-format.md)")
      ->type_name("NAME")
      ->capture_default_str();
}

void apply_threads(const RunConfigArgs& a) {
  if (a.threads) {
    const std::string range = fmt::format(
        "--threads takes 1..{}; without it the CPU backend uses every core", ops::kMaxCpuThreads);
    if (*a.threads < 1) throw Error(fmt::format("--threads {} must be >= 1", *a.threads), range);
    if (*a.threads > ops::kMaxCpuThreads) {
      throw Error(fmt::format("--threads {} is more than {}", *a.threads, ops::kMaxCpuThreads),
                  range);
    }
    ops::set_cpu_threads(*a.threads);
  }
  // started now: a system that refuses them says so before any output file, and loading the
  // model scans its weights on them (check_finite_weights)
  ops::start_cpu_threads();
}

namespace {

// The option of field f on `cmd` (its long name), or null.
const CLI::Option* field_option(const CLI::App& cmd, const RunConfigField& f) {
  std::string flag = f.flag;
  return cmd.get_option_no_throw(flag.substr(flag.find("--")));
}

std::vector<ConfigFileEntry> config_file_entries(const std::string& file) {
  return read_config_entries(
      read_text_file(file, kMaxRunConfigBytes, "config file",
                     "--config takes a TOML file of run-config fields, such as "
                     "configs/bf16-bs8.toml"),
      file);
}

}  // namespace

std::string option_named(const CLI::App* cmd, const std::string& key) {
  std::string name = key;
  for (char& ch : name) ch = ch == '_' ? '-' : ch;
  const std::string flag = (name.size() == 1 ? "-" : "--") + name;
  return cmd != nullptr && cmd->get_option_no_throw(flag) != nullptr ? flag : std::string();
}

void apply_config_file(CLI::App& cmd, RunConfigArgs& a) {
  if (a.config_file.empty()) return;
  apply_config_entries(
      a.config, config_file_entries(a.config_file), a.config_file,
      [&](const RunConfigField& f) {
        const CLI::Option* op = field_option(cmd, f);
        return op != nullptr && op->count() > 0;  // given on the command line
      },
      [&](const std::string& key) { return option_named(&cmd, key); });
}

RunConfig with_given_flags(const CLI::App& cmd, RunConfig base,
                           const std::function<bool(const std::string&)>& pick) {
  for (const RunConfigField& f : run_config_fields()) {
    const CLI::Option* given = field_option(cmd, f);
    if (given == nullptr || given->count() == 0 || !pick(given->get_lnames().front())) continue;
    f.set(base, f, {FieldValue::Kind::word, given->results().back()});
  }
  return base;
}

RunConfig with_config_file(RunConfig base, const std::string& file, const CLI::App* cmd) {
  if (file.empty()) return base;
  apply_config_entries(base, config_file_entries(file), file, {},
                       [&](const std::string& key) { return option_named(cmd, key); });
  return base;
}

bool print_dry_run(const RunConfigArgs& a) {
  if (!a.dry_run) return false;
  fmt::print("{}", to_toml(a.config));
  return true;
}

}  // namespace ds
