// `--compression`: the filters of a trace's datasets. A trace written with
// `none` (the default) holds the same values, bit for bit, as one written with shuffle + deflate 1
// (read back through the trace reader, and by diff: zero drift); its datasets carry no filter at
// all, checked on each dataset's creation property list with HDF5 itself, independently of what
// the writer records; bad values are refused like every other option.
#include <hdf5.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "tests/support/trace_digest.h"
#include "trace/h5.h"
#include "trace/reader.h"

namespace fs = std::filesystem;
using ds::test::check_input_error;
using ds::test::has;
using ds::test::run_cli;
using nlohmann::json;

namespace {

// The filter pipeline of one dataset: (filter id, first client value) in pipeline order.
using Pipeline = std::vector<std::pair<H5Z_filter_t, unsigned>>;

// Rows per chunk of every dataset seen by filters_of (path -> rows), for the size check below.
std::map<std::string, hsize_t> g_chunk_rows;

// The filters of one dataset, read from its creation property list.
Pipeline filters_of(hid_t dset, const std::string& path) {
  const hid_t dcpl = H5Dget_create_plist(dset);
  hsize_t chunk[2] = {0, 0};
  H5Pget_chunk(dcpl, 2, chunk);
  g_chunk_rows[path] = chunk[0];
  Pipeline p;
  const int n = H5Pget_nfilters(dcpl);
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, cd[8] = {0};
    size_t ncd = 8;
    char fname[64];
    const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &ncd, cd,
                                           sizeof fname, fname, nullptr);
    p.emplace_back(id, ncd > 0 ? cd[0] : 0u);
  }
  H5Pclose(dcpl);
  return p;
}

// Every dataset under `group` (path -> its filter pipeline), found by walking the groups.
void collect(hid_t group, const std::string& prefix, std::map<std::string, Pipeline>& out) {
  for (const std::string& name : ds::h5::list_children(group)) {
    const hid_t obj = H5Oopen(group, name.c_str(), H5P_DEFAULT);
    REQUIRE(obj >= 0);
    if (H5Iget_type(obj) == H5I_GROUP) collect(obj, prefix + name + "/", out);
    if (H5Iget_type(obj) == H5I_DATASET) out[prefix + name] = filters_of(obj, prefix + name);
    H5Oclose(obj);
  }
}

// Every dataset of an HDF5 file, read with the HDF5 C API, not the trace reader.
std::map<std::string, Pipeline> dataset_filters(const fs::path& file) {
  std::map<std::string, Pipeline> out;
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  collect(f, "", out);
  H5Fclose(f);
  return out;
}

// The datasets the writer checksums (docs/trace-format.md, "Untrusted traces"): the pipeline
// of the compression choice, then Fletcher-32.
bool checksummed(const std::string& path) {
  for (const char* tail : {"/tokens", "/logits/topk_ids", "/logits/topk_logits", "/logits/lse"}) {
    if (path.ends_with(tail)) return true;
  }
  return false;
}

// `pipeline` without its last filter when that is the checksum of a checksummed dataset (which
// must carry it).
Pipeline without_checksum(const std::string& path, Pipeline pipeline) {
  if (!checksummed(path)) return pipeline;
  REQUIRE(!pipeline.empty());
  CHECK(pipeline.back().first == H5Z_FILTER_FLETCHER32);
  pipeline.pop_back();
  return pipeline;
}

}  // namespace

