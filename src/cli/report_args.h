// The options of the commands with a terminal report (diff, demo, attribute): --color, --width,
// --pages, --sites. The report they style: src/workflow/diff_report.h.
#pragma once

#include <string>

#include "src/workflow/diff_report.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace ds {

void add_report_style_options(CLI::App& cmd, ReportStyle& style);

// --width N with its check (kMinReportWidth..kMaxReportWidth), for every command with a terminal
// report.
CLI::Option* add_width_option(CLI::App& cmd, int& width, const std::string& help);

}  // namespace ds
