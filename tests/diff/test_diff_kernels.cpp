// Kernels that differ, by site: two hand-built traces whose /kernels tables differ at exactly two
// sites (a split-K GEMM replaced by another kernel at L0/attn_out, the same GEMM with another
// grid at L1/mlp_out); every expected count, duration and drift is worked out by hand below. Also
// the ordering of sites, passes recorded by one side only, and traces without tables.
#include <hdf5.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "diff/diff.h"
#include "diff/kernels.h"
#include "tests/diff/trace_builder.h"
#include "tests/support/temp_dir.h"
#include "viewer/diff_json.h"
#include "viewer/diff_terminal.h"

using Catch::Matchers::WithinRel;

namespace {

using ds::trace::KernelRecord;
using Dim = std::array<int32_t, 3>;

constexpr int W = 4;  // hidden width
const std::vector<std::string> kSites = {"embed",      "L0/attn_out", "L0/out",
                                         "L1/mlp_out", "L1/out",      "final_norm"};
const char* kSplitK =
    "void gemm_tiled_splitk<4>(float const*, float const*, float*, int, int, int)";
const char* kCutlass = "cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4";

// Prompt of 3 tokens, 2 generated: a prefill pass (rows 0..2) and one decode pass (row 3).
// B's hidden state is A's times 1.5 at L0/attn_out (relative L2 0.5) and times 1.25 at
// L1/mlp_out (relative L2 0.25), equal elsewhere.
ds::test::SeqSpec sequence(bool b) {
  ds::test::SeqSpec s;
  s.prompt = {1, 5, 6};
  s.generated = {2, 3};
  s.site_order = kSites;
  for (size_t k = 0; k < kSites.size(); ++k) {
    auto& rows = s.hidden[kSites[k]];
    for (int r = 0; r < 4; ++r) {
      std::vector<float> row(W);
      for (int j = 0; j < W; ++j) {
        float x = (r + 1) * (j + 1) * 0.5f + static_cast<float>(k);
        if (b && kSites[k] == "L0/attn_out") x *= 1.5f;
        if (b && kSites[k] == "L1/mlp_out") x *= 1.25f;
        row[j] = x;
      }
      rows.push_back(row);
    }
  }
  return s;
}

// The launches of one forward pass, in launch order. Both sides launch the same embedding,
// attention, L0 down_proj, L1 silu_mul and lm_head kernels. A's o_proj is a split-K GEMM and its
// reduction, B's one cutlass GEMM; at L1/mlp_out both use gemm_tiled<64, 64> for down_proj, A
// with grid z = 2 (split-K 2), B with z = 1.
std::vector<KernelRecord> pass_records(int p, bool b) {
  const int m = p == 0 ? 3 : 1;  // rows of the pass
  std::vector<KernelRecord> r;
  r.push_back({p, "embed", "embedding", "embedding_gather_kernel", {m, 1, 1}, {64, 1, 1}, 1000});
  r.push_back(
      {p, "L0/attn_out", "attention", "attention_kernel<64>", {4, 1, 1}, {128, 1, 1}, 5000});
  if (!b) {
    r.push_back({p, "L0/attn_out", "o_proj", kSplitK, {2, 4, 4}, {128, 1, 1}, 3000});
    r.push_back({p, "L0/attn_out", "o_proj", "splitk_reduce<4>", {8, 1, 1}, {256, 1, 1}, 500});
  } else {
    r.push_back({p, "L0/attn_out", "o_proj", kCutlass, {4, 4, 1}, {128, 1, 1}, 2000});
  }
  r.push_back({p, "L0/mlp_out", "down_proj", "gemm_tiled<64, 64>", {4, 8, 1}, {128, 1, 1}, 3500});
  r.push_back({p, "L1/mlp_out", "silu_mul", "silu_mul_kernel", {16, 1, 1}, {256, 1, 1}, 700});
  if (!b) {
    r.push_back({p, "L1/mlp_out", "down_proj", "gemm_tiled<64, 64>", {4, 8, 2}, {128, 1, 1}, 4000});
  } else {
    r.push_back({p, "L1/mlp_out", "down_proj", "gemm_tiled<64, 64>", {4, 8, 1}, {128, 1, 1}, 3500});
  }
  r.push_back({p, "logits", "lm_head", "gemm_tiled<64, 64>", {125, 1, 1}, {128, 1, 1}, 9000});
  return r;
}

ds::test::TraceSpec spec(bool b, bool kernels = true) {
  ds::test::TraceSpec t;
  t.seqs.push_back(sequence(b));
  if (kernels) {
    for (int p = 0; p < 2; ++p) {
      const auto r = pass_records(p, b);
      t.kernels.insert(t.kernels.end(), r.begin(), r.end());
    }
  }
  return t;
}

ds::diff::Report diff_files(const std::filesystem::path& a, const std::filesystem::path& b) {
  return ds::diff::diff_traces(ds::trace::TraceReader::open(a), ds::trace::TraceReader::open(b));
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("kernels: the two sites whose kernels differ, with hand-counted launches",
          "[diff][kernels][kernel_table]") {
  ds::test::TempDir dir;
  ds::test::write_trace(dir.path() / "a.h5", spec(false));
  ds::test::write_trace(dir.path() / "b.h5", spec(true));
  const auto rep = diff_files(dir.path() / "a.h5", dir.path() / "b.h5");
  CHECK(ds::diff::check_consistency(rep).empty());
  const auto& k = rep.kernels;
  CHECK(k.tables == ds::diff::KernelTables::both);
  CHECK(k.records_a == 16);  // 8 launches per pass, 2 passes
  CHECK(k.records_b == 14);  // 7 per pass
  CHECK(k.passes_a == 2);
  CHECK(k.passes_b == 2);
  CHECK(k.passes_compared == 2);
  CHECK(k.sites_compared == 5);  // embed, L0/attn_out, L0/mlp_out, L1/mlp_out, logits
  // Per pass A: 1000 + 5000 + 3000 + 500 + 3500 + 700 + 4000 + 9000 = 26700; B: 24700.
  CHECK(k.duration_ns_a == 53400);
  CHECK(k.duration_ns_b == 49400);
  REQUIRE(k.sites.size() == 2);

  const auto& s0 = k.sites[0];
  CHECK(s0.site == "L0/attn_out");
  REQUIRE(s0.rel_l2_median);
  CHECK_THAT(*s0.rel_l2_median, WithinRel(0.5, 1e-12));
  CHECK(s0.launches_a == 6);  // attention, split-K GEMM, reduction; twice
  CHECK(s0.launches_b == 4);  // attention, cutlass GEMM; twice
  CHECK(s0.duration_ns_a == 17000);
  CHECK(s0.duration_ns_b == 14000);
  REQUIRE(s0.only_a.size() == 2);
  CHECK(s0.only_a[0].op == "o_proj");
  CHECK(s0.only_a[0].name == kSplitK);
  CHECK(s0.only_a[0].launches == 2);
  CHECK(s0.only_a[0].duration_ns == 6000);
  REQUIRE(s0.only_a[0].configs.size() == 1);
  CHECK(s0.only_a[0].configs[0].grid == Dim{2, 4, 4});
  CHECK(s0.only_a[0].configs[0].block == Dim{128, 1, 1});
  CHECK(s0.only_a[0].configs[0].launches == 2);
  CHECK(s0.only_a[1].name == "splitk_reduce<4>");
  CHECK(s0.only_a[1].launches == 2);
  CHECK(s0.only_a[1].duration_ns == 1000);
  REQUIRE(s0.only_b.size() == 1);
  CHECK(s0.only_b[0].op == "o_proj");
  CHECK(s0.only_b[0].name == kCutlass);
  CHECK(s0.only_b[0].launches == 2);
  CHECK(s0.only_b[0].duration_ns == 4000);
  CHECK(s0.changed.empty());

  const auto& s1 = k.sites[1];
  CHECK(s1.site == "L1/mlp_out");
  REQUIRE(s1.rel_l2_median);
  CHECK_THAT(*s1.rel_l2_median, WithinRel(0.25, 1e-12));
  CHECK(s1.only_a.empty());
  CHECK(s1.only_b.empty());
  CHECK(s1.launches_a == 4);
  CHECK(s1.launches_b == 4);
  CHECK(s1.duration_ns_a == 9400);
  CHECK(s1.duration_ns_b == 8400);
  REQUIRE(s1.changed.size() == 1);  // silu_mul is the same on both sides
  const auto& c = s1.changed[0];
  CHECK(c.a.op == "down_proj");
  CHECK(c.a.name == "gemm_tiled<64, 64>");
  CHECK(c.a.launches == 2);
  CHECK(c.b.launches == 2);
  CHECK(c.a.duration_ns == 8000);
  CHECK(c.b.duration_ns == 7000);
  REQUIRE(c.a.configs.size() == 1);
  REQUIRE(c.b.configs.size() == 1);
  CHECK(c.a.configs[0].grid == Dim{4, 8, 2});
  CHECK(c.b.configs[0].grid == Dim{4, 8, 1});

  SECTION("JSON carries them with full names") {
    const auto j = nlohmann::json::parse(ds::viewer::render_json(rep))["kernels"];
    CHECK(j["tables"] == "both");
    CHECK(j["records"] == nlohmann::json::array({16, 14}));
    CHECK(j["passes_compared"] == 2);
    CHECK(j["duration_ns"] == nlohmann::json::array({53400, 49400}));
    REQUIRE(j["sites"].size() == 2);
    const auto& js0 = j["sites"][0];
    CHECK(js0["site"] == "L0/attn_out");
    CHECK(js0["rel_l2_median"].get<double>() == Approx(0.5));
    CHECK(js0["launches"] == nlohmann::json::array({6, 4}));
    CHECK(js0["only_a"][0]["name"] == kSplitK);
    CHECK(js0["only_a"][0]["launches"] == 2);
    CHECK(js0["only_a"][0]["configs"][0]["grid"] == nlohmann::json::array({2, 4, 4}));
    CHECK(js0["only_b"][0]["name"] == kCutlass);
    CHECK(js0["changed"].empty());
    const auto& jc = j["sites"][1]["changed"][0];
    CHECK(jc["op"] == "down_proj");
    CHECK(jc["name"] == "gemm_tiled<64, 64>");
    CHECK(jc["a"]["configs"][0]["grid"] == nlohmann::json::array({4, 8, 2}));
    CHECK(jc["b"]["configs"][0]["grid"] == nlohmann::json::array({4, 8, 1}));
    CHECK(jc["b"]["configs"][0]["block"] == nlohmann::json::array({128, 1, 1}));
    CHECK(jc["b"]["duration_ns"] == 7000);
  }

  SECTION("the terminal shows the section, names shortened") {
    ds::viewer::TerminalOptions opt;
    opt.width = 100;
    const std::string text = ds::viewer::render_terminal(rep, opt);
    const size_t at = text.find("── kernels that differ, by site");
    REQUIRE(at != std::string::npos);
    // The title rule fills 100 columns: "── " + 28 + " " + 68 × "─". The split-K name (76
    // columns) does not fit the 69 left for names, so it loses its parameter list and "void ".
    const std::string want =
        "── kernels that differ, by site " + repeat("─", 68) + "\n" +
        "kernels   2 of 5 sites differ over 2 passes · device time A 53.4 µs, B 49.4 µs\n"
        "L0/attn_out  drift 5.00e-01 · A 6 launches, 17.0 µs · B 4 launches, 14.0 µs\n"
        "          only A  o_proj  gemm_tiled_splitk<4> ×2\n"
        "          only A  o_proj  splitk_reduce<4> ×2\n"
        "          only B  o_proj  cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4 ×2\n"
        "L1/mlp_out  drift 2.50e-01 · A 4 launches, 9.4 µs · B 4 launches, 8.4 µs\n"
        "          launch  down_proj  gemm_tiled<64, 64>\n"
        "                  A ×2 grid (4,8,2) block (128,1,1)\n"
        "                  B ×2 grid (4,8,1) block (128,1,1)\n"
        "          names shortened: the JSON report (--json) has them in full\n";
    CHECK(text.substr(at) == want);
  }
}

TEST_CASE("kernels: identical tables list no site", "[diff][kernels][kernel_table]") {
  ds::test::TempDir dir;
  ds::test::write_trace(dir.path() / "a.h5", spec(false));
  ds::test::write_trace(dir.path() / "a2.h5", spec(false));
  const auto rep = diff_files(dir.path() / "a.h5", dir.path() / "a2.h5");
  CHECK(ds::diff::check_consistency(rep).empty());
  CHECK(rep.kernels.tables == ds::diff::KernelTables::both);
  CHECK(rep.kernels.sites.empty());
  CHECK(rep.kernels.sites_compared == 5);
  const std::string text = ds::viewer::render_terminal(rep);
  CHECK_THAT(text, Catch::Contains("kernels   none of 5 sites differs over 2 passes · device time "
                                   "A 53.4 µs, B 53.4 µs\n"));
}

TEST_CASE("kernels: one trace with a table, or neither, is said and not compared",
          "[diff][kernels][kernel_table]") {
  ds::test::TempDir dir;
  ds::test::write_trace(dir.path() / "a.h5", spec(false));
  ds::test::write_trace(dir.path() / "cpu.h5", spec(true, false));
  ds::test::write_trace(dir.path() / "cpu2.h5", spec(false, false));

  const auto only_a = diff_files(dir.path() / "a.h5", dir.path() / "cpu.h5");
  CHECK(ds::diff::check_consistency(only_a).empty());
  CHECK(only_a.kernels.tables == ds::diff::KernelTables::only_a);
  CHECK(only_a.kernels.records_a == 16);
  CHECK(only_a.kernels.passes_a == 2);
  CHECK(only_a.kernels.sites.empty());
  CHECK_THAT(ds::viewer::render_terminal(only_a),
             Catch::Contains("kernels   only A has a /kernels table (16 launches): kernels not "
                             "compared"));
  CHECK(nlohmann::json::parse(ds::viewer::render_json(only_a))["kernels"]["tables"] == "only_a");

  const auto only_b = diff_files(dir.path() / "cpu.h5", dir.path() / "a.h5");
  CHECK(only_b.kernels.tables == ds::diff::KernelTables::only_b);
  CHECK(only_b.kernels.records_b == 16);

  const auto neither = diff_files(dir.path() / "cpu.h5", dir.path() / "cpu2.h5");
  CHECK(neither.kernels.tables == ds::diff::KernelTables::neither);
  CHECK(nlohmann::json::parse(ds::viewer::render_json(neither))["kernels"]["tables"] == "neither");
  // CPU traces: the terminal report has no kernel section at all.
  CHECK(ds::viewer::render_terminal(neither).find("kernel") == std::string::npos);
}

TEST_CASE("kernels: a malformed table is a warning, not a failed diff",
          "[diff][kernels][kernel_table]") {
  ds::test::TempDir dir;
  const auto pa = dir.path() / "a.h5";
  ds::test::write_trace(pa, spec(false));
  ds::test::write_trace(dir.path() / "b.h5", spec(true));
  hid_t f = H5Fopen(pa.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(f, "kernels/name", H5P_DEFAULT);
  H5Fclose(f);
  const auto rep = diff_files(pa, dir.path() / "b.h5");
  CHECK(rep.kernels.tables == ds::diff::KernelTables::only_b);
  REQUIRE(rep.warnings.size() == 1);
  CHECK_THAT(rep.warnings[0], Catch::Contains("A's kernel table is unreadable") &&
                                  Catch::Contains("lacks the column 'name'"));
}

TEST_CASE("kernels: forward site order, logits last, common passes, count changes",
          "[diff][kernels][kernel_table]") {
  auto rec = [](int pass, const char* site, const char* op, const char* name, int64_t ns = 10) {
    return KernelRecord{pass, site, op, name, {1, 1, 1}, {32, 1, 1}, ns};
  };
  // Given out of order; every listed site differs by name, except L2/out (the same kernel
  // launched twice in A, once in B) and L0/attn_norm (only the duration differs: not listed).
  const std::vector<KernelRecord> a = {
      rec(0, "logits", "lm_head", "lm_a"),
      rec(0, "final_norm", "rmsnorm", "norm_a"),
      rec(0, "L10/out", "add", "add_a"),
      rec(0, "L2/out", "add", "add"),
      rec(0, "L2/out", "add", "add"),
      rec(0, "L1/out", "add", "add_a"),
      rec(0, "L0/attn_norm", "rmsnorm", "norm", 10),
      rec(0, "embed", "embedding", "embed_a"),
      rec(2, "L0/attn_out", "o_proj", "only_in_pass_2_of_a"),  // pass 2: A only, not compared
  };
  const std::vector<KernelRecord> b = {
      rec(0, "embed", "embedding", "embed_b"),
      rec(0, "L0/attn_norm", "rmsnorm", "norm", 99),
      rec(0, "L1/out", "add", "add_b"),
      rec(0, "L2/out", "add", "add"),
      rec(0, "L10/out", "add", "add_b"),
      rec(0, "final_norm", "rmsnorm", "norm_b"),
      rec(0, "logits", "lm_head", "lm_b"),
      rec(1, "embed", "embedding", "only_in_pass_1_of_b"),  // pass 1: B only, not compared
  };
  // Drift of two sequences: the largest median per site is reported.
  auto drift = [](const char* site, double median) {
    ds::diff::SiteDrift d;
    d.site = site;
    d.rel_l2_median = median;
    return d;
  };
  std::vector<ds::diff::SequenceReport> seqs(2);
  seqs[0].drift = {drift("embed", 0), drift("L1/out", 0.1), drift("final_norm", 0.2)};
  seqs[1].drift = {drift("L1/out", 0.3), drift("final_norm", 0.05)};

  const auto k = ds::diff::diff_kernels(a, b, seqs);
  CHECK(k.passes_a == 2);  // 0 and 2
  CHECK(k.passes_b == 2);  // 0 and 1
  CHECK(k.passes_compared == 1);
  CHECK(k.sites_compared == 7);  // L0/attn_out was only launched in pass 2
  std::vector<std::string> order;
  for (const auto& s : k.sites) order.push_back(s.site);
  CHECK(order ==
        std::vector<std::string>{"embed", "L1/out", "L2/out", "L10/out", "final_norm", "logits"});
  REQUIRE(k.sites.size() == 6);
  CHECK(k.sites[0].rel_l2_median == 0.0);
  CHECK(k.sites[0].only_a[0].name == "embed_a");
  CHECK(k.sites[0].only_b[0].name == "embed_b");  // not only_in_pass_1_of_b
  CHECK(k.sites[0].only_b.size() == 1);
  CHECK(k.sites[1].rel_l2_median == 0.3);
  CHECK_FALSE(k.sites[2].rel_l2_median);  // L2/out: not tapped
  REQUIRE(k.sites[2].changed.size() == 1);
  CHECK(k.sites[2].only_a.empty());
  CHECK(k.sites[2].changed[0].a.launches == 2);
  CHECK(k.sites[2].changed[0].b.launches == 1);
  CHECK(k.sites[2].changed[0].a.configs[0].launches == 2);
  CHECK(k.sites[2].changed[0].b.configs[0].launches == 1);
  CHECK(k.sites[4].rel_l2_median == 0.2);
  CHECK_FALSE(k.sites[5].rel_l2_median);  // logits: no hidden dataset
  CHECK(k.duration_ns_a == 80);           // the 8 pass-0 launches of A
  CHECK(k.duration_ns_b == 159);          // the 7 pass-0 launches of B: six of 10 ns, one of 99 ns

  ds::diff::Report r;
  r.kernels = k;
  CHECK(ds::diff::check_consistency(r).empty());
  // The invariants catch a listed site without a difference, and sites out of order.
  r.kernels.sites[0].only_a.clear();
  r.kernels.sites[0].only_b.clear();
  std::swap(r.kernels.sites[4], r.kernels.sites[5]);
  CHECK(ds::diff::check_consistency(r) ==
        std::vector<std::string>{"kernel site without a difference: embed",
                                 "kernel sites out of forward order at final_norm"});
}
