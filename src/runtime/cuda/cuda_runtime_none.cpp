// make_cuda_runtime in a build without the CUDA part: always a clear error.
#include "common/error.h"
#include "src/runtime/runtime.h"

namespace ds {

std::unique_ptr<Runtime> make_cuda_runtime(const Model&, const Numerics&, int, int) {
  throw Error(
      "device 'cuda': this build has no CUDA backend (nvcc was not found when it was built)",
      "rebuild on a machine with the CUDA toolkit, or use --device cpu (the reference "
      "backend, which emulates GPU numerics)");
}

}  // namespace ds
