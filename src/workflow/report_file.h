// Report files (--json and --html of diff, stats and attribute; demo's report.json and .html):
// declared as outputs of the command (src/workflow/command_files.h), so that they are refused
// before any work when they would overwrite an input, an existing file without --force, or
// something that is not a regular file; and written whole or not at all.
#pragma once

#include <string>

#include "src/workflow/command_files.h"

namespace ds {

// --json FILE|- and --html FILE|- of one command as outputs of `files` (replaced only with
// `force`). Throws ds::Error when both are "-": stdout holds one format.
void add_report_outputs(CommandFiles& files, const std::string& json, const std::string& html,
                        bool force);

// Whether one of the reports goes to stdout ("-"), which the terminal report then leaves alone.
inline bool report_on_stdout(const std::string& json, const std::string& html) {
  return json == "-" || html == "-";
}

// Writes `text` to `path` through a temporary file of a unique name in the same folder, renamed
// over `path` once complete: a failure (a full disk) leaves an earlier report at `path` as it was
// and no partial file. Throws ds::Error "cannot write the <what> to '<path>': <why>" with the
// hint for that reason (io_hint) followed by `more_hint` (e.g. "; or use --json - for stdout").
void write_report_file(const std::string& text, const std::string& path, const std::string& what,
                       const std::string& more_hint);

}  // namespace ds
