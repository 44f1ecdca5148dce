// `driftscope sweep` end to end on the bundled kjv-llama: a 2×2 grid run with -j 2 gives one
// trace per configuration, named by its knobs and bit-identical to `driftscope run` of that
// configuration; a rerun keeps complete traces and redoes deleted, unreadable and interrupted
// ones; a configuration that fails is reported missing (exit 1); bad grids are refused.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/diff/trace_builder.h"
#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "tests/support/trace_digest.h"

namespace fs = std::filesystem;
using ds::test::run_cli;
using nlohmann::json;

using ds::test::has;
using ds::test::slurp_json;

namespace {}  // namespace

TEST_CASE("sweep: a grid runs one trace per configuration, identical to run, and resumes",
          "[cli][sweep]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", dir = tmp.path() / "sw";
  ds::test::write_prompts(prompts);
  const std::string sweep = "sweep --grid 'dtype=fp32,bf16 batch=1,2' -n 12 --prompts " +
                            prompts.string() + " -j 2 -o " + dir.string();
  auto r = run_cli(sweep);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  const std::vector<std::pair<std::string, std::string>> configs = {
      {"dtype-fp32_batch-1", "--dtype fp32 --batch 1"},
      {"dtype-fp32_batch-2", "--dtype fp32 --batch 2"},
      {"dtype-bf16_batch-1", "--dtype bf16 --batch 1"},
      {"dtype-bf16_batch-2", "--dtype bf16 --batch 2"}};
  const json state = slurp_json(dir / "sweep.json");
  CHECK(state["format"] == "driftscope-sweep");
  CHECK(state["grid"]["dtype"] == json::array({"fp32", "bf16"}));
  CHECK(state["grid"]["batch"] == json::array({"1", "2"}));
  CHECK(state["base"]["max_new"] == 12);
  REQUIRE(state["configurations"].size() == 4);
  std::map<std::string, std::string> reference;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& [name, flags] = configs[i];
    INFO(name);
    CHECK(state["configurations"][i]["name"] == name);
    CHECK(state["configurations"][i]["status"] == "done");
    const fs::path ref = tmp.path() / (name + "-ref.h5");
    REQUIRE(
        run_cli("run " + flags + " -n 12 -q --prompts " + prompts.string() + " -o " + ref.string())
            .exit_code == 0);
    reference[name] = ds::test::trace_digest(ref);
    CHECK(ds::test::trace_digest(dir / (name + ".h5")) == reference[name]);
  }
  // bf16 and fp32 do part somewhere in 4 prompts × 12 tokens, so the digests tell them apart.
  CHECK(reference["dtype-fp32_batch-1"] != reference["dtype-bf16_batch-1"]);

  // Resume: one kept, one deleted, one unreadable, one interrupted (complete=0).
  const auto kept = dir / "dtype-fp32_batch-1.h5";
  const auto kept_time = fs::last_write_time(kept);
  fs::remove(dir / "dtype-fp32_batch-2.h5");
  { std::ofstream(dir / "dtype-bf16_batch-1.h5") << "not a trace"; }
  ds::test::TraceSpec interrupted;
  interrupted.complete = false;
  interrupted.seqs.push_back({{1}, {2}, {}, {}, {}});
  fs::remove(dir / "dtype-bf16_batch-2.h5");
  ds::test::write_trace(dir / "dtype-bf16_batch-2.h5", interrupted);
  r = run_cli(sweep);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.err, "kept 1 complete trace(s)"));
  CHECK(fs::last_write_time(kept) == kept_time);
  for (const auto& [name, flags] : configs) {
    INFO(name);
    CHECK(ds::test::trace_digest(dir / (name + ".h5")) == reference[name]);
  }
  // Nothing left to do: a third run touches nothing; without --grid it resumes the same sweep.
  r = run_cli("sweep -q -o " + dir.string());
  CHECK(r.exit_code == 0);
  CHECK(fs::last_write_time(kept) == kept_time);

  // Another grid in the same directory is refused.
  r = run_cli("sweep --grid 'dtype=fp16' --prompts " + prompts.string() + " -o " + dir.string());
  ds::test::check_input_error(r, "holds another sweep");
}

