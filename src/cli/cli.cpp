// CLI entry: one error boundary for every command (exit codes documented in cli.h and docs/cli.md).
#include "src/cli/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/error.h"
#include "common/io_error.h"
#include "common/printable.h"
#include "src/cli/commands.h"
#include "src/console/command_line.h"
#include "src/console/interrupt.h"
#include "src/console/output.h"
#include "trace/read_supervisor.h"
#include "trace/writer.h"

namespace ds {

namespace {

// "driftscope: <message>" and "hint: <hint>" on stderr; 2, the exit code of an input error.
// When stderr itself cannot be written, only the exit code is left to tell.
int report_error(const std::string& message, const std::string& hint) {
  try {
    std::fflush(stdout);
    fmt::print(stderr, "driftscope: {}\n", printable(message));  // names from the user: escaped
    if (!hint.empty()) fmt::print(stderr, "hint: {}\n", printable(hint));
  } catch (const std::exception& e) {
    if (is_output_closed(e)) return kExitOutputClosed;
  }
  return 2;
}

// What is wrong with `value`, which CLI11 could not convert to the number option `name` takes:
// "--pages 'abc' is not a number" rather than "Could not convert: --pages = abc".
std::string conversion_message(const std::string& name, const std::string& value) {
  const auto whole = [](const std::string& v) {
    size_t i = (!v.empty() && (v[0] == '-' || v[0] == '+')) ? 1 : 0;
    if (i == v.size()) return false;
    for (; i < v.size(); ++i) {
      if (v[i] < '0' || v[i] > '9') return false;
    }
    return true;
  };
  if (whole(value)) return fmt::format("{} {} is out of range", name, value);
  char* end = nullptr;
  errno = 0;
  std::strtod(value.c_str(), &end);
  const bool decimal = !value.empty() && end != nullptr && *end == '\0' &&
                       value.find_first_of("xXnNiI") == std::string::npos;  // no hex, inf, nan
  if (decimal && errno == ERANGE) return fmt::format("{} {} is out of range", name, value);
  if (decimal) return fmt::format("{} {} is not a whole number", name, value);
  return fmt::format("{} '{}' is not a number", name, value);
}

// The message of a CLI11 parse error: a failed conversion of a number says what the value is not.
std::string parse_error_message(const CLI::ParseError& e) {
  const std::string what = e.what(), head = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (e.get_name() == "ConversionError" && what.starts_with(head) && eq != std::string::npos) {
    return conversion_message(what.substr(head.size(), eq - head.size()), what.substr(eq + 3));
  }
  return what;
}

// " run": the deepest subcommand parsed (before an error), "" for none.
std::string parsed_command(const CLI::App& app) {
  std::string command;
  for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
    sub = sub->get_subcommands().front();
    command += " " + sub->get_name();
  }
  return command;
}

// CLI11's errors in the form of every other input error; --help and --version print as CLI11
// does and exit 0.
int report_parse_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
  const std::string command = parsed_command(app);
  if (command.empty() && argc > 1 && argv[1][0] != '-') {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    return report_error(fmt::format("unknown command '{}'", argv[1]),
                        fmt::format("commands: {} (driftscope --help)", names));
  }
  if (command.empty() && argc > 1 && e.get_name() == "RequiredError") {  // `driftscope --bogus`
    return report_error(fmt::format("no command given (the first argument is '{}')", argv[1]),
                        "options go after the command, e.g. driftscope run --help; driftscope "
                        "--help lists the commands");
  }
  if (command.empty() && argc <= 1) {
    return report_error("no command given", "driftscope --help lists the commands");
  }
  return report_error(parse_error_message(e), fmt::format("see driftscope{} --help", command));
}

// A std::filesystem error in the form of the others: "<what failed> 'path': <reason>", without
// libstdc++'s "filesystem error:" wrapper and bracketed paths.
std::string filesystem_message(const std::filesystem::filesystem_error& e) {
  std::string what = e.what();
  const std::string wrapper = "filesystem error: ", reason = e.code().message();
  if (what.starts_with(wrapper)) what.erase(0, wrapper.size());
  what = what.substr(0, what.find(": " + reason));
  if (!e.path1().empty()) what += " '" + e.path1().string() + "'";
  if (!e.path2().empty()) what += " and '" + e.path2().string() + "'";
  return what + ": " + reason;
}

