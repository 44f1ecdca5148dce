// The viewer on a hand-made report: the terminal renderer against a golden text (colours off),
// colours and width, and the JSON fields of the report format.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/paths.h"
#include "viewer/diff_json.h"
#include "viewer/diff_terminal.h"
#include "viewer/kernel_names.h"
#include "viewer/text_layout.h"

namespace {

using namespace ds::diff;

std::string golden_path() {
  return ds::test::source_dir() + "/tests/viewer/golden/report_nocolor.txt";
}

// A two-sequence report with every section filled: a flip with both top-5s, config differences,
// an incomplete B, drift rows, onset, a layer view and margins.
Report sample_report() {
  Report r;
  r.a = {"runs/fp32.h5", true, "finished", "0.1.0", {"kjv-llama.bin 5d1c0e9a2f47"}, 2};
  r.b = {"runs/bf16.h5", false, "interrupted", "0.1.0", {"kjv-llama.bin 5d1c0e9a2f47"}, 2};
  r.config_diff = {
      {"accum", "", "\"fp32\""}, {"dtype", "\"fp32\"", "\"bf16\""}, {"trace.topk", "20", "5"}};
  r.warnings = {
      "B is incomplete (complete=0, stop: interrupted): compared over the positions it holds"};

  SequenceReport s;
  s.index = 0;
  s.prompt_len_a = s.prompt_len_b = 3;
  s.gen_len_a = 8;
  s.gen_len_b = 5;
  s.rows_a = 10;
  s.rows_b = 7;
  s.stop_reason_a = "max_new";
  s.stop_reason_b = "interrupted";
  s.compared = 6;
  FirstFlip f;
  f.step = 3;
  f.position = 6;
  f.row = 5;
  f.token_a = 432;
  f.token_b = 388;
  f.text_a = " Lily";
  f.text_b = " Sue";
  f.top5_a = {{432, 0.46, 9.5, " Lily"},
              {388, 0.44, 9.455, " Sue"},
              {261, 0.05, 7.3, " a"},
              {13, 0.02, 6.4, "\n"},
              {295, 0.01, 5.7, " Tom"}};
  f.top5_b = {{388, 0.45, 9.47, " Sue"},
              {432, 0.45, 9.46, " Lily"},
              {261, 0.05, 7.3, " a"},
              {13, 0.02, 6.4, "\n"},
              {295, 0.01, 5.7, " Tom"}};
  f.margin_a = 0.02;
  f.margin_b = 0.0045;
  f.margin_logit_a = 0.045;
  f.margin_logit_b = 0.01;
  f.context = "a little girl named";
  f.continuation_a = " Lily. She liked";
  f.continuation_b = " Sue. She was";
  s.first_flip = f;
  s.has_logits = true;
  s.logits.positions = 6;
  s.logits.topk_a = 20;
  s.logits.topk_b = 5;
  s.logits.top5_size = 5;
  s.logits.logprob_rmse = 2.5e-3;
  s.logits.logprob_bounded = 1;
  s.logits.top5_jaccard_mean = 0.9;
  s.logits.top5_jaccard_min = 0.6667;
  s.logits.kl_mean = 1.2e-4;
  s.logits.kl_max = 4.0e-4;
  s.logits.kl_max_position = 5;
  s.logits.kl_exact = false;
  s.logits.choice_rows = 4;
  s.logits.at_risk = 1;
  s.logits.margin_logit_min = 0.045;
  s.logits.margin_logit_min_position = 5;
  s.logits.identical = false;
  const double margins[] = {3.0, 12.0, 0.5, 0.08, 1.5, 0.045};
  for (int i = 0; i < 6; ++i) {
    PositionRow p;
    p.margin_logit_a = margins[i];
    p.at_risk = i == 5;
    p.kl = i * 1e-5;
    p.jaccard = i == 5 ? 0.6667 : 1.0;
    s.positions.push_back(p);
  }
  auto site = [](const char* name, int layer, double med, double mx, int64_t at) {
    SiteDrift d;
    d.site = name;
    d.layer = layer;
    d.dtype = "bf16";
    d.noise_floor = 0x1p-7;
    d.rel_l2_median = med;
    d.rel_l2_max = mx;
    d.rel_l2_max_position = at;
    d.cos_median = 1 - med * med / 2;
    d.cos_min = 1 - mx * mx / 2;
    d.max_abs_median = med * 3;
    d.max_abs = mx * 3;
    d.above_floor = mx > 0x1p-7 ? 4 : 0;
    return d;
  };
  s.drift = {site("embed", -1, 0, 0, 0), site("L0/out", 0, 1.2e-2, 3e-2, 4),
             site("L1/out", 1, 4.8e-2, 2e-1, 5), site("final_norm", 2, 6e-2, 2.5e-1, 5)};
  s.onset = Onset{"L0/out", 2, 9.1e-3, 0x1p-7};
  LayerDrift l0{0, "L0/out", 1.2e-2, std::nullopt, {0, 0.004f, 0.0091f, 0.012f, 0.03f, 0.02f}};
  LayerDrift l1{1, "L1/out", 4.8e-2, 4.0, {0, 0.01f, 0.03f, 0.05f, 0.07f, 0.2f}};
  s.layers = {l0, l1};
  s.hidden_identical = false;
  s.verdict = Verdict::flip;
  s.notes = {"no token differs before the flip"};
  r.sequences.push_back(s);

  SequenceReport q;
  q.index = 1;
  q.prompt_len_a = q.prompt_len_b = 2;
  q.gen_len_a = q.gen_len_b = 4;
  q.rows_a = q.rows_b = 5;
  q.stop_reason_a = q.stop_reason_b = "max_new";
  q.compared = 5;
  q.has_logits = true;
  q.logits.positions = 5;
  q.logits.kl_max = 2e-6;
  q.logits.kl_mean = 1e-6;
  q.logits.top5_jaccard_min = 1;
  q.logits.choice_rows = 4;
  q.logits.topk_a = q.logits.topk_b = 20;
  q.logits.margin_logit_min = 0.7;
  q.logits.margin_logit_min_position = 3;
  for (int i = 0; i < 5; ++i) {
    PositionRow p;
    p.margin_logit_a = 0.7 + i;
    q.positions.push_back(p);
  }
  q.drift = {site("embed", -1, 0, 0, 0)};
  q.hidden_identical = false;
  q.verdict = Verdict::drift;
  r.sequences.push_back(q);
  r.summary = {2, 1, 50.0, 0, 2};
  return r;
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("terminal report matches the golden text with colours off", "[viewer]") {
  const Report r = sample_report();
  REQUIRE(check_consistency(r).empty());
  ds::viewer::TerminalOptions opt;
  opt.width = 100;
  opt.color = false;
  opt.sites = true;
  const std::string got = ds::viewer::render_terminal(r, opt);
  if (std::getenv("DRIFTSCOPE_UPDATE_GOLDEN")) {
    // Rewriting the golden text is never a pass: the run fails, and the new text is reviewed
    // (git diff) before a run without the variable can pass.
    std::ofstream(golden_path(), std::ios::binary) << got;
    FAIL("DRIFTSCOPE_UPDATE_GOLDEN is set: rewrote "
         << golden_path() << "; review it, then run without the variable");
  }
  const std::string want = read_file(golden_path());
  REQUIRE_FALSE(want.empty());
  if (got != want) {
    std::ofstream(golden_path() + ".actual", std::ios::binary) << got;
    FAIL("terminal report differs from " << golden_path()
                                         << " (actual output written to .actual beside it)");
  }
  CHECK(got.find('\x1b') == std::string::npos);
}

TEST_CASE("terminal report: colours only when asked, lines within the width", "[viewer]") {
  const Report r = sample_report();
  ds::viewer::TerminalOptions opt;
  opt.color = true;
  CHECK(ds::viewer::render_terminal(r, opt).find("\x1b[") != std::string::npos);
  for (int width : {60, 80, 140}) {
    opt.color = false;
    opt.width = width;
    const std::string text = ds::viewer::render_terminal(r, opt);
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      size_t cols = 0;
      for (unsigned char c : line) cols += (c & 0xC0) != 0x80;
      INFO("width " << width << ": " << line);
      CHECK(cols <= static_cast<size_t>(width));
    }
  }
}

TEST_CASE("heat map characters: one per decade above the noise floor", "[viewer]") {
  using ds::viewer::heat_char;
  CHECK(heat_char(0, 1e-7) == ' ');
  CHECK(heat_char(5e-8, 1.2e-7) == '.');
  CHECK(heat_char(2e-7, 1.2e-7) == ':');
  CHECK(heat_char(3e-6, 1.2e-7) == '-');
  CHECK(heat_char(3e-3, 1.2e-7) == '*');
  CHECK(heat_char(5e-3, 7.8e-3) == '.');  // below the bf16 floor
  CHECK(heat_char(0.5, 1e-7) == '%');
  CHECK(heat_char(7.0, 1e-7) == '@');
  CHECK(heat_char(INFINITY, 1e-7) == '@');
  CHECK(heat_char(NAN, 1e-7) == '!');
}

TEST_CASE("JSON report carries the required fields from the report struct", "[viewer]") {
  const Report r = sample_report();
  const auto j = nlohmann::json::parse(ds::viewer::render_json(r));
  CHECK(j["format"] == "driftscope-diff");
  CHECK(j["version"] == 1);
  CHECK(j["config_diff"]["dtype"] == nlohmann::json::array({"fp32", "bf16"}));
  CHECK(j["config_diff"]["accum"][0].is_null());
  CHECK(j["config_diff"]["trace.topk"] == nlohmann::json::array({20, 5}));
  CHECK(j["b"]["complete"] == false);
  const auto& s = j["sequences"][0];
  CHECK(s["index"] == 0);
  CHECK(s["prompt_equal"] == true);
  const auto& f = s["first_flip"];
  CHECK(f["step"] == 3);
  CHECK(f["position"] == 6);
  CHECK(f["token_a"] == 432);
  CHECK(f["token_b"] == 388);
  CHECK(f["top5_a"][0] == nlohmann::json::array({432, 0.46}));
  CHECK(f["top5_b"].size() == 5);
  CHECK(f["margin_a"] == 0.02);
  CHECK(f["margin_b"] == 0.0045);
  const auto& L = s["logits"];
  for (const char* k : {"positions", "logprob_rmse", "top5_jaccard_mean", "top5_jaccard_min",
                        "kl_mean", "kl_max", "kl_exact"}) {
    CHECK(L.contains(k));
  }
  CHECK(L["kl_exact"] == false);
  CHECK(s["drift"].size() == 4);
  for (const char* k : {"site", "layer", "rel_l2_median", "rel_l2_max", "cos_min", "max_abs"}) {
    CHECK(s["drift"][1].contains(k));
  }
  CHECK(s["drift"][1]["rel_l2_max"] == 3e-2);
  CHECK(s["onset"]["site"] == "L0/out");
  CHECK(s["onset"]["position"] == 2);
  CHECK(s["layers"][1]["growth"] == 4.0);
  CHECK(s["layers"][0]["growth"].is_null());
  CHECK(j["sequences"][1]["first_flip"].is_null());
  CHECK(j["sequences"][1]["onset"].is_null());
  CHECK(j["summary"]["sequences"] == 2);
  CHECK(j["summary"]["diverged"] == 1);
  CHECK(j["summary"]["div_percent"] == 50.0);
  // Not-finite numbers become null.
  Report nan = r;
  nan.sequences[0].drift[1].rel_l2_max = NAN;
  CHECK(
      nlohmann::json::parse(ds::viewer::render_json(nan))["sequences"][0]["drift"][1]["rel_l2_max"]
          .is_null());
}

// ---- kernels that differ, by site (a hand-made KernelReport beside the sample report; the
// golden text above is of a report without kernel tables and stays as it is) ------------------

namespace {

KernelUse kernel(const char* op, const std::string& name, int64_t launches,
                 std::array<int32_t, 3> grid) {
  KernelUse u;
  u.op = op;
  u.name = name;
  u.launches = launches;
  u.duration_ns = 1500 * launches;
  u.configs = {{grid, {128, 1, 1}, launches}};
  return u;
}

// Two template instantiations that collapse to the same "ns::Kernel<ns::Gemm<…>>".
const std::string kGemm128 =
    "void ns::Kernel<ns::Gemm<ns::Shape<128, 128, 32>, float>>(ns::Gemm<ns::Shape<128, 128, 32>, "
    "float>::Params)";
const std::string kGemm64 =
    "void ns::Kernel<ns::Gemm<ns::Shape<64, 64, 32>, float>>(ns::Gemm<ns::Shape<64, 64, 32>, "
    "float>::Params)";

Report with_kernels() {
  Report r = sample_report();
  auto& k = r.kernels;
  k.tables = KernelTables::both;
  k.records_a = k.records_b = 40;
  k.passes_a = k.passes_b = k.passes_compared = 4;
  k.sites_compared = 10;
  k.duration_ns_a = 1'250'000;
  k.duration_ns_b = 980'000;
  SiteKernels s;
  s.site = "L0/out";
  s.rel_l2_median = 1.2e-2;
  s.only_a = {kernel("o_proj", kGemm128, 4, {2, 4, 1})};
  s.only_b = {kernel("o_proj", kGemm64, 4, {4, 8, 1})};
  // down_proj: the decode launches (grid x 1) agree, the prefill ones differ in grid z.
  KernelChange c;
  c.a = kernel("down_proj", "gemm_tiled<64, 64>", 4, {4, 8, 2});
  c.b = kernel("down_proj", "gemm_tiled<64, 64>", 4, {4, 8, 1});
  for (KernelUse* u : {&c.a, &c.b}) {
    u->configs.insert(u->configs.begin(), {{1, 8, 1}, {128, 1, 1}, 12});
    u->launches += 12;
  }
  s.changed = {c};
  s.launches_a = s.launches_b = 24;
  s.duration_ns_a = s.duration_ns_b = 12000;
  k.sites = {s};
  return r;
}

}  // namespace

TEST_CASE("kernel names are shortened to the width, keeping what tells them apart",
          "[viewer][kernel_table]") {
  using ds::viewer::short_kernel_name;
  CHECK(short_kernel_name("ampere_sgemm_128x64_nn", 30) == "ampere_sgemm_128x64_nn");
  // The parameter list and the return type go first.
  CHECK(short_kernel_name(
            "void gemm_tiled_splitk<4>(float const*, float const*, float*, int, int, int)", 30) ==
        "gemm_tiled_splitk<4>");
  const std::string cutlass =
      "void cutlass::Kernel2<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::threadblock::"
      "MmaMultistage<cutlass::gemm::GemmShape<128, 128, 32>, float>, float>>(cutlass::gemm::"
      "kernel::GemmUniversal<float>::Params)";
  // Then template arguments two deep: "cutlass::Kernel2<cutlass::gemm::kernel::GemmUniversal<…>>"
  // (57 columns); still over 50, so 32 columns of head and 17 of tail around "…".
  CHECK(short_kernel_name(cutlass, 60) ==
        "cutlass::Kernel2<cutlass::gemm::kernel::GemmUniversal<…>>");
  CHECK(short_kernel_name(cutlass, 50) == "cutlass::Kernel2<cutlass::gemm::…GemmUniversal<…>>");
  // Two names that shorten alike show where they differ, with width / 3 = 8 columns before it:
  // they part after "ns::Kernel<ns::Gemm<ns::Shape<" (30 characters), so from character 22.
  CHECK(ds::viewer::short_kernel_names({kGemm128, kGemm64, kGemm128, "k"}, 26) ==
        std::vector<std::string>{"…::Shape<128, 128, 32>, f…", "…::Shape<64, 64, 32>, flo…",
                                 "…::Shape<128, 128, 32>, f…", "k"});
}

TEST_CASE("terminal kernel section: names told apart, lines within the width",
          "[viewer][kernel_table]") {
  const Report r = with_kernels();
  REQUIRE(check_consistency(r).empty());
  ds::viewer::TerminalOptions opt;
  for (int width : {60, 80, 140}) {
    opt.width = width;
    const std::string text = ds::viewer::render_terminal(r, opt);
    INFO(text);
    REQUIRE(text.find("── kernels that differ, by site") != std::string::npos);
    CHECK(text.find("          launch  down_proj  gemm_tiled<64, 64>\n"
                    "                  A ×4 grid (4,8,2) block (128,1,1)\n"
                    "                  B ×4 grid (4,8,1) block (128,1,1)\n"
                    "                  (and 1 configuration the same on both)\n") !=
          std::string::npos);
    std::string only_a, only_b;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      size_t cols = 0;
      for (unsigned char c : line) cols += (c & 0xC0) != 0x80;
      INFO("width " << width << ": " << line);
      CHECK(cols <= static_cast<size_t>(width));
      if (line.starts_with("          only A  o_proj  ")) only_a = line.substr(26);
      if (line.starts_with("          only B  o_proj  ")) only_b = line.substr(26);
    }
    // Both collapse to ns::Kernel<ns::Gemm<…>>; the section falls back to head…tail instead.
    CHECK(only_a.ends_with(" ×4"));
    CHECK(only_b.ends_with(" ×4"));
    CHECK(only_a != only_b);
  }
  const auto j = nlohmann::json::parse(ds::viewer::render_json(r));
  CHECK(j["kernels"]["sites"][0]["only_a"][0]["name"] == kGemm128);  // in full
}

TEST_CASE("quoted token text escapes DEL and C1 controls as well as C0", "[viewer]") {
  // The 8-bit CSI U+009B of a decoded token reached the terminal report raw (issue 45).
  CHECK(ds::viewer::quote("\xc2\x9b"
                          "31m\x1b\x7f") == "\"\\u009b31m\\u001b\\u007f\"");
  CHECK(ds::viewer::quote("caf\xc3\xa9\n") == "\"caf\xc3\xa9\\n\"");
}