TEST_CASE("sweep: a configuration that fails is named missing, exit 1", "[cli][sweep]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", dir = tmp.path() / "sw";
  ds::test::write_prompts(prompts, 1);
  // What the sweep can check (tp=3 against the model's heads) is refused before any run; a
  // failure only a run meets is not: the trace writer's test hook fails the runs that write more
  // than 5 steps, as on a full disk, so max_new=30 fails and max_new=2 does not.
  setenv("DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS", "5", 1);
  auto r = run_cli("sweep -q --grid 'max_new=2,30' --prompts " + prompts.string() + " -o " +
                   dir.string());
  unsetenv("DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(has(r.err, "1 of 2 configurations missing: max_new-30"));
  CHECK(fs::exists(dir / "max_new-2.h5"));
  const json state = slurp_json(dir / "sweep.json");
  CHECK(state["configurations"][0]["status"] == "done");
  CHECK(state["configurations"][1]["status"] == "missing");
  std::ifstream log(dir / "logs" / "max_new-30.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(has(text, "No space left on device"));
}

TEST_CASE("sweep: bad grids and options are refused with a hint", "[cli][sweep]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt";
  ds::test::write_prompts(prompts);
  const std::string tail = " --prompts " + prompts.string() + " -o " + (tmp.path() / "d").string();
  ds::test::check_input_error(run_cli("sweep --grid 'colour=red'" + tail),
                              "unknown run-config field 'colour'");
  ds::test::check_input_error(run_cli("sweep --grid 'dtype=bf17'" + tail), "invalid dtype 'bf17'");
  ds::test::check_input_error(run_cli("sweep --grid 'batch=x'" + tail), "invalid batch 'x'");
  ds::test::check_input_error(run_cli("sweep --grid 'dtype=bf16 dtype=fp16'" + tail),
                              "given twice");
  ds::test::check_input_error(run_cli("sweep --grid 'seed=1,1'" + tail),
                              "grid knob 'seed' lists '1' twice");
  ds::test::check_input_error(run_cli("sweep --grid 'dtype=fp32 seed=7,2,07'" + tail),
                              "grid knob 'seed' lists '7' and '07' twice (the same value)");
  ds::test::check_input_error(run_cli("sweep --grid 'dtype'" + tail), "is not knob=v1,v2");
  ds::test::check_input_error(run_cli("sweep --grid 'dtype=bf16' --partition p" + tail),
                              "go with --slurm");
  ds::test::check_input_error(run_cli("sweep -o " + (tmp.path() / "none").string()),
                              "sweep needs --grid");
  CHECK(!fs::exists(tmp.path() / "d"));
  // --dry-run lists every configuration with its resolved config and runs nothing.
  auto r = run_cli("sweep --dry-run --grid 'dtype=bf16,fp16 tp=1,2' --samples 2 --seed 7" + tail);
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "# dtype-bf16_tp-1_seed-7\n"));
  CHECK(has(r.out, "# dtype-fp16_tp-2_seed-8\n"));
  CHECK(std::count(r.out.begin(), r.out.end(), '#') == 8);
  CHECK(!fs::exists(tmp.path() / "d"));
  // The grid file in configs/: the seeds' 12 configurations for each of 3 precisions.
  r = run_cli("sweep --dry-run --grid @" + ds::test::source_dir() + "/configs/grid-seeds-12.txt" +
              tail);
  CHECK(r.exit_code == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '#') == 36);
  CHECK(has(r.out, "# dtype-fp32_gemm_policy-heuristic_tp-2_batch-32\n"));
  ds::test::check_input_error(run_cli("sweep --grid @" + (tmp.path() / "no.txt").string() + tail),
                              "cannot read grid file");
  // The grid's size is bounded before anything is expanded (1,000,000 samples wrote 4 GB of
  // configs; a 50^4 grid ran out of memory expanding).
  ds::test::check_input_error(
      run_cli("sweep --dry-run --grid 'dtype=fp32' --samples 1000000" + tail),
      "--samples 1000000 is more than the limit of 100000 configurations");
  std::string seeds = "seed=0", lengths = "max_new=1";  // 400 x 300 = 120,000 configurations
  for (int i = 1; i < 400; ++i) seeds += "," + std::to_string(i);
  for (int i = 2; i <= 300; ++i) lengths += "," + std::to_string(i);
  ds::test::check_input_error(
      run_cli("sweep --dry-run --grid '" + seeds + " " + lengths + "'" + tail),
      "the grid has more than the limit of 100000 configurations");
  CHECK(!fs::exists(tmp.path() / "d"));
  // The prompts are read by every run and by a resume: a pipe would be empty after the first.
  ds::test::check_input_error(run_cli("sweep --grid 'dtype=fp32,bf16' --prompts /dev/stdin -o " +
                                      (tmp.path() / "d").string()),
                              "is not a regular file");
  CHECK(!fs::exists(tmp.path() / "d"));
}

