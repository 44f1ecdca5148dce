// The CPU side of every case of the op table (tests/ops/op_cases.h): the op gives the same bits
// on every run, and where the case has an independent float64 reference it is within the
// case's bound of it. The exact reduction orders are pinned by hand in test_*_order.cpp.
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "tests/ops/check_op.h"
#include "tests/ops/op_cases.h"

namespace ds::test {

TEST_CASE("op table: every case has its own name and no CUDA call in a CPU build",
          "[kernels][ops]") {
  std::set<std::string> names;
  for (const OpCase& c : op_cases()) {
    INFO(c.name());
    CHECK(names.insert(c.name()).second);  // sections are told apart by name
    CHECK_FALSE(c.cuda);
  }
}

TEST_CASE("op table: each CPU op is deterministic and within its bound of the float64 reference",
          "[kernels][ops]") {
  for (const OpCase& c : op_cases()) {
    DYNAMIC_SECTION(c.name()) {
      const OpData in = c.make_inputs();
      OpCall first = c.cpu(in), second = c.cpu(in);
      first.run();
      second.run();
      second.run();  // run twice: an in-place op must restore its input
      const std::vector<float> a = first.result(), b = second.result();
      REQUIRE(a.size() == b.size());
      CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
      if (c.reference) {
        check_op(c.name() + " vs float64", a, c.reference(in), Metric::nmse, c.ref_bound,
                 c.ref_bound_reason);
      }
    }
  }
}

}  // namespace ds::test
