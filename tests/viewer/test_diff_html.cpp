// The HTML report without a browser: escaping against hand-written expectations, hostile text
// shown as text, the Content-Security-Policy hashes against OpenSSL's SHA-256 of the page's own
// style and script, the heat map's colour classes against hand-computed decades, and binning.
#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <regex>
#include <string>

#include "tests/support/text.h"
#include "viewer/diff_html.h"
#include "viewer/html_escape.h"

using ds::test::between;
using ds::test::count;
using ds::test::sha256_base64;

namespace {

using namespace ds::diff;
using ds::viewer::html_escape;

const std::string kAttack = "<img src=x onerror=alert(1)>";

// One sequence that flips at step 1 of a 3-token prompt, with hostile text everywhere a string
// from a trace can appear, and a layer view whose values span known decades.
SequenceReport hostile_sequence(int index) {
  SequenceReport s;
  s.index = index;
  s.prompt_len_a = s.prompt_len_b = 3;
  s.gen_len_a = s.gen_len_b = 4;
  s.stop_reason_a = s.stop_reason_b = "max_new";
  s.compared = 4;
  FirstFlip f;
  f.step = 1;
  f.position = 4;
  f.row = 3;
  f.token_a = 7;
  f.token_b = 8;
  f.text_a = "</script>";
  f.text_b = kAttack;
  f.top5_a = {{7, 0.6, 3, "</script>"}, {8, 0.4, 2.6, kAttack}};
  f.top5_b = {{8, 0.55, 3, kAttack}, {7, 0.45, 2.8, "</script>"}};
  f.context = kAttack;
  f.continuation_a = "bad \xC3\x28 utf8 \x01 ctl";
  f.continuation_b = "</script><script>alert(2)</script>";
  s.first_flip = f;
  s.has_logits = true;
  s.logits.positions = 4;
  for (int i = 0; i < 4; ++i) {
    PositionRow p;
    p.kl = i * 1e-4;
    p.jaccard = 1;
    p.margin_logit_a = p.margin_logit_b = 4 - i;
    p.at_risk = i == 3;
    s.positions.push_back(p);
  }
  SiteDrift d;
  d.site = "L0/out";
  d.layer = 0;
  d.noise_floor = 1e-6;
  s.drift = {d};
  // The scale spans the decades around 2e-3 .. 5e-2: 1e-3 .. 1e-1, t = (log10 x + 3) / 2 in 12
  // classes: 2e-3 -> t 0.1505 -> h1, 2e-2 -> 0.6505 -> h7, 5e-2 -> 0.8495 -> h10; 0, 1e-7 (below
  // the floor 1e-6) and NaN have their own classes.
  s.layers = {{0, "L0/out", 1e-2, std::nullopt, {2e-3f, 2e-2f, 5e-2f, 0.0f}},
              {1, "L1/<b>out", 1e-2, 2.0, {1e-7f, NAN, 5e-2f, 5e-2f}}};
  s.verdict = Verdict::flip;
  s.notes = {kAttack};
  return s;
}

Report hostile_report(int sequences) {
  Report r;
  r.a = {"runs/\"><script>alert(3)</script>.h5", true, "finished", "0.1.0", {"m.bin 00"}, 1};
  r.b = {"runs/b&c.h5", true, "finished", "0.1.0", {"m.bin 00"}, 1};
  r.config_diff = {{"dtype", "\"fp32\"", "\"bf16\""},
                   {"model.tokenizer.sha256", "\"aa\"", "\"" + kAttack + "\""}};
  for (int i = 0; i < sequences; ++i) r.sequences.push_back(hostile_sequence(i));
  r.summary = {sequences, sequences, 100.0, 0, sequences};
  return r;
}

}  // namespace

TEST_CASE("html_escape: markup, invalid UTF-8 and control characters become visible text",
          "[viewer][html]") {
  CHECK(html_escape(kAttack) == "&lt;img src=x onerror=alert(1)&gt;");
  CHECK(html_escape("</script>") == "&lt;/script&gt;");
  CHECK(html_escape("a&b \"q\" 'p'") == "a&amp;b &quot;q&quot; &#39;p&#39;");
  CHECK(html_escape("é ✓ 😀") == "é ✓ 😀");  // valid UTF-8 passes through
  CHECK(html_escape("tab\tnl\n") == "tab\tnl\n");
  // Controls as Control Pictures: U+0001 -> U+2401, U+001B -> U+241B, DEL -> U+2421; NUL too.
  CHECK(html_escape(std::string("\x01\x1b\x7f", 3)) == "\u2401\u241b\u2421");
  CHECK(html_escape(std::string("a\0b", 3)) == "a\u2400b");
  CHECK(html_escape("\xC2\x85") == "\uFFFD");  // C1 control U+0085
  // Invalid UTF-8, one U+FFFD per maximal invalid subpart (what a browser's decoder shows;
  // e.g. Python's bytes.decode("utf-8", "replace") gives the same).
  CHECK(html_escape("\xC3\x28") == "\uFFFD(");                           // missing continuation
  CHECK(html_escape("\xC0\xAF") == "\uFFFD\uFFFD");                      // overlong
  CHECK(html_escape("\xED\xA0\x80") == "\uFFFD\uFFFD\uFFFD");            // surrogate
  CHECK(html_escape("\xF4\x90\x80\x80") == "\uFFFD\uFFFD\uFFFD\uFFFD");  // beyond U+10FFFF
  CHECK(html_escape("\xE2\x9C") == "\uFFFD");                            // truncated at the end
  CHECK(html_escape("\x80<") == "\uFFFD&lt;");                           // stray continuation
  CHECK(ds::viewer::html_quote("\n<") == "&quot;\\n&lt;&quot;");
}

