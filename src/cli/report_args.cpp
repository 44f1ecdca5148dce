// The report style options and their checks.
#include "src/cli/report_args.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>

namespace ds {

void add_report_style_options(CLI::App& cmd, ReportStyle& s) {
  cmd.add_option("--color", s.color, "colours: auto (terminal, NO_COLOR unset), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  add_width_option(cmd, s.width,
                   fmt::format("report width in columns, {}..{} (default: the terminal's, or "
                               "COLUMNS, clamped into that range)",
                               kMinReportWidth, kMaxReportWidth));
  // a value that is no whole number is refused by the conversion ("--pages 'abc' is not a number")
  const auto not_negative = [](std::string& v) {
    return v.size() > 1 && v[0] == '-' && v[1] >= '0' && v[1] <= '9'
               ? fmt::format("{} must be >= 0", v)
               : std::string();
  };
  cmd.add_option("--pages", s.pages, "sequences shown in detail, earliest flips first")
      ->check(CLI::Validator(not_negative, "", "N"))
      ->type_name("N")
      ->capture_default_str();
  cmd.add_flag("--sites", s.sites, "print the per-site drift table of each sequence shown");
}

CLI::Option* add_width_option(CLI::App& cmd, int& width, const std::string& help) {
  const auto in_range = [](std::string& v) {
    int n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (end != v.data() + v.size()) return std::string();  // not a number: CLI11's own message
    return ec == std::errc() && n >= kMinReportWidth && n <= kMaxReportWidth
               ? std::string()
               : fmt::format("{} is outside {}..{} columns", v, kMinReportWidth, kMaxReportWidth);
  };
  return cmd.add_option("--width", width, help)
      ->check(CLI::Validator(in_range, "", "WIDTH"))
      ->type_name("N");
}

}  // namespace ds
