// The files one command reads and the files it writes, checked against each other before anything
// runs (docs/cli.md, "Files, safety and limits"): no output may be one of the command's inputs (the
// same device and inode: another spelling of its path, a hard link), whatever --force says; an
// output that already exists is replaced only when the command may replace it (--force, or a file
// of its own folder when resuming), and only when it is a regular file. Every command that writes
// a file declares its inputs and outputs here: run, demo, attribute, diff, stats, sweep, zoom.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ds {

class CommandFiles {
 public:
  // A file the command reads; `what` names it in messages ("the input trace", "the prompts
  // file"): "<output> is the input trace 'a.h5'". Paths that do not exist (yet) are skipped: they
  // are no file to destroy.
  void input(const std::filesystem::path& path, const std::string& what);
  // The files of the model a command loads: `model` (a Hugging Face folder or a llama2.c .bin;
  // empty: the bundled model) and the tokenizer `tokenizer` (empty: the one beside the model).
  void model_inputs(const std::string& model, const std::string& tokenizer);

  // A file the command writes: `what` names it in messages ("trace", "JSON report"),
  // `option` where its path came from ("-o", "--json"). "-" (stdout) and "" are no file. With
  // `may_replace`, an existing regular file at `path` is replaced; without it, refused ("already
  // exists", with `hint`).
  void output(const std::filesystem::path& path, const std::string& what, const std::string& option,
              bool may_replace, const std::string& hint = {});

  // Throws ds::Error with a hint on the first output that is an input (always), that exists and
  // may not be replaced, or that exists and is not a regular file (a folder, device, FIFO, link).
  void check() const;

 private:
  struct In {
    std::filesystem::path path;
    std::string what;
  };
  struct Out {
    std::filesystem::path path;
    std::string what, option, hint;
    bool may_replace = false;
  };
  std::vector<In> inputs_;
  std::vector<Out> outputs_;
};

// The files a model consists of, as its loaders read them: a llama2.c .bin and its tokenizer.bin
// (or tok*.bin) beside it; in a Hugging Face folder, every .json and .safetensors file there
// (config, weights and their index, tokenizer and its config). Files that are not there are left
// out; nothing is opened.
std::vector<std::filesystem::path> model_files_on_disk(const std::filesystem::path& model);

}  // namespace ds
