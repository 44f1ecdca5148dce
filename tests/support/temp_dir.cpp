// Unique temporary directories for tests.
#include "tests/support/temp_dir.h"

#include <unistd.h>

#include <atomic>
#include <random>
#include <stdexcept>

namespace fs = std::filesystem;

namespace ds::test {

TempDir::TempDir(const std::string& tag) {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path p =
        fs::temp_directory_path() / (tag + "-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(counter++) + "-" + std::to_string(rd()));
    if (fs::create_directory(p)) {
      path_ = p;
      return;
    }
  }
  throw std::runtime_error("TempDir: cannot create a unique directory");
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace ds::test