// A newline in a Slurm option or in the sweep folder would end an `#SBATCH` line of the batch
// script and start a command the job runs; it is refused before the folder is made.
TEST_CASE("sweep --slurm: control characters in --partition, --time or -o are refused",
          "[cli][sweep]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt";
  ds::test::write_prompts(prompts);
  const fs::path pwned = tmp.path() / "PWNED";
  const std::string head =
      "sweep --slurm --grid 'dtype=fp32,bf16' -n 2 --prompts " + prompts.string();
  const std::string dir = " -o " + (tmp.path() / "d").string();
  ds::test::check_input_error(
      run_cli(head + " --partition \"$(printf 'gpu\\ntouch " + pwned.string() + "')\"" + dir),
      "--partition holds a control character (byte 0x0a at offset 3)");
  ds::test::check_input_error(run_cli(head + " --time \"$(printf '1:00\\r')\"" + dir),
                              "--time holds a control character (byte 0x0d");
  CHECK(!fs::exists(tmp.path() / "d"));
  const fs::path odd = tmp.path() / ("sw\ntouch " + pwned.string() + " #");
  ds::test::check_input_error(run_cli(head + " -o \"$(printf '" + tmp.path().string() +
                                      "/sw\\ntouch " + pwned.string() + " #')\""),
                              "the sweep folder (-o) holds a control character");
  CHECK(!fs::exists(odd));
  CHECK(!fs::exists(pwned));
}

// A sweep.json edited by hand or damaged is checked as --grid is: an empty knob crashed `sweep -o`
// and `stats` (expand_grid indexed an empty list), a bad value or field reached the runs.
TEST_CASE("sweep: a sweep.json whose grid --grid would refuse is not a valid sweep file",
          "[cli][sweep][bad-input]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", dir = tmp.path() / "sw";
  ds::test::write_prompts(prompts, 1);
  REQUIRE(run_cli("sweep -q --grid dtype=fp32,bf16 -n 3 --prompts " + prompts.string() + " -o " +
                  dir.string())
              .exit_code == 0);
  const json original = slurp_json(dir / "sweep.json");
  const std::pair<json, std::string> damaged[] = {
      {json::array(), "grid knob 'dtype' has no values"},
      {json::array({"fp8"}), "invalid dtype 'fp8'"},  // refused as --grid refuses it
  };
  for (const auto& [values, message] : damaged) {
    INFO(message);
    json j = original;
    j["grid"]["dtype"] = values;
    std::ofstream(dir / "sweep.json") << j.dump();
    for (const std::string command : {"sweep -o ", "stats "}) {
      const auto r = run_cli(command + dir.string());
      ds::test::check_input_error(r, "is not a valid sweep file: " + message);
    }
  }
  json j = original;
  j["grid"]["colour"] = json::array({"red"});
  std::ofstream(dir / "sweep.json") << j.dump();
  ds::test::check_input_error(run_cli("sweep -o " + dir.string()),
                              "unknown run-config field 'colour'");
}
