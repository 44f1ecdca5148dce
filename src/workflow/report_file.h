// Report files (--json and --html of diff, stats and attribute; demo's report.json and .html):
// refused before any work when they would overwrite an input or something that is not a regular
// file, and written whole or not at all.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ds {

// Throws ds::Error when `path` ("-" is stdout, always fine) names one of `inputs` (the same file,
// by device and inode) or an existing directory, device, FIFO or socket. `option` names the flag.
void check_report_output(const std::string& path, const std::vector<std::filesystem::path>& inputs,
                         const std::string& option);

// Writes `text` to `path` through a temporary file of a unique name in the same folder, renamed
// over `path` once complete: a failure (a full disk) leaves an earlier report at `path` as it was
// and no partial file. Throws ds::Error "cannot write the <what> to '<path>': <why>" with the
// hint for that reason (io_hint) followed by `more_hint` (e.g. "; or use --json - for stdout").
void write_report_file(const std::string& text, const std::string& path, const std::string& what,
                       const std::string& more_hint);

}  // namespace ds
