// `driftscope calibrate` and `diff --floor` through the executable (issue 48): a floor written,
// shown and resumed; B judged against it with the gate; and every floor diff must refuse (another
// model, configuration or format version, fewer than 20 replays, a damaged file): one
// `driftscope:` line, a hint, exit 2. Sizes: 2 prompts of 8 tokens, N = 20 replays (the fewest a
// floor may hold), so the p-values reach 1/21 and the gate tests use --alpha 0.05.
#include <fmt/format.h>
#include <hdf5.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/floor_file.h"

namespace ds::test {
namespace {

// Two prompts, 8 new tokens, every probe, `flags` (a configuration) -> dir/name.
std::string small_trace(const TempDir& dir, const std::string& name,
                        const std::string& flags = "") {
  std::ofstream(dir.path() / "p.txt") << "In the beginning\nAnd God said\n";
  const std::string path = (dir.path() / name).string();
  const CliResult r = run_cli(fmt::format("run --prompts {} --max-new 8 --probes all -q {} -o {}",
                                          (dir.path() / "p.txt").string(), flags, path));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return path;
}

// A run of A's configuration on A's tokens under a plan (JSON), every probe.
std::string replay(const TempDir& dir, const std::string& a, const std::string& name,
                   const std::string& plan_json) {
  const auto plan = dir.path() / (name + ".json");
  std::ofstream(plan) << plan_json;
  const std::string path = (dir.path() / name).string() + ".h5";
  const CliResult r =
      run_cli(fmt::format("run --force-tokens {} --max-new 8 --probes all -q "
                          "--plan {} -o {}",
                          a, plan.string(), path));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return path;
}

// The first `n` replays of a floor (a floor of fewer replays).
trace::FloorFile first_replays(const trace::FloorFile& f, int n) {
  trace::FloorFile g = f;
  const size_t N = f.seeds.size(), B = static_cast<size_t>(f.buckets), Q = f.sequences.size();
  g.seeds.resize(static_cast<size_t>(n));
  g.hidden.clear();
  for (size_t s = 0; s < f.sites.size(); ++s) {
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      for (size_t b = 0; b < B; ++b) g.hidden.push_back(f.hidden[(s * N + i) * B + b]);
    }
  }
  g.margins.resize(static_cast<size_t>(n) * B);
  g.flipped.resize(static_cast<size_t>(n) * Q);
  for (auto& r : g.rows) r.flips = std::min(r.flips, n);
  return g;
}

}  // namespace

TEST_CASE("calibrate: a floor of N replays, shown, resumed, and B judged against it",
          "[cli][noise]") {
  TempDir dir;
  const std::string a = small_trace(dir, "a.h5");
  const std::string floor = (dir.path() / "floor.h5").string();
  CliResult r = run_cli(fmt::format("calibrate {} -o {} --runs 20 -j 2", a, floor));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("wrote " + floor + " (20 replays") != std::string::npos);
  const auto work = std::filesystem::path(floor + ".calibrate");
  CHECK(std::filesystem::exists(work / "calibrate.json"));
  CHECK(std::filesystem::exists(work / "measures" / "replay-20.json"));
  CHECK_FALSE(std::filesystem::exists(work / "replay-20.h5"));  // measured, then removed
  CHECK_FALSE(std::filesystem::exists(work / "reference.h5"));

  r = run_cli("show " + floor);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("noise floor, format v1") != std::string::npos);
  CHECK(r.out.find("replays   20 under reorder") != std::string::npos);
  CHECK(r.out.find("L3/mlp_out") != std::string::npos);
  r = run_cli("show --json " + floor);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out).at("runs") == 20);

  // the same command again: refused (the floor exists); with --force nothing is run again, and a
  // larger N runs only the new replays (and the reference, removed once the floor was written)
  check_input_error(run_cli(fmt::format("calibrate {} -o {} --runs 20", a, floor)),
                    "already exists");
  r = run_cli(fmt::format("calibrate {} -o {} --runs 20 --force", a, floor));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("; 1 to run") != std::string::npos);  // the reference alone
  r = run_cli(fmt::format("calibrate {} -o {} --runs 23 --force", a, floor));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("; 4 to run") != std::string::npos);
  CHECK(trace::read_floor(floor).runs() == 23);

  // B: a benign replay is within noise; a planted +4 ulp bias at L1/mlp_out is beyond it there
  const std::string benign =
      replay(dir, a, "benign", R"({"format":"driftscope-plan","version":1,"reorder_seed":777})");
  const std::string biased = replay(dir, a, "biased",
                                    R"({"format":"driftscope-plan","version":1,"reorder_seed":778,)"
                                    R"("test_bias":{"op":"L1/down_proj","ulps":4}})");
  r = run_cli(
      fmt::format("diff {} {} --floor {} --alpha 0.05 --fail-on beyond-noise", a, benign, floor));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("against the noise floor") != std::string::npos);
  CHECK(r.out.find(": within noise") != std::string::npos);
  CHECK(r.err.find("gate PASS") != std::string::npos);
  const std::string json = (dir.path() / "biased-report.json").string();  // biased.json: the plan
  r = run_cli(fmt::format("diff {} {} --floor {} --alpha 0.05 --fail-on beyond-noise --json {}", a,
                          biased, floor, json));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("gate FAIL: beyond-noise") != std::string::npos);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  CHECK(j.at("noise").at("onset") == "L1/mlp_out");
  CHECK(j.at("noise").at("beyond") == true);
  CHECK(j.at("noise").at("runs") == 23);
  // without a floor the report has no noise key, and the gate needs one
  r = run_cli(fmt::format("diff {} {} --json -", a, biased));
  CHECK(nlohmann::json::parse(r.out).contains("noise") == false);
  check_input_error(run_cli(fmt::format("diff {} {} --fail-on beyond-noise", a, biased)),
                    "needs a noise floor");
}

