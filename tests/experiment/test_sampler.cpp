// Greedy tie rule and seeded sampling: determinism, filters, and the distribution it draws from.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "src/experiment/sampler.h"

TEST_CASE("greedy picks the lowest id among equal maxima", "[sampler]") {
  std::vector<double> l = {0.5, 2.0, -1.0, 2.0, 2.0};
  CHECK(ds::argmax_lowest_id(l) == 1);
  CHECK(ds::sample_next(l, {}, 0, 0) == 1);
}

TEST_CASE("sampling is a pure function of (seed, stream, step)", "[sampler]") {
  std::vector<double> l = {1.0, 1.5, 0.2, 1.4, 0.9};
  ds::SamplingParams p{1.0, 1.0, 0, 42};
  for (int step = 0; step < 50; ++step) {
    CHECK(ds::sample_next(l, p, 3, step) == ds::sample_next(l, p, 3, step));
  }
  CHECK(ds::sampling_uniform(1, 0, 0) != ds::sampling_uniform(2, 0, 0));
  CHECK(ds::sampling_uniform(1, 0, 0) != ds::sampling_uniform(1, 1, 0));
  CHECK(ds::sampling_uniform(1, 0, 0) != ds::sampling_uniform(1, 0, 1));
}

TEST_CASE("sampling frequencies follow softmax(logits / T)", "[sampler]") {
  std::vector<double> l = {0.0, std::log(2.0), std::log(3.0)};  // probabilities 1/6, 2/6, 3/6
  ds::SamplingParams p{1.0, 1.0, 0, 7};
  std::vector<int> count(3);
  const int n = 60000;
  for (int i = 0; i < n; ++i) count[ds::sample_next(l, p, 0, i)]++;
  // binomial standard deviation at n=60000 is < 0.0021; allow 5 sigma
  CHECK(std::abs(count[0] / double(n) - 1.0 / 6) < 0.011);
  CHECK(std::abs(count[1] / double(n) - 2.0 / 6) < 0.011);
  CHECK(std::abs(count[2] / double(n) - 3.0 / 6) < 0.011);
}

TEST_CASE("top-k and top-p restrict the candidates", "[sampler]") {
  std::vector<double> l = {0.0, std::log(2.0), std::log(3.0), std::log(4.0)};  // 0.1 .. 0.4
  for (int i = 0; i < 2000; ++i) {
    int k2 = ds::sample_next(l, {1.0, 1.0, 2, 9}, 0, i);
    CHECK((k2 == 3 || k2 == 2));
    int p5 = ds::sample_next(l, {1.0, 0.5, 0, 9}, 0, i);  // 0.4 < 0.5 <= 0.7: ids 3 and 2
    CHECK((p5 == 3 || p5 == 2));
    CHECK(ds::sample_next(l, {1.0, 0.4, 0, 9}, 0, i) == 3);
  }
}

TEST_CASE("bad sampling parameters are rejected with the field name", "[sampler][errors]") {
  CHECK_THROWS_WITH(ds::validate({-1.0, 1.0, 0, 0}), Catch::Contains("temperature"));
  CHECK_THROWS_WITH(ds::validate({1.0, 0.0, 0, 0}), Catch::Contains("top_p"));
  CHECK_THROWS_WITH(ds::validate({1.0, 1.0, -3, 0}), Catch::Contains("top_k"));
}
