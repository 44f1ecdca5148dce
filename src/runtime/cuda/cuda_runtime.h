// The CUDA runtime inside the CUDA module: the forward skeleton over the CUDA backend.
#pragma once

#include <memory>

#include "src/model/model.h"
#include "src/runtime/runtime.h"

namespace ds::cuda {

// A runtime on device 0 with Runtime's contract; the knobs were checked by check_cuda_support.
std::unique_ptr<Runtime> make_runtime(const Model& model, const Numerics& numerics, int capacity,
                                      int slots);

}  // namespace ds::cuda
