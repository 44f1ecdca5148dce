// The noise floor's statistics against held-out benign replays and planted errors (issue 48,
// done-when 1 and 2), in one process on the bundled kjv-llama (tests/support/floor_fixture.h):
// 99 replays calibrate a floor, then 100 replays of other seeds are judged against it (false
// alarms), and 100 replays with a planted +4 ulp bias at L1/mlp_out (power). Sizes for CI: a few
// prompts of a few tokens (stated in each test); every replay records every probe.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "diff/noise_floor.h"
#include "tests/support/floor_fixture.h"

namespace {

using ds::test::FloorFixture;

constexpr int kRuns = 99, kHeldOut = 100;
constexpr double kAlpha = 0.01;

ds::RunConfig fp32() {  // configs/fp32.toml
  ds::RunConfig c;
  return c;
}

ds::RunConfig bf16_bs1() {  // configs/bf16-bs1.toml
  ds::RunConfig c;
  c.dtype = ds::DType::bf16;
  c.gemm_policy = ds::GemmPolicy::heuristic;
  return c;
}

ds::RunConfig bf16_bs8() {  // configs/bf16-bs8.toml
  ds::RunConfig c;
  c.dtype = ds::DType::bf16;
  c.batch = 8;
  c.gemm_policy = ds::GemmPolicy::heuristic;
  return c;
}

struct Alarms {
  int site_tests = 0, site_alarms = 0, family = 0, gate = 0, flips = 0;
  std::map<std::string, int> by_site;  // alarms per site
  int most_at_one_site() const {
    int m = 0;
    for (const auto& [site, n] : by_site) m = std::max(m, n);
    return m;
  }
};

// B of every held-out seed against the floor: per-site alarms (p <= alpha), family-wise ones (an
// onset) and the gate's (drift or flips beyond noise).
Alarms held_out(FloorFixture& f, const ds::trace::FloorFile& floor, const std::string& cls) {
  Alarms a;
  for (int j = 0; j < kHeldOut; ++j) {
    const std::string b = f.replay(FloorFixture::benign(cls, 100000 + j), "held-out");
    const ds::diff::NoiseReport n = f.judge(b, floor, kAlpha);
    for (const auto& s : n.sites) {
      ++a.site_tests;
      a.site_alarms += s.p <= kAlpha;
      a.by_site[s.site] += s.p <= kAlpha;
    }
    a.family += n.onset.has_value();
    a.gate += n.beyond;
    a.flips += n.flips_beyond;
  }
  return a;
}

double secs_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A replay of seed k with a planted error at L1/down_proj (L1/mlp_out): a bias of `ulps` ulps,
// or (ulps 0) an fp16 accumulator in that GEMM alone.
ds::PlanSpec planted(uint64_t k, int ulps, const std::string& cls) {
  ds::PlanSpec p = FloorFixture::benign(cls, k);
  if (ulps != 0) {
    p.bias_op = "L1/down_proj";
    p.bias_ulps = ulps;
  } else {
    ds::RunConfig b;
    b.accum = ds::Accum::fp16;
    p.b = b;
    p.b_ops = {"L1/down_proj"};
  }
  return p;
}

struct Power {
  int flagged_there = 0, earlier = 0, beyond = 0, n = 0;
};

// Planted errors at L1/mlp_out over `seeds` seeds: flagged at that site (the onset against the
// floor), flagged earlier (a false onset), the gate.
Power power(FloorFixture& f, const ds::trace::FloorFile& floor, int seeds, int ulps,
            const std::string& cls) {
  Power p;
  const std::vector<std::string> earlier = {
      "embed",  "L0/attn_norm", "L0/attn_out", "L0/resid_mid", "L0/mlp_norm", "L0/mlp_out",
      "L0/out", "L1/attn_norm", "L1/attn_out", "L1/resid_mid", "L1/mlp_norm"};
  for (int j = 0; j < seeds; ++j) {
    const std::string b = f.replay(planted(200000 + j, ulps, cls), "planted");
    const ds::diff::NoiseReport n = f.judge(b, floor, kAlpha);
    ++p.n;
    p.flagged_there += n.onset == std::optional<std::string>("L1/mlp_out");
    p.earlier += n.onset && std::find(earlier.begin(), earlier.end(), *n.onset) != earlier.end();
    p.beyond += n.beyond;
  }
  return p;
}

// The false alarms of one configuration (printed for bench/RESULTS.md) against the bounds,
// then the power against a planted +4 ulp bias and a planted fp16 accumulator.
void false_alarms(const ds::RunConfig& config, int prompts, int max_new, const std::string& cls) {
  const auto t0 = std::chrono::steady_clock::now();
  FloorFixture f(config, prompts, max_new);
  const ds::trace::FloorFile floor = f.calibrate(kRuns, cls);
  const double calibrate_s = secs_since(t0);
  const Alarms a = held_out(f, floor, cls);
  const double rate = static_cast<double>(a.site_alarms) / a.site_tests;
  fmt::print(
      "noise floor false alarms, {} {} batch {} ({} prompts x {} tokens, {}): per site {}/{} = "
      "{:.4f} (at most {}/{} at one site), family-wise {}/{}, gate {}/{} (flips {}); calibrate "
      "{:.1f} s, held-out {:.1f} s\n",
      ds::field_text(config, "dtype"), ds::field_text(config, "gemm_policy"), config.batch, prompts,
      max_new, cls, a.site_alarms, a.site_tests, rate, a.most_at_one_site(), kHeldOut, a.family,
      kHeldOut, a.gate, kHeldOut, a.flips, calibrate_s, secs_since(t0) - calibrate_s);
  std::fflush(stdout);
  CHECK(rate <= 0.02);
  CHECK(a.family <= 5);
  CHECK(a.gate <= 5);
  const Power bias = power(f, floor, 100, 4, cls), accum = power(f, floor, 10, 0, cls);
  fmt::print(
      "noise floor power, {}: +4 ulp at L1/mlp_out flagged there {}/{} (earlier {}, gate "
      "{}); fp16 accumulator in L1/down_proj flagged there {}/{} (earlier {}, gate {})\n",
      ds::field_text(config, "dtype"), bias.flagged_there, bias.n, bias.earlier, bias.beyond,
      accum.flagged_there, accum.n, accum.earlier, accum.beyond);
  std::fflush(stdout);
  CHECK(bias.flagged_there >= 90);
  CHECK(bias.earlier <= 5);
  CHECK(accum.beyond == accum.n);
}

}  // namespace

