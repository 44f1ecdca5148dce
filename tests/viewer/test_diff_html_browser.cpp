// The HTML report in a real browser: Debian's chromium renders the demo's report headless; the
// DOM holds one section per sequence with its SVG pictures, the screenshot shows the heat map's
// colours, and the browser logs no page error. No chromium is a failure (scripts/setup_browser.sh
// installs it), never a silent skip.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/support/browser.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace fs = std::filesystem;

using ds::test::count;
using ds::test::slurp;

namespace {

std::string require_chromium() {
  const std::string c = ds::test::find_chromium();
  if (c.empty())
    FAIL("chromium not found on PATH: run scripts/setup_browser.sh (Debian package chromium)");
  return c;
}

// The DOM of section `id`: from its opening tag to the next section's.
std::string section(const std::string& dom, int index) {
  const std::string open = "<section class=\"seq\" id=\"seq-" + std::to_string(index) + "\"";
  const size_t a = dom.find(open);
  if (a == std::string::npos) return {};
  return dom.substr(a, dom.find("</section>", a) - a);
}

}  // namespace

TEST_CASE("browser check: a page's script error is caught, a clean page passes",
          "[viewer][html][browser]") {
  const std::string chromium = require_chromium();
  ds::test::TempDir dir;
  const auto bad = dir.path() / "bad.html", good = dir.path() / "good.html";
  std::ofstream(bad) << "<!DOCTYPE html><p>x</p><script>throw new Error('boom')</script>";
  std::ofstream(good) << "<!DOCTYPE html><p>x</p><script>document.title = 'ok'</script>";
  const auto b = ds::test::run_chromium(chromium, "--dump-dom", bad);
  REQUIRE(b.exit_code == 0);
  const auto errors = ds::test::page_errors(b.log);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("boom") != std::string::npos);
  const auto g = ds::test::run_chromium(chromium, "--dump-dom", good);
  REQUIRE(g.exit_code == 0);
  CHECK(g.out.find("<title>ok</title>") != std::string::npos);  // the script ran
  CHECK(ds::test::page_errors(g.log).empty());
}

TEST_CASE("demo --html: chromium renders the report, one section per sequence, no page error",
          "[viewer][html][browser]") {
  const std::string chromium = require_chromium();
  ds::test::TempDir dir;
  const auto out = dir.path() / "demo";
  const auto r = ds::test::run_cli("demo --max-new 40 --html --color never --out " + out.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto html = out / "report.html";
  CHECK(r.out.find("HTML report: " + html.string()) != std::string::npos);
  REQUIRE(fs::exists(html));
  CHECK(fs::file_size(html) <= 2'000'000);

  // `diff --html` on the demo's traces writes the same page; an unwritable path is an input error.
  const auto again = dir.path() / "again.html";
  const std::string traces = (out / "a.h5").string() + " " + (out / "b.h5").string();
  REQUIRE(ds::test::run_cli("diff -q " + traces + " --html " + again.string()).exit_code == 0);
  CHECK(slurp(again) == slurp(html));
  ds::test::check_input_error(ds::test::run_cli("diff -q " + traces + " --html " +
                                                (dir.path() / "no/such/dir.html").string()),
                              "cannot write the HTML report");

  // What to expect, from the JSON report of the same run.
  const auto report = nlohmann::json::parse(std::ifstream(out / "report.json"));
  std::set<int> flipped, all;
  for (const auto& s : report["sequences"]) {
    all.insert(s["index"].get<int>());
    if (!s["first_flip"].is_null()) flipped.insert(s["index"].get<int>());
  }
  REQUIRE(!all.empty());

  const auto dom = ds::test::run_chromium(chromium, "--dump-dom", html);
  REQUIRE(dom.exit_code == 0);
  INFO(dom.log);
  CHECK(ds::test::page_errors(dom.log).empty());
  CHECK(count(dom.out, "<section class=\"seq\"") == all.size());
  for (int i : all) {
    INFO("sequence " << i);
    const std::string s = section(dom.out, i);
    REQUIRE(!s.empty());
    CHECK(count(s, "<svg class=\"heat\"") == 1);
    CHECK(count(s, "<svg class=\"chart margin\"") == 1);
    CHECK(count(s, "<svg class=\"chart kl\"") == 1);
    CHECK(count(s, "<svg class=\"chart jaccard\"") == 1);
    CHECK(s.find("<polyline") != std::string::npos);
    // The flip is marked on the heat map and the three charts exactly when the sequence flips.
    CHECK(count(s, "<g class=\"flipmark\">") == (flipped.count(i) ? 4u : 0u));
    CHECK((s.find("<table class=\"top5\">") != std::string::npos) == (flipped.count(i) > 0));
  }
  CHECK(count(dom.out, "<svg class=\"chart flips\"") == (flipped.empty() ? 0u : 1u));

  const auto png = dir.path() / "report.png";
  const auto shot = ds::test::run_chromium(
      chromium, "--window-size=1280,2400 --screenshot='" + png.string() + "'", html);
  REQUIRE(shot.exit_code == 0);
  INFO(shot.log);
  CHECK(ds::test::page_errors(shot.log).empty());
  const auto img = ds::test::read_png(png);
  CHECK(img.width == 1280);
  CHECK(img.height == 2400);
  // Not blank: many pixels differ from the background, and the heat map's palette (the CSS
  // colours .h0 .. .h11) is painted: at least three of its colours appear exactly.
  const uint32_t background = img.pixel(0, 0);
  size_t other = 0;
  std::set<uint32_t> palette = {0x440154, 0x482173, 0x433e85, 0x38588c, 0x2d708e, 0x25858e,
                                0x1e9b8a, 0x2ab07f, 0x52c569, 0x86d549, 0xc2df23, 0xfde725};
  std::set<uint32_t> seen;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      const uint32_t p = img.pixel(x, y);
      other += p != background;
      if (palette.count(p)) seen.insert(p);
    }
  }
  CHECK(background == 0xffffff);
  CHECK(other > static_cast<size_t>(img.width) * img.height / 50);
  CHECK(seen.size() >= 3);
}

