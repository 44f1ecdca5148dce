// A command's outputs against its inputs (src/workflow/command_files.h): by device and inode, so
// another spelling of a path or a hard link is the same file; --force never lets an output
// replace an input; an existing file is replaced only when the command may replace it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "src/workflow/command_files.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using Catch::Contains;

namespace {

std::string refusal(const ds::CommandFiles& f) {
  try {
    f.check();
  } catch (const ds::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("command files: an output that is an input is refused, --force or not",
          "[workflow][files]") {
  ds::test::TempDir dir;
  const fs::path in = dir.path() / "a.h5", link = dir.path() / "link.h5",
                 other = dir.path() / "sub" / ".." / "a.h5";
  std::ofstream(in) << "trace";
  fs::create_directories(dir.path() / "sub");
  fs::create_hard_link(in, link);
  for (const fs::path& out : {in, link, other}) {
    INFO(out);
    ds::CommandFiles f;
    f.input(in, "the input trace");
    f.output(out, "JSON report", "--json", /*may_replace=*/true);
    CHECK_THAT(refusal(f), Contains("is the input trace '" + in.string() + "'"));
  }
  ds::CommandFiles fine;
  fine.input(in, "the input trace");
  fine.output(dir.path() / "new.json", "JSON report", "--json", false);
  fine.output("-", "JSON report", "--json", false);  // stdout
  fine.output("", "HTML report", "--html", false);   // not asked for
  CHECK(refusal(fine).empty());
}

TEST_CASE("command files: an existing output is replaced only when allowed, and only a file",
          "[workflow][files]") {
  ds::test::TempDir dir;
  const fs::path r = dir.path() / "r.json";
  std::ofstream(r) << "mine";
  ds::CommandFiles no;
  no.output(r, "JSON report", "--json", false);
  CHECK_THAT(refusal(no), Contains("JSON report '" + r.string() + "' already exists"));
  ds::CommandFiles yes;
  yes.output(r, "JSON report", "--json", true);
  CHECK(refusal(yes).empty());
  ds::CommandFiles folder;
  folder.output(dir.path(), "JSON report", "--json", true);
  CHECK_THAT(refusal(folder), Contains("is not a regular file"));
}

TEST_CASE("command files: a model's files are its inputs", "[workflow][files]") {
  const auto hf = ds::model_files_on_disk(ds::test::model_hf());
  const auto has = [&](const std::vector<fs::path>& v, const std::string& name) {
    for (const auto& p : v) {
      if (p.filename() == name) return true;
    }
    return false;
  };
  CHECK(has(hf, "model.safetensors"));
  CHECK(has(hf, "config.json"));
  CHECK(has(hf, "tokenizer.json"));
  CHECK_FALSE(has(hf, "kjv-llama.bin"));  // another model beside it
  const auto bin = ds::model_files_on_disk(ds::test::model_bin());
  CHECK(has(bin, "kjv-llama.bin"));
  CHECK(has(bin, "tokenizer.bin"));
  CHECK_FALSE(has(bin, "model.safetensors"));
  ds::CommandFiles f;
  f.model_inputs(ds::test::model_hf(), "");
  f.output(ds::test::model_hf() + "/config.json", "trace", "-o", true);
  CHECK_THAT(refusal(f), Contains("is a file of the model"));
}
