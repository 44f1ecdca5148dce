// Report files written whole or not at all, never over an input.
#include "src/workflow/report_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <system_error>

#include "common/error.h"
#include "common/io_error.h"
#include "common/output_file.h"

namespace ds {

void check_report_output(const std::string& path, const std::vector<std::filesystem::path>& inputs,
                         const std::string& option) {
  if (path.empty() || path == "-") return;
  struct stat out {};
  if (::stat(path.c_str(), &out) != 0) return;  // a new file
  if (!S_ISREG(out.st_mode)) {
    throw Error(fmt::format("{} '{}' is not a regular file", option, path),
                fmt::format("give {} the path of a new or existing report file", option));
  }
  for (const auto& in : inputs) {
    struct stat st {};
    if (::stat(in.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino) {
      throw Error(fmt::format("{} '{}' is the input '{}': the report would overwrite it", option,
                              path, in.string()),
                  fmt::format("give {} another file name", option));
    }
  }
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