// Options whose value is free text, where an empty one means the empty text.
bool takes_free_text(const CLI::Option& opt) {
  return opt.check_lname("prompt") || opt.check_lname("text");
}

// An option given an empty value (`--json ''`, `--threads ''`, `--probes ''`) is refused, never
// read as the option left out (a variable that a script left unset must not change what runs).
void refuse_empty_values(const CLI::App& cmd) {
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() == 0 || opt->get_type_size_max() == 0 || takes_free_text(*opt)) continue;
    for (const std::string& v : opt->results()) {
      if (!v.empty()) continue;
      if (opt->get_lnames().empty() && opt->get_snames().empty()) {  // a positional argument
        throw Error(fmt::format("the {} argument is empty", opt->get_name(true)),
                    fmt::format("see driftscope {} --help", cmd.get_name()));
      }
      throw Error(fmt::format("{} is given an empty value", opt->get_name()),
                  fmt::format("give {} a value, or leave it out for its default (see driftscope "
                              "{} --help)",
                              opt->get_name(), cmd.get_name()));
    }
  }
}

// What needs less memory, for the command that ran out of it.
std::string out_of_memory_hint(const Command& command) {
  return std::string(command.memory_hint) + "; or use a machine with more memory";
}

}  // namespace

int cli_main(int argc, char** argv) {
  set_invocation(argc, argv);
  // A closed pipe shows up as EPIPE, so that `driftscope ... | head` ends quietly (output.h)
  // after unwinding (a trace being written is closed properly).
  std::signal(SIGPIPE, SIG_IGN);
  install_cleanup_handlers();  // a signal removes the hidden files being written
  CLI::App app{
      "driftscope: find where two runs of the same LLM, under two runtime configurations, part "
      "ways.\nRuns a transformer on a CPU reference backend, taps every layer boundary, and "
      "compares runs.",
      "driftscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("driftscope ") + DRIFTSCOPE_VERSION);
  std::vector<CommandRun> runs;
  for (const Command& c : kCommands) runs.push_back(c.add(app.add_subcommand(std::string(c.name))));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e, argc, argv);
  } catch (const Error& e) {  // a value its option refuses (a run-config field's), as CLI11's
    const std::string see = fmt::format("see driftscope{} --help", parsed_command(app));
    return report_error(e.what(), e.hint().empty() ? see : e.hint() + "; " + see);
  }
  const Command* active = nullptr;  // the chosen one (parsing requires one)
  CommandRun run;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (app.got_subcommand(std::string(kCommands[i].name))) {
      active = &kCommands[i];
      run = runs[i];
    }
  }
  if (active == nullptr) return 2;
  const CLI::App* chosen = app.get_subcommand(std::string(active->name));
  const auto dispatch = [&]() -> int {
    try {
      refuse_empty_values(*chosen);
      env::check_environment();  // a bad value of a documented variable, before any work
      const int code = run();
      flush_stdout();  // a write error still in stdout's buffer counts too
      return code;
    } catch (const Error& e) {
      // every refusal has a hint: the command's help where the library had none to give
      return report_error(e.what(), e.hint().empty()
                                        ? fmt::format("see driftscope {} --help", active->name)
                                        : e.hint());
    } catch (const std::bad_alloc&) {  // what the up-front memory checks did not foresee
      return report_error("out of memory", out_of_memory_hint(*active));
    } catch (const std::filesystem::filesystem_error& e) {  // a path the user named: not a bug
      return report_error(filesystem_message(e), io_hint(e.code()));
    } catch (const std::exception& e) {
      if (is_output_closed(e)) return kExitOutputClosed;  // `driftscope show t.h5 | head`
      if (const std::string m = output_error_message(e); !m.empty()) {
        return report_error(m, kOutputErrorHint);  // `driftscope show t.h5 > /dev/full`
      }
      std::fflush(stdout);
      print_note("driftscope: internal error: {}\n", e.what());
      return 3;
    }
  };
  // Commands that read traces from anyone read them in a watched child (read_supervisor.h).
  const bool untrusted =
      active->reads_untrusted_traces ||
      (!active->untrusted_with.empty() && chosen->count(std::string(active->untrusted_with)) > 0);
  if (untrusted) return trace::run_with_watched_reads(dispatch);
  const int code = dispatch();
  if (trace::writer_abandoned()) {  // its thread is stuck inside HDF5, which exit() would wait on
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

}  // namespace ds
