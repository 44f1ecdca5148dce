// Catch2 form of tests/ops/compare.h: holds an op's output against another side's by the case's
// metric and bound; on failure reports the worst element and the first pairs.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/ops/compare.h"

namespace ds::test {

template <typename R>
void check_op(const std::string& name, const std::vector<float>& got, const std::vector<R>& ref,
              Metric metric, double bound, const char* reason) {
  INFO(name << " (bound " << bound << ": " << reason << ")");
  const Comparison c = compare(got, ref, metric, bound);
  if (!c.ok) FAIL(c.detail);
  SUCCEED("error " << c.error);
}

}  // namespace ds::test
