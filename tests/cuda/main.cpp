// Entry point of the [cuda] tests: exits 77 (CTest's SKIP_RETURN_CODE) when no CUDA device is
// usable, so the suite reports them as skipped on machines without a GPU, never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>

#include "kernels/cuda/device.h"

int main(int argc, char** argv) {
  if (ds::cuda::device_count() == 0) {
    std::printf("SKIP: %s\n", ds::cuda::device_summary().c_str());
    return 77;
  }
  std::printf("CUDA device: %s\n", ds::cuda::device_summary().c_str());
  return Catch::Session().run(argc, argv);
}
