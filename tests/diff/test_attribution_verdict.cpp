// The attribution verdict's wording from hand-made blocks (diff/attribution.h): layer ranges,
// shares, "none" kinds, origins, NaN, nothing local; and the log bars of the terminal view.
#include <catch2/catch.hpp>
#include <cmath>

#include "diff/attribution.h"
#include "viewer/attribution_html.h"
#include "viewer/attribution_json.h"
#include "viewer/attribution_terminal.h"

using ds::diff::AttributionReport;
using ds::diff::BlockError;

namespace {

BlockError block(const char* kind, int layer, double local, double total, double share,
                 bool origin = false) {
  BlockError b;
  b.kind = kind;
  b.layer = layer;
  b.name = std::string("L") + std::to_string(layer) + " " + kind;
  b.local = local;
  b.total = total;
  b.share = share;
  b.origin = origin;
  b.nan = std::isnan(local) || std::isnan(total);
  return b;
}

AttributionReport report(std::vector<BlockError> blocks) {
  AttributionReport r;
  r.storage = "bf16";
  r.noise_floor = 0x1p-7;
  r.blocks = std::move(blocks);
  for (size_t i = 0; i < r.blocks.size(); ++i) r.ranking.push_back(static_cast<int>(i));
  return r;
}

}  // namespace

TEST_CASE("attribution verdict: ranges, shares and the kinds that add none", "[diff][attribute]") {
  const auto r = report({block("attention", 0, 3, 4, 0.3), block("attention", 1, 3, 4, 0.3),
                         block("attention", 2, 3, 4, 0.3), block("attention", 4, 0.996, 4, 0.0996),
                         block("mlp", 0, 0, 4, 0), block("mlp", 1, 0, 4, 0),
                         block("final_norm", -1, 0.004, 4, 0.0004)});
  CHECK(ds::diff::attribution_verdict(r) ==
        "attention layers 0–2, 4 add 100% of the local error, final_norm adds <1%; MLPs add none "
        "(none above the bf16 noise floor 0.0078)");
}

TEST_CASE("attribution verdict: one origin, NaN, and no local error", "[diff][attribute]") {
  auto one = report({block("layer", 0, 0, 0, 0), block("layer", 3, 1e-3, 1e-3, 1, true)});
  CHECK(ds::diff::attribution_verdict(one) ==
        "layer 3 adds 100% of the local error (origin above the bf16 noise floor: L3 layer)");
  auto nan = report({block("mlp", 2, NAN, NAN, 0, true), block("mlp", 3, 1e-3, 1e-3, 1)});
  CHECK(ds::diff::attribution_verdict(nan) ==
        "L2 mlp produces NaN/Inf on A's inputs (the first in the ranking)");
  auto inherited = report({block("layer", 0, 0, 1e-3, 0)});
  CHECK(ds::diff::attribution_verdict(inherited).starts_with("no layer adds error"));
  auto none = report({block("layer", 0, 0, 0, 0)});
  CHECK(ds::diff::attribution_verdict(none) ==
        "no drift: B reproduces every layer of A bit for bit");
}

TEST_CASE("attribution bars: log scale, empty for zero", "[viewer][attribute]") {
  CHECK(ds::viewer::log_bar_cells(0, 1e-8, 1e-2, 20) == 0);
  CHECK(ds::viewer::log_bar_cells(NAN, 1e-8, 1e-2, 20) == 0);
  CHECK(ds::viewer::log_bar_cells(1e-2, 1e-8, 1e-2, 20) == 20);
  CHECK(ds::viewer::log_bar_cells(1e-5, 1e-8, 1e-2, 20) == 10);  // half way in decades
  CHECK(ds::viewer::log_bar_cells(2e-8, 1e-8, 1e-2, 20) == 1);   // above lo: at least one cell
}
