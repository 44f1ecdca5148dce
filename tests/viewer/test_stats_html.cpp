// The HTML page of `driftscope stats` without a browser, from a hand-built report: hostile run
// names, knobs and group keys shown as text, the Content-Security-Policy hash against OpenSSL's
// SHA-256 of the page's own stylesheet, one Div_Index histogram per group with hand-counted bars,
// and the pairwise matrix's N×N cells against the struct's values.
#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <regex>
#include <string>

#include "tests/support/text.h"
#include "viewer/stats_html.h"

using ds::test::between;
using ds::test::count;
using ds::test::sha256_base64;

namespace {

using namespace ds::diff;

const std::string kAttack = "<img src=x onerror=alert(1)>";
const std::string kAttackEscaped = "&lt;img src=x onerror=alert(1)&gt;";

StatsReport hostile_report() {
  StatsReport r;
  r.runs = {"a" + kAttack, "b</td>", "c&d"};
  r.missing = {"m" + kAttack};
  r.varying = {"k" + kAttack};
  r.group_by = "k" + kAttack;
  GroupStats all;
  all.key = "all";
  all.runs = r.runs;
  all.prompts = 4;
  all.div_index = {0, 2, 2, 5};
  all.div_percent = 75;
  all.avg_std_top1_prob = 0.0125;
  all.top1_prompts = 3;
  all.unique_outputs = {2, 2, 1, 3};
  GroupStats odd;
  odd.key = "k" + kAttack + "=1";
  odd.runs = {r.runs[0]};
  odd.prompts = 4;
  odd.div_index = {5, 5, 5, 5};
  odd.avg_std_top1_prob = NAN;  // one run: nothing spreads
  r.groups = {all, odd};
  r.attribution = {{"k" + kAttack, 1, 50.0, NAN}};
  r.pairwise_differ = {{0, 25, 50}, {25, 0, 100}, {50, 100, 0}};
  return r;
}

}  // namespace

TEST_CASE("stats html: hostile names are text, the CSP allows exactly the page's stylesheet",
          "[viewer][html][stats]") {
  const std::string page = ds::viewer::render_stats_html(hostile_report());
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find(kAttack) == std::string::npos);
  CHECK(page.find("b</td>") == std::string::npos);
  CHECK(page.find("b&lt;/td&gt;") != std::string::npos);
  CHECK(page.find("c&amp;d") != std::string::npos);
  CHECK(count(page, kAttackEscaped) >= 6);  // run, missing, knob, group-by, group key, attribution
  CHECK(page.find("<script") == std::string::npos);
  const std::string csp = between(page, "Content-Security-Policy\" content=\"", "\"");
  const std::string style = between(page, "<style>", "</style>");
  INFO("style hash: sha256-" << sha256_base64(style));
  CHECK(csp == "default-src 'none'; style-src 'sha256-" + sha256_base64(style) + "'");
}

TEST_CASE("stats html: one Div_Index histogram per group, bars counted by hand",
          "[viewer][html][stats]") {
  const std::string page = ds::viewer::render_stats_html(hostile_report());
  CHECK(count(page, "<svg class=\"chart divindex\"") == 2);
  CHECK(count(page, "data-group=\"all\"") == 1);
  CHECK(count(page, "data-group=\"k" + kAttackEscaped + "=1\"") == 1);
  // "all": Div_Index 0, 2, 2, 5 -> bars 0 (1), 2 (2), 5 (1); the other group: 5 (4).
  const std::string all = between(page, "data-group=\"all\"", "</svg>");
  CHECK(count(all, "<rect class=\"bar\"") == 3);
  CHECK(count(all, "<title>Div_Index 0: 1 prompt</title>") == 1);
  CHECK(count(all, "<title>Div_Index 2: 2 prompts</title>") == 1);
  CHECK(count(all, "<title>Div_Index 5: 1 prompt</title>") == 1);
  const std::string odd = between(page, "data-group=\"k" + kAttackEscaped + "=1\"", "</svg>");
  CHECK(count(odd, "<rect class=\"bar\"") == 1);
  CHECK(count(odd, "<title>Div_Index 5: 4 prompts</title>") == 1);
  // Avg_Std@top1_prob: a bar for "all", a dash for the group without a value.
  const std::string top1 = between(page, "<svg class=\"chart top1\"", "</svg>");
  CHECK(count(top1, "<rect class=\"bar\"") == 1);
  CHECK(top1.find("1.250e-02") != std::string::npos);
  CHECK(top1.find("— (no position before Div_Index)") != std::string::npos);
}

TEST_CASE("stats html: bins of several values when Div_Index spans more than max_bins",
          "[viewer][html][stats]") {
  StatsReport r = hostile_report();
  r.groups.resize(1);
  r.groups[0].div_index = {0, 3, 4, 9};  // max 9, 10 values into 5 bins of 2: 0–1, 2–3, 4–5, 8–9
  ds::viewer::StatsHtmlOptions opt;
  opt.max_bins = 5;
  const std::string svg =
      between(ds::viewer::render_stats_html(r, opt), "data-group=\"all\"", "</svg>");
  CHECK(count(svg, "<rect class=\"bar\"") == 4);
  CHECK(svg.find("<title>Div_Index 0–1: 1 prompt</title>") != std::string::npos);
  CHECK(svg.find("<title>Div_Index 2–3: 1 prompt</title>") != std::string::npos);
  CHECK(svg.find("<title>Div_Index 4–5: 1 prompt</title>") != std::string::npos);
  CHECK(svg.find("<title>Div_Index 8–9: 1 prompt</title>") != std::string::npos);
}

TEST_CASE("stats html: the pairwise matrix has N×N cells with the struct's values",
          "[viewer][html][stats]") {
  const StatsReport r = hostile_report();
  const std::string page = ds::viewer::render_stats_html(r);
  const std::string table = between(page, "<table class=\"matrix\">", "</table>");
  CHECK(count(table, "<tr>") == 4);  // the column heads and one row per run
  const std::regex cell_re("<td class=\"pd p([0-9])\" title=\"[^\"]*\">([^<]*)</td>");
  std::vector<std::string> values, classes;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), cell_re);
       it != std::sregex_iterator(); ++it) {
    classes.push_back((*it)[1]);
    values.push_back((*it)[2]);
  }
  REQUIRE(values.size() == 9);
  // Row-major, written out by hand from hostile_report()'s matrix.
  CHECK(values == std::vector<std::string>{"0.0", "25.0", "50.0", "25.0", "0.0", "100.0", "50.0",
                                           "100.0", "0.0"});
  // Colour classes: 0 -> p0, (0,20] p1, (20,40] p2, (40,60] p3, (60,80] p4, (80,100] p5.
  CHECK(classes == std::vector<std::string>{"0", "2", "3", "2", "0", "5", "3", "5", "0"});
  CHECK(table.find("title=\"b&lt;/td&gt; vs c&amp;d: 100.0 %\"") != std::string::npos);

  ds::viewer::StatsHtmlOptions opt;
  opt.max_matrix_runs = 2;
  const std::string small = ds::viewer::render_stats_html(r, opt);
  CHECK(small.find("<table class=\"matrix\">") == std::string::npos);
  CHECK(small.find("pairwise_differ_percent") != std::string::npos);
}