TEST_CASE(
    "diff --floor: a floor of another model, configuration or version, too few replays, "
    "or damaged is refused",
    "[cli][noise][bad-input]") {
  TempDir dir;
  const std::string a = small_trace(dir, "a.h5");
  const std::string floor = (dir.path() / "floor.h5").string();
  REQUIRE(run_cli(fmt::format("calibrate {} -o {} --runs 20 -q", a, floor)).exit_code == 0);
  const trace::FloorFile f = trace::read_floor(floor);
  const std::string b = small_trace(dir, "b.h5", "--split-k 2");
  auto diff = [&](const std::string& a_trace, const std::string& floor_file) {
    return run_cli(fmt::format("diff {} {} --floor {}", a_trace, b, floor_file));
  };
  REQUIRE(diff(a, floor).exit_code == 0);

  // another model: the model files' digests differ
  trace::FloorFile other = f;
  nlohmann::json model = nlohmann::json::parse(other.model_json);
  model["files"][0]["sha256"] = std::string(64, '0');
  other.model_json = model.dump();
  const std::string other_model = (dir.path() / "other-model.h5").string();
  trace::write_floor(other_model, other, true);
  check_input_error(diff(a, other_model), "is of another model");

  // another configuration: A in bf16 against the fp32 floor
  const std::string a16 = small_trace(dir, "a16.h5", "--dtype bf16");
  check_input_error(run_cli(fmt::format("diff {} {} --floor {}", a16, a16, floor)),
                    "is of another configuration: dtype is \"fp32\" in the floor, \"bf16\"");

  // another format version
  const std::string v2 = (dir.path() / "v2.h5").string();
  std::filesystem::copy_file(floor, v2);
  {
    const hid_t file = H5Fopen(v2.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(file >= 0);
    const hid_t attr = H5Aopen(file, "format_version", H5P_DEFAULT);
    const int64_t two = 2;
    H5Awrite(attr, H5T_NATIVE_INT64, &two);
    H5Aclose(attr);
    H5Fclose(file);
  }
  check_input_error(diff(a, v2), "is of format version 2; this driftscope reads version 1");

  // fewer than 20 replays: p-values cannot reach below 1/(N+1)
  const std::string few = (dir.path() / "few.h5").string();
  trace::write_floor(few, first_replays(f, 12), true);
  check_input_error(diff(a, few), "holds 12 replays: its p-values cannot go below 1/13");

  // damaged: bytes overwritten in the middle, and the file cut short
  const std::string damaged = (dir.path() / "damaged.h5").string();
  std::filesystem::copy_file(floor, damaged);
  {
    std::fstream io(damaged, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(std::filesystem::file_size(damaged) / 2));
    const std::string junk(4096, '\x5a');
    io.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const CliResult rd = diff(a, damaged);
  INFO(rd.err);
  CHECK(rd.exit_code == 2);
  CHECK(rd.err.starts_with("driftscope: floor '" + damaged + "'"));
  CHECK(rd.err.find("damaged") != std::string::npos);
  CHECK(rd.err.find("\nhint: ") != std::string::npos);
  const std::string cut = (dir.path() / "cut.h5").string();
  std::filesystem::copy_file(floor, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) / 3);
  check_input_error(diff(a, cut), "floor '" + cut + "'");

  // a trace is not a floor, and calibrate's own refusals
  check_input_error(diff(a, a), "is not a floor file");
  check_input_error(run_cli(fmt::format("calibrate {} -o {} --runs 5", a, floor + "x")),
                    "--runs 5 is outside 20..100000");
  check_input_error(run_cli(fmt::format("calibrate {} -o {} --perturb shuffle", a, floor + "x")),
                    "unknown perturbation 'shuffle'");
  CHECK_FALSE(std::filesystem::exists(floor + "x"));
  CHECK_FALSE(std::filesystem::exists(floor + "x.calibrate"));
}

TEST_CASE("demo --floor: the report says how many of B's flips reordering alone predicts",
          "[cli][noise][demo]") {
  TempDir dir;
  std::ofstream(dir.path() / "p.txt") << "In the beginning\nAnd God said\nBlessed are\n";
  const std::string out = (dir.path() / "demo").string();
  const CliResult r = run_cli(fmt::format("demo --prompts {} --max-new 12 --out {} --floor 20",
                                          (dir.path() / "p.txt").string(), out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("expected from reordering alone") != std::string::npos);
  std::ifstream in(out + "/report.json");
  const auto j = nlohmann::json::parse(in);
  CHECK(j.at("noise").at("headline").get<std::string>().find("expected from reordering alone") !=
        std::string::npos);
  CHECK(j.at("noise").at("flips").at("observed") == j.at("summary").at("diverged"));
}

}  // namespace ds::test
