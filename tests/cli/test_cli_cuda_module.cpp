// CUDA only when asked (docs/architecture.md): the executable links no CUDA library, and
// --device cuda names what is missing when the CUDA module cannot be used.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

using ds::test::check_input_error;
using ds::test::run_cli;

namespace {

std::string command_output(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// `driftscope run --device cuda` with DRIFTSCOPE_CUDA_MODULE set to `module` (inherited by the
// child through the environment).
ds::test::CliResult cuda_run_with_module(const std::string& module, const ds::test::TempDir& dir) {
  setenv("DRIFTSCOPE_CUDA_MODULE", module.c_str(), 1);
  auto r = run_cli("run -m " + ds::test::model_bin() + " --device cuda -n 2 -o " +
                   (dir.path() / "t.h5").string());
  unsetenv("DRIFTSCOPE_CUDA_MODULE");
  return r;
}

}  // namespace

TEST_CASE("the driftscope executable links no CUDA library", "[cli][cuda]") {
  const std::string ldd = command_output("ldd " + ds::test::exe() + " 2>&1");
  INFO(ldd);
  REQUIRE(ldd.find("libc.so") != std::string::npos);  // ldd did list the libraries
  for (const char* lib : {"libcuda", "libcudart", "libcublas", "libcupti", "libnvrtc"}) {
    CHECK(ldd.find(lib) == std::string::npos);
  }
}

TEST_CASE("device cuda names a missing CUDA module", "[cli][cuda]") {
  ds::test::TempDir dir;
  const std::string missing = (dir.path() / "nowhere" / "libdriftscope_cuda.so").string();
  const auto r = cuda_run_with_module(missing, dir);
  check_input_error(r, "the CUDA module libdriftscope_cuda.so was not found");
  CHECK(r.err.find(missing) != std::string::npos);
  CHECK(r.err.find("--device cpu") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.path() / "t.h5"));
}

TEST_CASE("device cuda names a module that cannot be loaded or is not driftscope's",
          "[cli][cuda]") {
  ds::test::TempDir dir;
  const std::string junk = (dir.path() / "libdriftscope_cuda.so").string();
  std::ofstream(junk) << "not an ELF file\n";
  auto r = cuda_run_with_module(junk, dir);
  check_input_error(r, "could not be loaded");
  // a real shared object without driftscope's entry point
  const std::string libm = command_output("ldd " + ds::test::exe() +
                                          " | sed -n 's/.*=> \\(\\S*libm.so[^ ]*\\).*/\\1/p'");
  REQUIRE(!libm.empty());
  r = cuda_run_with_module(libm.substr(0, libm.find('\n')), dir);
  check_input_error(r, "is not a CUDA module of this driftscope");
}

TEST_CASE("CPU runs never load the CUDA module", "[cli][cuda]") {
  // A module path that cannot load would fail any run that loaded it.
  ds::test::TempDir dir;
  const auto out = dir.path() / "t.h5";
  setenv("DRIFTSCOPE_CUDA_MODULE", "/nonexistent/libdriftscope_cuda.so", 1);
  const auto r = run_cli("run -m " + ds::test::model_bin() + " -n 2 -q -o " + out.string());
  unsetenv("DRIFTSCOPE_CUDA_MODULE");
  REQUIRE(r.exit_code == 0);
  const std::string env = ds::trace::TraceReader::open(out).env_json();
  INFO(env);
  CHECK(env.find("\"cuda\":\"not used (device cpu)\"") != std::string::npos);
}
