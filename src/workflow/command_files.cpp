// A command's inputs and outputs checked against each other (src/workflow/command_files.h).
#include "src/workflow/command_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <system_error>

#include "common/error.h"
#include "src/model/model.h"

namespace fs = std::filesystem;

namespace ds {

void CommandFiles::input(const fs::path& path, const std::string& what) {
  if (!path.empty()) inputs_.push_back({path, what});
}

void CommandFiles::model_inputs(const std::string& model, const std::string& tokenizer) {
  const fs::path m = model.empty() ? default_model_path() : fs::path(model);
  for (const auto& f : model_files_on_disk(m)) input(f, "a file of the model");
  if (!tokenizer.empty()) input(tokenizer, "the tokenizer");
}

void CommandFiles::output(const fs::path& path, const std::string& what, const std::string& option,
                          bool may_replace, const std::string& hint) {
  if (path.empty() || path == "-") return;
  outputs_.push_back({path, what, option, hint, may_replace});
}

void CommandFiles::check() const {
  for (const Out& o : outputs_) {
    struct stat at {};
    if (::lstat(o.path.c_str(), &at) != 0) continue;  // nothing there yet
    // Followed: a link to an input names that input (the write would replace the link only, but
    // the user meant the file).
    struct stat out {};
    const bool resolves = ::stat(o.path.c_str(), &out) == 0;
    for (const In& in : inputs_) {
      struct stat st {};
      if (!resolves || ::stat(in.path.c_str(), &st) != 0) continue;
      if (st.st_dev == out.st_dev && st.st_ino == out.st_ino) {
        throw Error(fmt::format("{} '{}' is {} '{}': writing it would destroy it", o.what,
                                o.path.string(), in.what, in.path.string()),
                    fmt::format("give {} another path: a command never writes over what it "
                                "reads, --force or not",
                                o.option));
      }
    }
    if (!S_ISREG(at.st_mode)) {
      throw Error(fmt::format("{} '{}' is not a regular file", o.what, o.path.string()),
                  fmt::format("give {} the path of a new file (a folder, device, pipe or link is "
                              "never replaced)",
                              o.option));
    }
    if (!o.may_replace) {
      throw Error(fmt::format("{} '{}' already exists", o.what, o.path.string()),
                  o.hint.empty()
                      ? fmt::format("pass --force to replace it, or give {} another path", o.option)
                      : o.hint);
    }
  }
}

std::vector<fs::path> model_files_on_disk(const fs::path& model) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (fs::is_directory(model, ec)) {
    for (const auto& e : fs::directory_iterator(model, ec)) {
      const fs::path& p = e.path();
      if (p.extension() == ".json" || p.extension() == ".safetensors") out.push_back(p);
    }
    return out;
  }
  out.push_back(model);
  const fs::path dir = model.parent_path().empty() ? fs::path(".") : model.parent_path();
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == "tokenizer.bin" || (name.starts_with("tok") && name.ends_with(".bin"))) {
      out.push_back(e.path());
    }
  }
  return out;
}

}  // namespace ds
