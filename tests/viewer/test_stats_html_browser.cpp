// `driftscope stats --html` in a real browser: a 2×2 sweep of the bundled kjv-llama (dtype ×
// tp, few prompts and tokens), its page rendered by headless chromium. What the DOM must hold is
// taken from the `--json` output of the same run: one Div_Index histogram per group listed there,
// an N×N matrix whose cells are the JSON's pairwise values; no page error, a non-blank
// screenshot. An unwritable --html path is an input error. No chromium is a failure.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/support/browser.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace fs = std::filesystem;
using ds::test::run_cli;

using ds::test::count;

namespace {}  // namespace

TEST_CASE("stats --html: chromium renders a 2x2 sweep's page as its JSON says",
          "[viewer][html][browser][stats]") {
  const std::string chromium = ds::test::find_chromium();
  if (chromium.empty())
    FAIL("chromium not found on PATH: run scripts/setup_browser.sh (Debian package chromium)");
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", dir = tmp.path() / "sw";
  std::ofstream(prompts) << "Once upon a time\nThe little dog\nTom and Lily went to the park\n"
                            "The sun was hot\n";
  REQUIRE(run_cli("sweep -q --grid 'dtype=fp32,bf16 tp=1,2' -n 16 --prompts " + prompts.string() +
                  " -j 2 -o " + dir.string())
              .exit_code == 0);
  const fs::path html = tmp.path() / "s.html", js = tmp.path() / "s.json";
  const auto r =
      run_cli("stats " + dir.string() + " --json " + js.string() + " --html " + html.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(fs::exists(html));
  const auto j = nlohmann::json::parse(std::ifstream(js));
  const size_t n = j["runs"].size();
  REQUIRE(n == 4);
  REQUIRE(j["groups"].size() == 3);  // all, dtype=fp32, dtype=bf16
  REQUIRE(j["pairwise_differ_percent"].size() == n);

  const auto dom = ds::test::run_chromium(chromium, "--dump-dom", html);
  REQUIRE(dom.exit_code == 0);
  INFO(dom.log);
  CHECK(ds::test::page_errors(dom.log).empty());
  CHECK(count(dom.out, "<svg class=\"chart divindex\"") == j["groups"].size());
  for (const auto& g : j["groups"]) {
    INFO("group " << g["key"]);
    CHECK(count(dom.out, "data-group=\"" + g["key"].get<std::string>() + "\"") == 1);
  }
  CHECK(count(dom.out, "<svg class=\"chart top1\"") == 1);
  // The matrix: N×N cells, row-major, each the JSON's value to one decimal.
  const size_t a = dom.out.find("<table class=\"matrix\">");
  REQUIRE(a != std::string::npos);
  const std::string table = dom.out.substr(a, dom.out.find("</table>", a) - a);
  const std::regex cell_re("<td class=\"pd p[0-9]\" title=\"[^\"]*\">([^<]*)</td>");
  std::vector<std::string> cells;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), cell_re);
       it != std::sregex_iterator(); ++it) {
    cells.push_back((*it)[1]);
  }
  REQUIRE(cells.size() == n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < n; ++k) {
      CHECK(cells[i * n + k] ==
            fmt::format("{:.1f}", j["pairwise_differ_percent"][i][k].get<double>()));
    }
  }
  for (const auto& k : j["attribution"]) {
    CHECK(dom.out.find("<code>" + k["knob"].get<std::string>() + "</code>") != std::string::npos);
  }

  const auto png = tmp.path() / "s.png";
  const auto shot = ds::test::run_chromium(
      chromium, "--window-size=1280,1600 --screenshot='" + png.string() + "'", html);
  REQUIRE(shot.exit_code == 0);
  CHECK(ds::test::page_errors(shot.log).empty());
  const auto img = ds::test::read_png(png);
  const uint32_t background = img.pixel(0, 0);
  size_t other = 0, bars = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      const uint32_t p = img.pixel(x, y);
      other += p != background;
      bars += p == 0x5a8fc8;  // the bars' fill (.bar in the page's CSS)
    }
  }
  CHECK(background == 0xffffff);
  CHECK(other > static_cast<size_t>(img.width) * img.height / 50);
  CHECK(bars > 100);

  // An unwritable path is an input error.
  ds::test::check_input_error(
      run_cli("stats " + dir.string() + " --html " + (tmp.path() / "no/such/dir.html").string()),
      "cannot write the HTML report");
  // --help names the option.
  CHECK(run_cli("stats --help").out.find("--html") != std::string::npos);
}
