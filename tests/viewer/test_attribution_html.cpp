// The HTML page of an attribution report without a browser, from a hand-built report: hostile
// names shown as text, the diff page's shell and CSP, one bar pair per block and the origins
// marked as the struct says, and bar lengths on the log scale computed by hand.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/text.h"
#include "viewer/attribution_html.h"
#include "viewer/attribution_json.h"
#include "viewer/attribution_terminal.h"
#include "viewer/diff_html.h"

using ds::test::between;
using ds::test::count;

namespace {

using namespace ds::diff;

const std::string kAttack = "<img src=x onerror=alert(1)>";

BlockError block(std::string name, std::string kind, int layer, double local, double total,
                 bool origin) {
  BlockError b;
  b.name = std::move(name);
  b.kind = std::move(kind);
  b.layer = layer;
  b.site = layer >= 0 ? "L" + std::to_string(layer) + "/out" : b.kind;
  b.local = local;
  b.total = total;
  b.inherited = total - local;
  b.origin = origin;
  return b;
}

// Two split layers. Noise floor 1e-3 and every positive local error >= 2e-4, so the scale runs
// from 1e-4 (a decade below the floor) to 1e-1 (the largest value): 300 px span three decades,
// 100 px each.
AttributionReport hand_built() {
  AttributionReport r;
  r.a_path = "/tmp/</script><script>alert(1)</script>.h5";
  r.a_dtype = "fp32";
  r.b_dtype = "dtype=<bf16> & \"split_k\"=2";
  r.storage = "bf16";
  r.noise_floor = 1e-3;
  r.split = true;
  r.n_layers = 2;
  r.sequences = 3;
  r.positions = 48;
  r.blocks = {block("L0 attention", "attention", 0, 1e-2, 1e-2, true),
              block("L0 mlp", "mlp", 0, 2e-4, 1e-2, false),
              block("L0", "layer", 0, 1e-2, 1e-2, true),
              block(kAttack, "attention", 1, 1e-3, 1e-1, false),
              block("L1 mlp", "mlp", 1, 1e-2, 1e-1, true),
              block("L1", "layer", 1, NAN, NAN, false),
              block("final_norm", "final_norm", -1, 1e-3, 1e-1, false),
              block("logits", "logits", -1, 1e-3, 1e-2, false)};
  r.blocks[5].nan = true;
  r.ranking = {0, 4, 3, 1};
  r.verdict = "error is born in <b>L0 attention</b> & \"L1 mlp\"";
  return r;
}

// The <svg class="apair"> of the block whose escaped name is `name`.
std::string pair_of(const std::string& h, const std::string& name) {
  return between(h, "data-block=\"" + name + "\"", "</svg>");
}

}  // namespace