TEST_CASE(
    "run stores no filter by default, and the same bits as --compression deflate and deflate9",
    "[cli][trace][compression]") {
  ds::test::TempDir dir;
  const fs::path prompts = dir.path() / "p.txt";
  ds::test::write_prompts(prompts, 2);
  const std::string common =
      "run -q -n 16 --probes all --full-logits --prompts " + prompts.string() + " -o ";
  const fs::path deflated = dir.path() / "deflate.h5", plain = dir.path() / "default.h5",
                 level9 = dir.path() / "deflate9.h5";
  auto r = run_cli(common + deflated.string() + " --compression deflate");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = run_cli(common + plain.string());  // the default: none
  REQUIRE(r.exit_code == 0);
  r = run_cli(common + level9.string() + " --compression deflate9");
  REQUIRE(r.exit_code == 0);

  // HDF5's own view of every dataset (tokens, hidden sites, top-K, lse, full logits).
  const auto fd = dataset_filters(deflated), fn = dataset_filters(plain),
             f9 = dataset_filters(level9);
  REQUIRE(fd.size() > 20);
  CHECK(fn.size() == fd.size());
  CHECK(f9.size() == fd.size());
  CHECK(fd.count("seq/1/logits/full") == 1);
  const Pipeline shuffle_deflate1 = {{H5Z_FILTER_SHUFFLE, 4u}, {H5Z_FILTER_DEFLATE, 1u}};
  int checksums = 0;
  for (const auto& [name, pipeline] : fd) {
    INFO(name);
    // shuffle's client value is the element size (4 for every dataset of an f32 trace)
    CHECK(without_checksum(name, pipeline) == shuffle_deflate1);
    checksums += checksummed(name);
  }
  CHECK(checksums == 8);  // two sequences' tokens, top-K ids and logits, lse
  for (const auto& [name, pipeline] : fn) {
    INFO(name);
    CHECK(without_checksum(name, pipeline).empty());
  }
  for (const auto& [name, p9] : f9) {
    INFO(name);
    const Pipeline pipeline = without_checksum(name, p9);
    REQUIRE(pipeline.size() == 2);
    CHECK(pipeline[0].first == H5Z_FILTER_SHUFFLE);
    CHECK(pipeline[1] == std::pair<H5Z_filter_t, unsigned>{H5Z_FILTER_DEFLATE, 9u});
  }
  CHECK(fs::file_size(plain) > fs::file_size(deflated));
  // Unfiltered chunks are stored whole, filled or not: they are kept small (16 rows), so the
  // unfilled rows of each sequence's last chunk do not make an uncompressed trace several times
  // larger than a deflated one (docs/trace-format.md, "Storage").
  dataset_filters(plain);
  for (const auto& [name, pipeline] : fn) {
    INFO(name);
    CHECK(g_chunk_rows.at(name) <= 16);
  }

  // The same values through the trace reader: every token, hidden row, top-K, lse and full
  // logits row, raw bits.
  const std::string digest = ds::test::trace_digest(deflated);
  CHECK(ds::test::trace_digest(plain) == digest);
  CHECK(ds::test::trace_digest(level9) == digest);

  // The choice is recorded with the other recording options.
  CHECK(json::parse(ds::trace::TraceReader::open(deflated).config_json())["trace"]["compression"] ==
        "deflate1");
  CHECK(json::parse(ds::trace::TraceReader::open(plain).config_json())["trace"]["compression"] ==
        "none");

  // diff: zero drift everywhere; the only configuration difference is the compression.
  auto d = run_cli("diff --json - " + deflated.string() + " " + plain.string());
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  const json doc = json::parse(d.out);
  CHECK(doc["summary"]["diverged"] == 0);
  CHECK(doc["summary"]["drifted"] == 0);
  REQUIRE(doc["sequences"].size() == 2);
  for (const auto& s : doc["sequences"]) {
    CHECK(s["verdict"] == "identical");
    CHECK(s["logits"]["kl_max"] == 0.0);
    REQUIRE(s["drift"].size() > 10);
    for (const auto& site : s["drift"]) {
      INFO(site["site"]);
      CHECK(site["rel_l2_max"] == 0.0);
      CHECK(site["max_abs"] == 0.0);
    }
  }
  CHECK(doc["config_diff"].size() == 1);
  CHECK(doc["config_diff"]["trace.compression"] == json::array({"deflate1", "none"}));
}

