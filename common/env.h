// The documented environment variables (docs/cli.md, "Environment") read one way, everywhere
// (header-only): unset or empty is the default; anything else must be a value the variable takes,
// or the command is refused (ds::Error naming the variable, its value and what it takes), never
// read as the default. `check_environment()` reads them all before a command runs.
#pragma once

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace ds::env {

// A number from the environment: nullopt when `name` is unset or empty; else a decimal number in
// [lo, hi] (whole when `whole`), or ds::Error "NAME='VALUE' is not ..." with a hint.
inline std::optional<double> number(const char* name, double lo, double hi, bool whole,
                                    const char* meaning) {
  const char* raw = std::getenv(name);
  if (raw == nullptr || *raw == '\0') return std::nullopt;
  const std::string_view v(raw);
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  const bool parsed = ec == std::errc() && end == v.data() + v.size() && std::isfinite(x);
  if (!parsed || x < lo || x > hi || (whole && x != std::floor(x))) {
    const auto num = [](double d) {
      std::string s = std::to_string(d);
      if (s.find('.') != std::string::npos) {
        s.erase(s.find_last_not_of('0') + 1);
        if (s.back() == '.') s.pop_back();
      }
      return s;
    };
    throw Error(std::string(name) + "='" + std::string(v) + "' is not " + meaning + " (" + num(lo) +
                    " .. " + num(hi) + ")",
                std::string("unset ") + name + " for the default, or give it " + meaning +
                    " (docs/cli.md, \"Environment\")");
  }
  return x;
}

// DRIFTSCOPE_READ_STALL_SECONDS: how long one trace read may stay inside HDF5 (default 10 s).
inline double read_stall_seconds() {
  return number("DRIFTSCOPE_READ_STALL_SECONDS", 0.001, 1e6, false, "a number of seconds")
      .value_or(10);
}
// DRIFTSCOPE_WRITE_STALL_SECONDS: how long the trace writer may make no progress (default 120 s).
inline double write_stall_seconds() {
  return number("DRIFTSCOPE_WRITE_STALL_SECONDS", 0.001, 1e6, false, "a number of seconds")
      .value_or(120);
}
// DRIFTSCOPE_READ_THREADS: threads that inflate trace chunks (nullopt: the default).
inline std::optional<int> read_threads() {
  const auto v = number("DRIFTSCOPE_READ_THREADS", 1, 1024, true, "a number of threads");
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}
// The trace writer's test hooks: fail (as on a full disk) or stall after N steps (-1: never).
inline int trace_fail_after_steps() {
  return static_cast<int>(
      number("DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS", 0, 1e9, true, "a number of steps").value_or(-1));
}
inline int trace_stall_after_steps() {
  return static_cast<int>(
      number("DRIFTSCOPE_TRACE_STALL_AFTER_STEPS", 0, 1e9, true, "a number of steps").value_or(-1));
}
// COLUMNS: the report width when stdout is no terminal (nullopt: unset, empty or not positive);
// any whole number is taken (the reports clamp it into their widths: it is the environment's,
// not the user's ask), anything else is refused.
inline std::optional<long long> columns() {
  const auto v = number("COLUMNS", -1e15, 1e15, true, "a whole number of columns");
  return v && *v > 0 ? std::optional<long long>(static_cast<long long>(*v)) : std::nullopt;
}

// Reads every documented variable that has a number's syntax, so that a bad value is refused
// before the command does anything (those with words, DRIFTSCOPE_PACK and
// DRIFTSCOPE_MEM_AVAILABLE, are refused where they are read, also before any output).
inline void check_environment() {
  read_stall_seconds();
  write_stall_seconds();
  read_threads();
  trace_fail_after_steps();
  trace_stall_after_steps();
  columns();
}

}  // namespace ds::env
