// The flips' aggregate rendered (terminal, JSON, HTML) from the hand-built pairs of
// tests/diff/flip_fixture.h: each shown number against the fixture's hand-computed values, the
// page's shell and escaping as the diff page's, and the page in headless chromium.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "diff/flip_aggregate.h"
#include "tests/diff/flip_fixture.h"
#include "tests/support/browser.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "viewer/diff_html.h"
#include "viewer/flips_html.h"
#include "viewer/flips_json.h"
#include "viewer/flips_terminal.h"
#include "viewer/text_layout.h"

using ds::test::between;
using ds::test::count;
using ds::test::has;

namespace {

const std::string kAttack = "<img src=x onerror=alert(1)>";

// The fixture's aggregate with a hostile block name in sequence 1's birth block (L0 mlp).
ds::diff::FlipAggregate hostile_aggregate(ds::test::FlipFixture& f) {
  f.attribution.blocks[1].name = kAttack;
  return ds::diff::aggregate_flips(f.pairs(), 0.05);
}

}  // namespace

TEST_CASE("flips terminal: the summary line and hand-counted rows", "[viewer][flips]") {
  const auto f = ds::test::flip_fixture();
  const auto a = ds::diff::aggregate_flips(f.pairs(), 0.05);
  const std::string t = ds::viewer::render_flips_terminal(a, 100);
  INFO(t);
  CHECK(has(t,
            "driftscope flips: 5 sequences zoomed, 4 flips\nnear-tie threshold 0.05 logit; "
            "local error against the attribution's noise floor 1.00e-03 (bf16)\n"));
  // the layer drift against each site's own floor (3e-3), named as such: L0 1 of 4 above it
  CHECK(has(t, "rounding of its float16 storage, as for the onset), not the attribution's"));
  CHECK(has(t, "1/4    3.00e-03"));
  CHECK(has(t,
            "\n50% of the 4 flips were near-ties under 0.05 logit; error is born in attention "
            "of layers 0–1 (50%)\n"));
  CHECK(has(t, "min 2 · q1 2 · median 3.5 · q3 6.25 · max 10"));
  // steps 0..10 in 10 rows at most: 2 steps a row; 2, 2 | 5 | 10
  CHECK(has(t, "steps 2–3"));
  CHECK(has(t, "near-ties 2 (50%), accumulated drift 2 (50%)"));
  CHECK(has(t, "by kind: attention 2 (50%) · mlp 1 (25%)"));         // onset and birth alike
  CHECK(count(t, "by kind: attention 2 (50%) · mlp 1 (25%)") == 3);  // top: L1 attention ×2
  CHECK(has(t, "sequence 3 left out: no flip (drift without flip)"));
  for (const auto* line : {"L0 attention", "L1 mlp", "none above the floor"}) CHECK(has(t, line));
  // every line within the width
  for (size_t i = 0, j; i < t.size(); i = j + 1) {
    j = t.find('\n', i);
    CHECK(ds::viewer::display_columns(t.substr(i, j - i)) <= 100);
  }
}

TEST_CASE("flips json: the fixture's numbers field by field", "[viewer][flips]") {
  const auto f = ds::test::flip_fixture();
  const auto j = ds::viewer::flips_json(ds::diff::aggregate_flips(f.pairs(), 0.05));
  CHECK(j["format"] == "driftscope-flips");
  CHECK(j["version"] == 1);
  CHECK(j["flips"] == 4);
  CHECK(j["pairs"] == 5);
  CHECK(j["steps"]["values"] == nlohmann::json({2, 2, 5, 10}));
  CHECK(j["steps"]["spread"]["median"] == 3.5);
  CHECK(j["margins"]["decades"] == nlohmann::json({2, 1, 0, 1}));
  CHECK(j["margins"]["near_tie"] == 2);
  CHECK(j["birth"]["by_layer"] == nlohmann::json({2, 1}));
  CHECK(j["birth"]["none"] == 1);
  CHECK(j["onset"]["cells"][0] ==
        nlohmann::json({{"kind", "attention"}, {"layer", 0}, {"count", 2}}));
  CHECK(j["noise_floor"] == 1e-3);  // the attribution's
  CHECK(j["storage"] == "bf16");
  CHECK(j["layers"][0]["above_floor"] == 1);  // against the site's own floor
  CHECK(j["layers"][0]["site_noise_floor"] == 3e-3);
  CHECK(j["layers"][0]["site_storage"] == "float16");
  CHECK(j["layers"][1]["above_floor"] == 3);
  CHECK(j["layers"][0]["growth_median"].is_null());  // NaN is null
  const auto& s1 = j["sequences"][1];
  CHECK(s1["forced"] == true);
  CHECK(s1["step"] == 2);
  CHECK(s1["margin_class"] == "accumulated");
  CHECK(s1["birth"]["block"] == "L0 mlp");
  CHECK(s1["birth"]["place"] == nlohmann::json({{"kind", "mlp"}, {"layer", 0}}));
  CHECK(j["sequences"][3] == nlohmann::json({{"seq", 3}, {"flipped", false}}));
  CHECK(j["sequences"][4]["onset"].is_null());
  CHECK(j["notes"].size() == 1);
}

