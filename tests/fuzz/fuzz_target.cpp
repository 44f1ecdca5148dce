// Shared pieces of the fuzz targets (tests/fuzz/fuzz_target.h).
#include "tests/fuzz/fuzz_target.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <system_error>

#include "common/error.h"

namespace fs = std::filesystem;

namespace ds::fuzz {

namespace {

fs::path make_scratch_dir() {
  const fs::path base =
      fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  fs::path dir = base / ("driftscope-fuzz-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

void remove_scratch_dir() {
  std::error_code ec;
  fs::remove_all(scratch_dir(), ec);
}

}  // namespace

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path d = make_scratch_dir();
    std::atexit(remove_scratch_dir);
    return d;
  }();
  return dir;
}

fs::path write_input(std::span<const uint8_t> data, const std::string& name) {
  fs::path p = scratch_dir() / name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", p.c_str());
    std::abort();
  }
  return p;
}

fs::path source_file(const std::string& rel) {
  return fs::path(DRIFTSCOPE_SOURCE_DIR) / rel;
}

int guarded(const std::function<void()>& body) {
  try {
    body();
  } catch (const ds::Error&) {
    // the input was refused with a message for the user: the expected outcome of a bad input
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "fuzz: an exception other than ds::Error escaped (a bug, exit 3 in the "
                 "CLI): %s\n",
                 e.what());
    std::abort();
  }
  return 0;
}

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz: property violated: %s\n", what);
  std::abort();
}

}  // namespace ds::fuzz