TEST_CASE("attribute --html: chromium renders one bar pair per block of the JSON report",
          "[viewer][html][browser][attribute]") {
  const std::string chromium = require_chromium();
  ds::test::TempDir dir;
  // Reference A (fp32, every probe, so attention and MLP are apart) on two bundled prompts.
  const auto prompts = dir.path() / "prompts.txt";
  {
    std::ifstream in(DRIFTSCOPE_SOURCE_DIR "/models/kjv-llama/prompts.txt");
    std::ofstream p(prompts);
    std::string line;
    for (int i = 0; i < 2 && std::getline(in, line); ++i) p << line << "\n";
  }
  const std::string a = (dir.path() / "a.h5").string();
  REQUIRE(ds::test::run_cli("run -q -n 12 --probes all --prompts " + prompts.string() + " -o " + a)
              .exit_code == 0);
  const auto html = dir.path() / "attribute.html", json = dir.path() / "attribute.json";
  // B: A's configuration with L3's MLP output rounded to bf16 (the test-only planted
  // perturbation of tests/cli/test_cli_attribute.cpp), so the page has an origin to mark.
  const auto r = ds::test::run_cli("attribute -q " + a + " --test-perturb L3/mlp_out:bf16 --json " +
                                   json.string() + " --html " + html.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.empty());
  REQUIRE(fs::exists(html));

  // What to expect, from the JSON report of the same run.
  const auto report = nlohmann::json::parse(std::ifstream(json));
  REQUIRE(report["split"] == true);
  const auto& blocks = report["blocks"];
  REQUIRE(blocks.size() > 0);
  size_t origins = 0;
  for (const auto& b : blocks) origins += b["origin"].get<bool>();
  REQUIRE(origins > 0);
  REQUIRE(origins < blocks.size());

  const auto dom = ds::test::run_chromium(chromium, "--dump-dom", html);
  REQUIRE(dom.exit_code == 0);
  INFO(dom.log);
  CHECK(ds::test::page_errors(dom.log).empty());
  CHECK(count(dom.out, "<svg class=\"apair\"") == blocks.size());
  CHECK(count(dom.out, "data-origin=\"1\"") == origins);
  CHECK(count(dom.out, "<tr class=\"rank") == report["ranking"].size());
  for (const auto& b : blocks) {
    const std::string name = b["name"].get<std::string>();
    INFO("block " << name);
    const std::string open = "<svg class=\"apair\" data-block=\"" + name + "\" data-origin=\"" +
                             (b["origin"].get<bool>() ? "1" : "0") + "\"";
    CHECK(count(dom.out, open) == 1);
    const std::string kind = b["kind"].get<std::string>();
    const std::string sec = dom.out.substr(dom.out.find("<section class=\"blocks " + kind + "\">"));
    CHECK(sec.substr(0, sec.find("</section>")).find(open) != std::string::npos);
  }
  // The verdict line as chromium serializes text: & < > escaped, quotes as they are.
  std::string verdict;
  for (char c : report["verdict"].get<std::string>()) {
    verdict += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  }
  CHECK(dom.out.find("<p class=\"verdict\"><b>verdict:</b> " + verdict + "</p>") !=
        std::string::npos);

  const auto png = dir.path() / "attribute.png";
  const auto shot = ds::test::run_chromium(
      chromium, "--window-size=1280,1600 --screenshot='" + png.string() + "'", html);
  REQUIRE(shot.exit_code == 0);
  INFO(shot.log);
  CHECK(ds::test::page_errors(shot.log).empty());
  const auto img = ds::test::read_png(png);
  // Not blank, and both bar colours (.key.a local, .key.b total) are painted.
  const uint32_t background = img.pixel(0, 0);
  size_t other = 0, local = 0, total = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      const uint32_t p = img.pixel(x, y);
      other += p != background;
      local += p == 0x1f5fa8;
      total += p == 0xb5461b;
    }
  }
  CHECK(background == 0xffffff);
  CHECK(other > static_cast<size_t>(img.width) * img.height / 100);
  CHECK(local > 100);
  CHECK(total > 100);
}