TEST_CASE("flips html: the diff page's shell and hostile names as text", "[viewer][html][flips]") {
  auto f = ds::test::flip_fixture();
  const auto a = hostile_aggregate(f);
  const std::string h = ds::viewer::flips_html(a);
  CHECK(count(h, "<script") == 1);
  CHECK(h.find(kAttack) == std::string::npos);
  CHECK(has(h, "&lt;img src=x onerror=alert(1)&gt;"));
  const std::string d = ds::viewer::render_html(ds::diff::Report{});
  const std::string csp_open = "http-equiv=\"Content-Security-Policy\" content=\"";
  CHECK(between(h, csp_open, "\"") == between(d, csp_open, "\""));
  CHECK(between(h, "<style>", "</style>") == between(d, "<style>", "</style>"));
  CHECK(between(h, "<script>", "</script>") == between(d, "<script>", "</script>"));
  // one row per histogram cell and kind, with the struct's counts; one row per flipped sequence
  for (const auto* key : {"onset", "birth", "top"}) {
    const std::string places =
        between(h, std::string("<table class=\"places\" data-histogram=\"") + key, "</table>");
    const auto& hist = std::string(key) == "onset" ? a.onset : key[0] == 'b' ? a.birth : a.top;
    CHECK(count(places, "<tr data-kind=") == hist.cells.size());
    CHECK(count(places, "data-none=\"1\"") == (hist.none > 0 ? 1u : 0u));
  }
  CHECK(has(h, "<tr data-kind=\"attention\" data-layer=\"0\"><td>L0 attention</td>"));
  CHECK(count(between(h, "<table class=\"summary\">", "</table>"), "<tr data-seq=") == 4);
  CHECK(count(h, "<tr data-decade=") == 4);
  CHECK(has(h, "local error against the attribution's noise floor 1.00e-03 (bf16)"));
  CHECK(has(h, "(the rounding of its float16 storage, as for the onset), not the attribution's"));
  CHECK(has(h, "<td class=\"num\">1/4</td><td class=\"num\">3.00e-03</td>"));
  CHECK(count(h, "<svg class=\"chart flips\"") == 1);
}

TEST_CASE("flips html: chromium renders the fixture's page", "[viewer][html][browser][flips]") {
  const std::string chromium = ds::test::find_chromium();
  if (chromium.empty())
    FAIL("chromium not found on PATH: run scripts/setup_browser.sh (Debian package chromium)");
  auto f = ds::test::flip_fixture();
  const auto a = hostile_aggregate(f);
  ds::test::TempDir tmp;
  const auto page = tmp.path() / "flips.html";
  std::ofstream(page) << ds::viewer::flips_html(a);
  const auto dom = ds::test::run_chromium(chromium, "--dump-dom", page);
  REQUIRE(dom.exit_code == 0);
  INFO(dom.log);
  CHECK(ds::test::page_errors(dom.log).empty());
  CHECK(has(dom.out, "50% of the 4 flips were near-ties under 0.05 logit"));
  CHECK(count(dom.out, "<svg class=\"chart flips\"") == 1);
  CHECK(count(dom.out, "<svg class=\"cbar\"") ==
        4 + a.onset.kinds.size() + a.onset.cells.size() + 1 + a.birth.kinds.size() +
            a.birth.cells.size() + 1 + a.top.kinds.size() + a.top.cells.size() + 1);
  CHECK(count(dom.out, "<img") == 0);  // the hostile name stayed text
  const auto png = tmp.path() / "flips.png";
  const auto shot = ds::test::run_chromium(
      chromium, "--window-size=1280,1600 --screenshot='" + png.string() + "'", page);
  REQUIRE(shot.exit_code == 0);
  CHECK(ds::test::page_errors(shot.log).empty());
  const auto img = ds::test::read_png(png);
  size_t bars = 0, other = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      bars += img.pixel(x, y) == 0x5a8fc8;  // the bars' fill (.bar in the page's CSS)
      other += img.pixel(x, y) != 0xffffff;
    }
  }
  CHECK(bars > 500);
  CHECK(other > static_cast<size_t>(img.width) * img.height / 50);
}
