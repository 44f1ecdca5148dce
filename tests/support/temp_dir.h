// A unique temporary directory for a test, removed with its contents on destruction.
#pragma once

#include <filesystem>
#include <string>

namespace ds::test {

// A fresh directory under temp_directory_path(), removed with everything in it on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "driftscope-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ds::test