TEST_CASE("attribution html: hostile names are text, the diff page's shell and CSP",
          "[viewer][html][attribute]") {
  const AttributionReport r = hand_built();
  const std::string h = ds::viewer::render_attribution_html(r);
  // One script element (the page's own); no raw markup from the report.
  CHECK(count(h, "<script") == 1);
  CHECK(count(h, "</script>") == 1);
  CHECK(h.find(kAttack) == std::string::npos);
  CHECK(h.find("<bf16>") == std::string::npos);
  CHECK(h.find("<b>L0 attention</b>") == std::string::npos);
  CHECK(h.find("&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  CHECK(h.find("/tmp/&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;.h5") !=
        std::string::npos);
  CHECK(h.find("dtype=&lt;bf16&gt; &amp; &quot;split_k&quot;=2") != std::string::npos);
  CHECK(h.find("error is born in &lt;b&gt;L0 attention&lt;/b&gt; &amp; &quot;L1 mlp&quot;") !=
        std::string::npos);
  // The same Content-Security-Policy, stylesheet and script as the diff report's page.
  const std::string d = ds::viewer::render_html(Report{});
  const std::string csp_open = "http-equiv=\"Content-Security-Policy\" content=\"";
  CHECK(between(h, csp_open, "\"") == between(d, csp_open, "\""));
  CHECK(between(h, "<style>", "</style>") == between(d, "<style>", "</style>"));
  CHECK(between(h, "<script>", "</script>") == between(d, "<script>", "</script>"));
}

TEST_CASE("attribution html: one bar pair per block, origins and ranking as in the struct",
          "[viewer][html][attribute]") {
  const AttributionReport r = hand_built();
  const std::string h = ds::viewer::render_attribution_html(r);
  size_t origins = 0;
  for (const auto& b : r.blocks) origins += b.origin;
  REQUIRE(origins == 3);
  CHECK(count(h, "<svg class=\"apair\"") == r.blocks.size());
  CHECK(count(h, "data-origin=\"1\"") == origins);
  CHECK(count(h, "<tr class=\"block origin\">") == origins);
  CHECK(count(h, "<tr class=\"block\">") == r.blocks.size() - origins);
  CHECK(count(h, "<tr class=\"rank") == r.ranking.size());
  size_t ranked_origins = 0;
  for (int i : r.ranking) ranked_origins += r.blocks[static_cast<size_t>(i)].origin;
  CHECK(count(h, "<tr class=\"rank origin\">") == ranked_origins);
  // ranked largest local first: L0 attention, L1 mlp, the hostile name, L0 mlp
  CHECK(h.find("<td>L0 attention</td>") < h.find("<td>L1 mlp</td>"));
  // attention, MLP, whole layers, final norm and logits each in their own table
  for (const char* kind : {"attention", "mlp", "layer", "final_norm", "logits"}) {
    INFO(kind);
    CHECK(count(h, std::string("<section class=\"blocks ") + kind + "\">") == 1);
  }
  const std::string attention = between(h, "<section class=\"blocks attention\">", "</section>");
  CHECK(count(attention, "<svg class=\"apair\"") == 2);
  CHECK(attention.find("data-block=\"L0 attention\"") != std::string::npos);
  CHECK(attention.find("data-block=\"&lt;img src=x onerror=alert(1)&gt;\"") != std::string::npos);
}

TEST_CASE("attribution html: bar lengths on the log scale, by hand", "[viewer][html][attribute]") {
  const std::string h = ds::viewer::render_attribution_html(hand_built());
  // 1e-2 is two decades above 1e-4 of three: 200 px; 1e-1 the full 300; 1e-3 one decade: 100.
  const std::string l1mlp = pair_of(h, "L1 mlp");
  CHECK(l1mlp.find("class=\"key a local\" x=\"0\" y=\"1\" width=\"200\"") != std::string::npos);
  CHECK(l1mlp.find("class=\"key b total\" x=\"0\" y=\"10\" width=\"300\"") != std::string::npos);
  const std::string fn = pair_of(h, "final_norm");
  CHECK(fn.find("class=\"key a local\" x=\"0\" y=\"1\" width=\"100\"") != std::string::npos);
  // NaN draws no bar; the row says NaN.
  const std::string l1 = pair_of(h, "L1");
  CHECK(l1.find("class=\"key a local\" x=\"0\" y=\"1\" width=\"0\"") != std::string::npos);
  CHECK(l1.find("class=\"key b total\" x=\"0\" y=\"10\" width=\"0\"") != std::string::npos);
  // logits on their own KL scale: 1e-4 (a decade below the smaller) .. 1e-2: 1e-3 is half.
  const std::string logits = pair_of(h, "logits");
  CHECK(logits.find("class=\"key a local\" x=\"0\" y=\"1\" width=\"150\"") != std::string::npos);
  CHECK(logits.find("class=\"key b total\" x=\"0\" y=\"10\" width=\"300\"") != std::string::npos);
}

TEST_CASE("attribution html: whole layers only when attention and MLP are not apart",
          "[viewer][html][attribute]") {
  AttributionReport r = hand_built();
  r.split = false;
  std::vector<BlockError> kept;
  for (const auto& b : r.blocks) {
    if (b.kind != "attention" && b.kind != "mlp") kept.push_back(b);
  }
  r.blocks = kept;
  r.ranking = {0};
  const std::string h = ds::viewer::render_attribution_html(r);
  CHECK(count(h, "<svg class=\"apair\"") == r.blocks.size());
  CHECK(count(h, "<section class=\"blocks attention\">") == 0);
  CHECK(count(h, "<section class=\"blocks mlp\">") == 0);
  CHECK(count(h, "<section class=\"blocks layer\">") == 1);
  CHECK(h.find("whole layers (record L*/resid_mid in A") != std::string::npos);
}