TEST_CASE("noise floor: held-out benign replays of fp32 are within noise (false alarms)",
          "[noise]") {
  false_alarms(fp32(), 4, 16, "reorder");
}

TEST_CASE("noise floor: held-out benign replays of bf16 at batch 8 are within noise", "[noise]") {
  false_alarms(bf16_bs8(), 8, 12, "reorder");
}

// Measurements beside the tests (hidden from CI: run by name), for bench/RESULTS.md: the second
// benign class, stochastic rounding, and both classes together.
TEST_CASE("noise floor (measurement): held-out replays of stochastic rounding", "[.][measure]") {
  false_alarms(fp32(), 4, 16, "sr");
  false_alarms(bf16_bs8(), 8, 12, "sr");
}

TEST_CASE("noise floor (measurement): held-out replays of reordering and stochastic rounding",
          "[.][measure]") {
  false_alarms(fp32(), 4, 16, "reorder+sr");
}

TEST_CASE("noise floor: bf16 at batch 8 against a bf16 batch-1 floor, reported either way",
          "[noise]") {
  // A batch change under the heuristic policy is split-K and split-KV chosen from another shape:
  // the kind of reordering the floor's replays draw. Whether batch 8 moves A more than they do is
  // measured, not assumed; the verdict must follow from the report's own p-values.
  FloorFixture f(bf16_bs1(), 8, 12);
  const ds::trace::FloorFile floor = f.calibrate(kRuns, "reorder");
  ds::RunConfig b = bf16_bs8();
  b.max_new = 12;
  const ds::diff::NoiseReport n = f.judge(f.replay_as(b, nullptr, "bs8"), floor, kAlpha);
  std::string sites;
  for (const auto& s : n.sites) {
    if (s.significant || s.p_family < 0.2) {
      sites += fmt::format(" {} ({:.2g} x floor, p {:.2g}, fw {:.2g}, {})", s.site, s.floor_units,
                           s.p, s.p_family, s.driver);
    }
  }
  fmt::print(
      "noise floor, bf16 batch 8 against a bf16 batch-1 floor (8 prompts x 12 tokens): {}"
      "\n  sites:{}\n",
      n.headline, sites.empty() ? " none below family-wise p 0.2" : sites);
  std::fflush(stdout);
  CHECK(n.runs == kRuns);
  CHECK(n.sites.size() == 27);  // every hidden site and the logits
  CHECK(n.beyond == (n.onset.has_value() || n.p_flips <= kAlpha));
  CHECK(n.drift_beyond == n.onset.has_value());
}
