// The GPU-only flags on a machine without a GPU: `--device cuda` is refused with the reason and
// a hint, and the CUDA knobs are validated (exit 2) before anything runs.
#include <catch2/catch.hpp>

#include "src/runtime/cuda_loader.h"
#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"

using ds::test::check_input_error;
using ds::test::run_cli;

TEST_CASE("device cuda without a usable device is an input error with a hint", "[cli][cuda]") {
  if (ds::cuda_device_count() > 0) {
    WARN(
        "a CUDA device is present: the refusal is not exercised here ([cuda] tests cover the run)");
    return;
  }
  ds::test::TempDir dir;
  const auto r = run_cli("run -m " + ds::test::model_bin() + " --device cuda -n 2 -o " +
                         (dir.path() / "t.h5").string());
  check_input_error(r, "device 'cuda'");
  CHECK(r.err.find("--device cpu") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.path() / "t.h5"));
}

TEST_CASE("CUDA knobs are validated before a run starts", "[cli][cuda]") {
  check_input_error(run_cli("run --dry-run --kernel gemm=magic"), "invalid kernel 'gemm=magic'");
  check_input_error(run_cli("run --dry-run --tf32 maybe"), "invalid tf32");
  check_input_error(run_cli("run -m " + ds::test::model_bin() + " --kernels on -n 2 -o x.h5"),
                    "kernel records need --device cuda");
  check_input_error(
      run_cli("run -m " + ds::test::model_bin() + " --kernels sometimes -n 2 -o x.h5"),
      "invalid kernels 'sometimes'");
  // The knob is recorded in the resolved configuration.
  const auto r = run_cli("run --dry-run --kernel gemm=tiled");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("kernel=\"gemm=tiled\"\n") != std::string::npos);
}
