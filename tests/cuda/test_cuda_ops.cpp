// Every CUDA op against the CPU op (kernels/ops.h), one section per case of the op table
// (tests/ops/op_cases.h): odd shapes, tile boundaries and storage types, inputs rounded to the
// storage type first so both sides see the same values, each case's bound from
// tests/ops/tolerances.h with its reason.
#include <catch2/catch.hpp>

#include "tests/ops/check_op.h"
#include "tests/ops/op_cases_cuda.h"

namespace ds::test {

TEST_CASE("Every CUDA op of the op table matches the CPU op within the case's bound",
          "[cuda][ops]") {
  for (const OpCase& c : op_cases_with_cuda()) {
    DYNAMIC_SECTION(c.name()) {
      const OpData in = c.make_inputs();
      OpCall gpu = c.cuda(in), cpu = c.cpu(in);
      bool declined = false;
      try {
        gpu.run();
      } catch (const OpDeclined& e) {
        declined = true;  // a documented refusal (tests/ops/op_cases.h), not a wrong result
        WARN(c.name() << ": declined: " << e.what());
      }
      if (!declined) {
        cpu.run();
        check_op(c.name(), gpu.result(), cpu.result(), c.metric, c.bound, c.bound_reason);
      }
    }
  }
}

}  // namespace ds::test