TEST_CASE("html report shows hostile prompts, tokens and paths as text", "[viewer][html]") {
  const std::string h = ds::viewer::render_html(hostile_report(2));
  // The page's own script is the only one; no injected element survives.
  CHECK(count(h, "<script") == 1);
  CHECK(count(h, "</script>") == 1);
  CHECK(h.find("<img") == std::string::npos);
  CHECK(h.find("<b>out") == std::string::npos);
  CHECK(h.find("&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  CHECK(h.find("&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;") != std::string::npos);
  CHECK(h.find("runs/&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;.h5") != std::string::npos);
  CHECK(h.find("runs/b&amp;c.h5") != std::string::npos);
  CHECK(h.find("bad \uFFFD( utf8 \u2401 ctl") != std::string::npos);
  // A token in a table is quoted like the terminal shows it.
  CHECK(h.find("&quot;&lt;/script&gt;&quot;") != std::string::npos);
  // The tokenizer difference is listed apart from the config differences.
  CHECK(between(h, "<table class=\"tokenizer\">", "</table>").find("model.tokenizer.sha256") !=
        std::string::npos);
  CHECK(between(h, "<table class=\"config\">", "</table>").find("tokenizer") == std::string::npos);
}

TEST_CASE("html report: the CSP allows exactly the page's style and script, nothing is fetched",
          "[viewer][html]") {
  const std::string h = ds::viewer::render_html(hostile_report(1));
  const std::string csp = between(h, "http-equiv=\"Content-Security-Policy\" content=\"", "\"");
  const std::string style = between(h, "<style>", "</style>");
  const std::string script = between(h, "<script>", "</script>");
  INFO("style sha256-" << sha256_base64(style) << ", script sha256-" << sha256_base64(script));
  CHECK(csp.find("default-src 'none'") != std::string::npos);
  CHECK(csp.find("style-src 'sha256-" + sha256_base64(style) + "'") != std::string::npos);
  CHECK(csp.find("script-src 'sha256-" + sha256_base64(script) + "'") != std::string::npos);
  // No external reference of any kind.
  for (const char* ref : {" src=\"", "href=\"http", "url(", "@import", "<link"}) {
    INFO(ref);
    CHECK(h.find(ref) == std::string::npos);
  }
}

TEST_CASE("html heat map: log colour classes by decade, special colours, flip column",
          "[viewer][html]") {
  const std::string h = ds::viewer::render_html(hostile_report(1));
  const std::string heat = between(h, "<svg class=\"heat\"", "</svg>");
  // Row L0/out: 2e-3, 2e-2, 5e-2, 0 -> classes h1, h7, h10, hz, one rect each (no equal runs).
  const std::string row0 = between(heat, "data-site=\"L0/out\"", "</g>");
  const std::regex cls("<rect class=\"([a-z0-9]+)\"");
  std::vector<std::string> got;
  for (std::sregex_iterator it(row0.begin(), row0.end(), cls), end; it != end; ++it)
    got.push_back((*it)[1]);
  CHECK(got == std::vector<std::string>{"h1", "h7", "h10", "hz"});
  // Row L1: 1e-7 below the floor, NaN, then two equal values merged into one rect.
  const std::string row1 = between(heat, "data-site=\"L1/&lt;b&gt;out\"", "</g>");
  got.clear();
  for (std::sregex_iterator it(row1.begin(), row1.end(), cls), end; it != end; ++it)
    got.push_back((*it)[1]);
  CHECK(got == std::vector<std::string>{"hf", "hn", "h10"});
  CHECK(row1.find("data-v=\"1e-07 NaN 0.05 0.05\"") != std::string::npos);
  // The legend names the decades of the scale.
  for (const char* d : {">1e-3<", ">1e-2<", ">1e-1<"}) CHECK(heat.find(d) != std::string::npos);
  // The flip (row 3) is outlined in the last of 4 columns: x = 96 + 3 * 760 / 4.
  CHECK(heat.find("<g class=\"flipmark\"><title>flip: row 3") != std::string::npos);
  CHECK(between(heat, "<g class=\"flipmark\">", "</g>").find("x=\"666.0\"") != std::string::npos);
  // The margin chart marks the at-risk row 3 (the only one).
  const std::string margin = between(h, "<svg class=\"chart margin\"", "</svg>");
  CHECK(count(margin, "<rect class=\"risk\"") == 1);
  CHECK(count(h, "<svg class=\"chart kl\"") == 1);
  CHECK(count(h, "<svg class=\"chart jaccard\"") == 1);
  CHECK(count(h, "<svg class=\"chart flips\"") == 1);
}

TEST_CASE("html report: sections capped, long sequences binned, size bounded", "[viewer][html]") {
  Report r = hostile_report(100);
  // Sequence 0: 10000 positions, binned into at most max_columns columns (max per bin).
  auto& s = r.sequences[0];
  s.compared = 10000;
  s.positions.assign(10000, s.positions[0]);
  for (auto& l : s.layers) l.rel_l2.assign(10000, 1e-2f);
  s.layers[0].rel_l2[9999] = 1e-1f;
  ds::viewer::HtmlOptions opt;
  opt.max_sections = 40;
  opt.max_columns = 200;
  const std::string h = ds::viewer::render_html(r, opt);
  CHECK(count(h, "<section class=\"seq\"") == 40);
  CHECK(h.find("40 of 100 sequences have a section here") != std::string::npos);
  CHECK(count(h, "<tr><td><a href=\"#seq-") == 40);  // the table links the sections only
  // 10000 / 200 = 50 positions per column: 200 values, the last column holding the maximum.
  const std::string row0 = between(h, "data-site=\"L0/out\" data-v=\"", "\"");
  CHECK(count(row0, " ") == 199);
  CHECK(row0.substr(row0.rfind(' ') + 1) == "0.1");
  CHECK(h.find("(50 positions per column, maximum)") != std::string::npos);
  INFO("size " << h.size());
  CHECK(h.size() < 2'000'000);
}

TEST_CASE("html report: sections stop at the size budget for a large model", "[viewer][html]") {
  // 40 sequences of 32 layers × 2000 positions, values that change every position (no runs).
  Report r = hostile_report(40);
  for (auto& s : r.sequences) {
    s.compared = 2000;
    s.positions.assign(2000, s.positions[0]);
    s.layers.clear();
    for (int l = 0; l < 32; ++l) {
      LayerDrift d{l, fmt::format("L{}/out", l), 1e-2, std::nullopt, {}};
      for (int p = 0; p < 2000; ++p) d.rel_l2.push_back(std::pow(10.0f, -1.0f - (p % 7)));
      s.layers.push_back(d);
    }
  }
  const std::string h = ds::viewer::render_html(r);
  INFO("size " << h.size());
  CHECK(h.size() <= 2'000'000);
  const size_t sections = count(h, "<section class=\"seq\"");
  CHECK(sections >= 1);
  CHECK(sections < 40);
  CHECK(h.find(std::to_string(sections) + " of 40 sequences have a section here") !=
        std::string::npos);
  CHECK(count(h, "<tr><td><a href=\"#seq-") == sections);
}

TEST_CASE("html report: the kernels that differ, names in full and escaped", "[viewer][html]") {
  Report r = hostile_report(1);
  CHECK(ds::viewer::render_html(r).find("kernels that differ") == std::string::npos);
  r.kernels.tables = KernelTables::only_b;
  CHECK(ds::viewer::render_html(r).find("only B has a /kernels table") != std::string::npos);
  r.kernels.tables = KernelTables::both;
  r.kernels.sites_compared = 3;
  r.kernels.passes_compared = 2;
  SiteKernels site;
  site.site = "L0/o_proj";
  site.rel_l2_median = 1.5e-3;
  site.only_a = {{"o_proj", "void gemm<float, 2>(float const*, float*)", 4, 100, {}}};
  KernelUse a{"o_proj", "splitk<bf16>", 2, 50, {{{1, 1, 1}, {128, 1, 1}, 2}}};
  KernelUse b{"o_proj", "splitk<bf16>", 2, 60, {{{1, 1, 4}, {128, 1, 1}, 2}}};
  site.changed = {{a, b}};
  r.kernels.sites = {site};
  const std::string h = ds::viewer::render_html(r);
  CHECK(h.find("1 of 3 sites differ over 2 passes") != std::string::npos);
  CHECK(h.find("void gemm&lt;float, 2&gt;(float const*, float*)") != std::string::npos);
  CHECK(h.find("<td>only A</td>") != std::string::npos);
  CHECK(h.find("A: ×2 grid (1,1,1) block (128,1,1)<br>B: ×2 grid (1,1,4) block (128,1,1)") !=
        std::string::npos);
  CHECK(h.find("<gemm") == std::string::npos);
}