TEST_CASE("demo and sweep pass --compression to the traces they write",
          "[cli][trace][compression]") {
  ds::test::TempDir dir;
  const fs::path out = dir.path() / "demo";
  auto r = run_cli("demo --max-new 4 --compression deflate --color never --out " + out.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* t : {"a.h5", "b.h5"}) {
    INFO(t);
    for (const auto& [name, p] : dataset_filters(out / t)) {
      INFO(name);
      const Pipeline pipeline = without_checksum(name, p);
      REQUIRE(pipeline.size() == 2);
      CHECK(pipeline[1] == std::pair<H5Z_filter_t, unsigned>{H5Z_FILTER_DEFLATE, 1u});
    }
  }

  const fs::path prompts = dir.path() / "p.txt", sw = dir.path() / "sw";
  ds::test::write_prompts(prompts, 1);
  r = run_cli("sweep -q --grid 'dtype=fp32' -n 4 --compression deflate --prompts " +
              prompts.string() + " -o " + sw.string());
  REQUIRE(r.exit_code == 0);
  const fs::path t = sw / "base.h5";
  CHECK(json::parse(ds::trace::TraceReader::open(t).config_json())["trace"]["compression"] ==
        "deflate1");
  // A second sweep into another folder, uncompressed: its child runs got the flag.
  const fs::path sw2 = dir.path() / "sw2";
  r = run_cli("sweep -q --grid 'dtype=fp32' -n 4 --compression none --prompts " + prompts.string() +
              " -o " + sw2.string());
  REQUIRE(r.exit_code == 0);
  for (const auto& [name, pipeline] : dataset_filters(sw2 / "base.h5")) {
    INFO(name);
    CHECK(without_checksum(name, pipeline).empty());
  }
  CHECK(ds::test::trace_digest(sw2 / "base.h5") == ds::test::trace_digest(t));

  // On Slurm, the job script's `driftscope run` lines carry it too (a stand-in sbatch on PATH
  // accepts the script; the real cluster is tests/cli/test_cli_sweep_slurm.cpp).
  const fs::path bin = dir.path() / "bin";
  fs::create_directories(bin);
  std::ofstream(bin / "sbatch") << "#!/bin/sh\necho 4242\n";
  fs::permissions(bin / "sbatch", fs::perms::owner_all);
  const std::string old_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  struct RestorePath {
    std::string value;
    ~RestorePath() { ::setenv("PATH", value.c_str(), 1); }
  } restore{old_path};
  ::setenv("PATH", (bin.string() + ":" + old_path).c_str(), 1);
  const fs::path sw3 = dir.path() / "sw3";
  r = run_cli("sweep -q --slurm --grid 'dtype=fp32' -n 4 --compression none --prompts " +
              prompts.string() + " -o " + sw3.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(has(ds::test::slurp(sw3 / "sweep.sbatch"), "'-q' '--compression' 'none'"));
}

TEST_CASE("bad --compression values are refused with a hint", "[cli][bad-input][compression]") {
  ds::test::TempDir dir;
  const std::string o = " -o " + (dir.path() / "t.h5").string();
  for (const char* v : {"zstd", "deflate0", "deflate10", "gzip", "lzf", "Deflate"}) {
    INFO(v);
    auto r = run_cli(std::string("run --prompt-ids 1 -n 1 --compression ") + v + o);
    check_input_error(r, "unknown compression");
    CHECK(has(r.err, "hint: --compression takes none (the default), deflate"));
    CHECK_FALSE(fs::exists(dir.path() / "t.h5"));
  }
  check_input_error(run_cli("run --prompt-ids 1 -n 1 --compression ''" + o),
                    "--compression is given an empty value");  // never read as the default
  CHECK_FALSE(fs::exists(dir.path() / "t.h5"));
  check_input_error(run_cli("demo --compression zstd --out " + (dir.path() / "d").string()),
                    "unknown compression 'zstd'");
  CHECK_FALSE(fs::exists(dir.path() / "d"));
  const fs::path prompts = dir.path() / "p.txt";
  ds::test::write_prompts(prompts, 1);
  check_input_error(run_cli("sweep --grid 'dtype=fp32' --compression zstd --prompts " +
                            prompts.string() + " -o " + (dir.path() / "sw").string()),
                    "unknown compression 'zstd'");
  CHECK_FALSE(fs::exists(dir.path() / "sw"));
  // Not a run-configuration field: a --config file does not take it.
  std::ofstream(dir.path() / "c.toml") << "compression = \"none\"\n";
  check_input_error(run_cli("run --dry-run --config " + (dir.path() / "c.toml").string()),
                    "unknown key 'compression'");
  // --help describes it on every command that writes traces.
  for (const char* cmd : {"run", "demo", "sweep"}) {
    INFO(cmd);
    auto h = run_cli(std::string(cmd) + " --help");
    CHECK(h.exit_code == 0);
    CHECK(has(h.out, "--compression"));
    CHECK(has(h.out, "deflate1 ... deflate9"));
  }
}
