// Report files declared as outputs and written whole or not at all.
#include "src/workflow/report_file.h"

#include <fmt/format.h>

#include <system_error>

#include "common/error.h"
#include "common/io_error.h"
#include "common/output_file.h"

namespace ds {

void add_report_outputs(CommandFiles& files, const std::string& json, const std::string& html,
                        bool force) {
  if (json == "-" && html == "-") {
    throw Error("--json - and --html - both ask for stdout",
                "stdout holds one format: write one of the reports to a file");
  }
  files.output(json, "JSON report", "--json", force);
  files.output(html, "HTML report", "--html", force);
}

void write_report_file(const std::string& text, const std::string& path, const std::string& what,
                       const std::string& more_hint) {
  try {
    write_file_whole(path, text);
  } catch (const std::system_error& e) {
    throw Error(fmt::format("cannot write the {} to '{}': {}", what, path, e.code().message()),
                io_hint(e.code()) + more_hint);
  }
}

}  // namespace ds
