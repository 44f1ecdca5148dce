// The second adversarial round of bad inputs (issue 45), fed to the real executable: one test per
// cause, each trying variants of its class, each failing on the code before its fix. The
// principles they hold are written in docs/cli.md, "Files, safety and limits".
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "tests/support/zoom_fixture.h"
#include "trace/reader.h"

using ds::test::check_input_error;
using ds::test::first_pass;
using ds::test::has;
using ds::test::run_cli;

namespace fs = std::filesystem;

namespace {

// `text` written to `path` as it is (bytes, no newline added).
fs::path write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Whether two files hold the same bytes.
bool same_bytes(const fs::path& x, const fs::path& y) {
  return ds::test::slurp(x) == ds::test::slurp(y);
}

// The names in `dir`, hidden ones included.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

// The first line of stderr holds `needle`, and there are exactly two lines: it and the hint.
void check_one_line(const ds::test::CliResult& r, const std::string& needle) {
  check_input_error(r, needle);
  INFO("stderr: " << r.err);
  CHECK(r.err.substr(0, r.err.find('\n')).find(needle) != std::string::npos);
  CHECK(ds::test::count(r.err, "\n") == 2);
}

// Two first-pass traces of the bundled model that part (fp32 batch 1 against bf16 batch 4: two of
// four prompts flip), as tests/cli/test_cli_zoom.cpp makes them.
struct FlippedPair {
  ds::test::TempDir dir;
  fs::path a = first_pass(dir, "a", "");
  fs::path b = first_pass(dir, "b", "--dtype bf16 --batch 4");
  std::string ab() const { return a.string() + " " + b.string(); }
};

}  // namespace

TEST_CASE("zoom never writes over its own inputs, and refuses a folder of files it did not write",
          "[cli][bad-input][zoom]") {
  // `zoom z/a.h5 b.h5 -o z` replayed A into z/a.h5: its own input, replaced (cause 1).
  FlippedPair t;
  const fs::path z = t.dir.path() / "z";
  fs::create_directories(z);
  fs::copy_file(t.a, z / "a.h5");
  const auto r =
      run_cli("zoom -q " + (z / "a.h5").string() + " " + t.b.string() + " -o " + z.string());
  check_one_line(r, "holds files this zoom did not write (a.h5) and no zoom.json");
  CHECK(same_bytes(z / "a.h5", t.a));
  CHECK(entries(z) == std::vector<std::string>{"a.h5"});
  // B in DIR; a folder holding only a user's notes
  fs::remove(z / "a.h5");
  fs::copy_file(t.b, z / "b.h5");
  check_input_error(
      run_cli("zoom -q " + t.a.string() + " " + (z / "b.h5").string() + " -o " + z.string()),
      "did not write (b.h5)");
  CHECK(same_bytes(z / "b.h5", t.b));
  const fs::path notes = t.dir.path() / "notes";
  fs::create_directories(notes);
  write_file(notes / ".todo", "x");
  check_input_error(run_cli("zoom -q " + t.ab() + " -o " + notes.string()),
                    "(.todo (one hidden: ls -A shows it))");
  // explain writes into a zoom's folder: the same rule, naming itself
  check_one_line(run_cli("explain -q " + t.ab() + " -o " + notes.string()),
                 "holds files this explain did not write (.todo");
  CHECK(entries(notes) == std::vector<std::string>{".todo"});
  // a zoom folder whose replay is a hard link of an input: refused by inode when resuming
  const fs::path z2 = t.dir.path() / "z2";
  REQUIRE(run_cli("zoom -q " + t.ab() + " -o " + z2.string()).exit_code == 0);
  fs::remove(z2 / "a.h5");
  fs::create_hard_link(t.a, z2 / "a.h5");
  check_one_line(
      run_cli("zoom -q " + t.ab() + " -o " + z2.string()),
      "replay trace '" + (z2 / "a.h5").string() + "' is the input trace '" + t.a.string() + "'");
  CHECK(fs::hard_link_count(t.a) == 2);
}

TEST_CASE("report files never replace an input, a state file or model weights",
          "[cli][bad-input]") {
  // `stats sw --json sw/sweep.json` replaced the sweep's state; `attribute --json
  // m/model.safetensors` exited 0 with the weights gone (cause 2).
  ds::test::TempDir dir;
  const fs::path p = dir.path() / "p.txt", sw = dir.path() / "sw";
  ds::test::write_prompts(p, 2);
  REQUIRE(run_cli("sweep -q --grid seed=1,2 --prompts " + p.string() + " -n 2 -o " + sw.string())
              .exit_code == 0);
  const std::string state = ds::test::slurp(sw / "sweep.json");
  check_one_line(run_cli("stats " + sw.string() + " --json " + (sw / "sweep.json").string()),
                 "is the sweep file '" + (sw / "sweep.json").string() + "'");
  check_input_error(
      run_cli("stats --force " + sw.string() + " --html " + (sw / "sweep.json").string()),
      "is the sweep file");  // --force or not
  CHECK(ds::test::slurp(sw / "sweep.json") == state);
  // a model folder of its own: the weights, the config and the tokenizer
  const fs::path m = dir.path() / "m";
  fs::copy(ds::test::model_hf(), m);
  const auto t = ds::test::run_trace(
      dir.path(), "t.h5", "--model " + m.string() + " --probes 'embed,L*/out,final_norm'");
  for (const char* f : {"model.safetensors", "config.json", "tokenizer.json"}) {
    const std::string before = ds::test::slurp(m / f);
    check_input_error(run_cli("attribute " + t + " -m " + m.string() + " --dtype bf16 -q --json " +
                              (m / f).string()),
                      "is a file of the model");
    check_input_error(
        run_cli("run -q -n 2 --prompt-ids 1 -m " + m.string() + " --force -o " + (m / f).string()),
        "is a file of the model");
    CHECK(ds::test::slurp(m / f) == before);
  }
  // a run's prompts file and a stats answer key, --force or not
  check_input_error(run_cli("run -q -n 2 --prompts " + p.string() + " --force -o " + p.string()),
                    "is the prompts file");
  const fs::path key = write_file(dir.path() / "key.txt", "a\nb\n");
  check_input_error(run_cli("stats " + sw.string() + " --extract '(\\w+)' --answers " +
                            key.string() + " --json " + key.string()),
                    "is the answer key");
  CHECK(ds::test::slurp(key) == "a\nb\n");
  // an existing file that the command did not create is replaced only with --force
  const fs::path report = write_file(dir.path() / "r.json", "mine");
  check_input_error(run_cli("stats " + sw.string() + " --json " + report.string()),
                    "JSON report '" + report.string() + "' already exists");
  CHECK(ds::test::slurp(report) == "mine");
  REQUIRE(run_cli("stats --force " + sw.string() + " --json " + report.string()).exit_code == 0);
  CHECK(has(ds::test::slurp(report), "driftscope-stats"));
}

TEST_CASE("sweep --samples never wraps a seed past 2^64 - 1", "[cli][bad-input][sweep]") {
  // --seed 18446744073709551615 --samples 2 made the second sample seed 0 (cause 4).
  ds::test::TempDir dir;
  const fs::path p = dir.path() / "p.txt", sw = dir.path() / "sw";
  ds::test::write_prompts(p, 1);
  const auto r = run_cli(
      "sweep --samples 2 --seed 18446744073709551615 --grid dtype=bf16 "
      "--temperature 1 --prompts " +
      p.string() + " -o " + sw.string() + " --dry-run");
  check_one_line(r, "--samples 2 from --seed 18446744073709551615 passes the largest seed");
  CHECK_FALSE(has(r.out, "seed=0"));
  CHECK_FALSE(fs::exists(sw));
}

TEST_CASE("sweep checks every configuration against the model before anything runs",
          "[cli][bad-input][sweep]") {
  // tp=1,3 ran tp 1, then failed; the corrected tp=1,2 was refused ("holds another sweep")
  // (cause 6). Now the whole grid is checked first and nothing is written.
  ds::test::TempDir dir;
  const fs::path p = dir.path() / "p.txt", sw = dir.path() / "sw";
  ds::test::write_prompts(p, 2);
  const std::string tail = " -q -n 2 --prompts " + p.string() + " -o " + sw.string();
  check_one_line(run_cli("sweep --grid 'tp=1,3'" + tail),
                 "configuration tp-3: invalid tp 3: it must divide the model's 8 heads");
  CHECK_FALSE(fs::exists(sw));
  check_input_error(run_cli("sweep --grid 'seed=1,2' --stop-token 1024" + tail),
                    "configuration seed-1: invalid stop_token '1024'");
  check_input_error(run_cli("sweep --grid 'dtype=fp32,bf16' --probes L7/out" + tail), "L7");
  CHECK_FALSE(fs::exists(sw));
  // a text prompt for a model without a tokenizer fails every run: known before any
  const fs::path bare = dir.path() / "bare";
  fs::create_directories(bare);
  fs::copy_file(ds::test::model_bin(), bare / "m.bin");
  check_input_error(run_cli("sweep --grid 'tp=1,2' --model " + (bare / "m.bin").string() + tail),
                    "a text prompt needs a tokenizer");
  CHECK_FALSE(fs::exists(sw));
  const auto ok = run_cli("sweep --grid 'tp=1,2'" + tail);
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(fs::exists(sw / "tp-2.h5"));
}

TEST_CASE("sweep.json and zoom.json are read with a bound: a folder, a FIFO or a huge file",
          "[cli][bad-input]") {
  // `mkdir sw/sweep.json; stats sw` was exit 3 with "basic_filebuf"; a FIFO hung; 200 MB took
  // 628 MB of memory (cause 7).
  ds::test::TempDir dir;
  const fs::path folder = dir.path() / "folder", fifo = dir.path() / "fifo",
                 huge = dir.path() / "huge", cut = dir.path() / "cut";
  fs::create_directories(folder / "sweep.json");
  check_one_line(run_cli("stats " + folder.string()),
                 "sweep file '" + (folder / "sweep.json").string() + "' is a directory");
  fs::create_directories(fifo);
  REQUIRE(::mkfifo((fifo / "sweep.json").c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  check_one_line(run_cli("stats " + fifo.string()), "' is not a regular file");
  check_one_line(run_cli("sweep -o " + fifo.string()), "' is not a regular file");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  fs::create_directories(huge);
  {
    std::ofstream out(huge / "sweep.json");
    const std::string block(1 << 20, ' ');
    for (int i = 0; i < 70; ++i) out << block;
  }
  check_one_line(run_cli("stats " + huge.string()), "is larger than the limit of 64.0 MiB");
  // damaged: the file, the line and the cause, without nlohmann's wrapper
  fs::create_directories(cut);
  write_file(cut / "sweep.json", "{\"format\": \"driftscope-sweep\",\n");
  const auto r = run_cli("stats " + cut.string());
  check_one_line(r,
                 "is not a valid sweep file: not valid JSON at line 2, column 1: unexpected end");
  CHECK_FALSE(has(r.err, "json.exception"));
  // zoom.json the same way
  FlippedPair t;
  const fs::path z = t.dir.path() / "z";
  fs::create_directories(z / "zoom.json");
  check_one_line(run_cli("zoom -q " + t.ab() + " -o " + z.string()),
                 "zoom file '" + (z / "zoom.json").string() + "' is a directory");
}

TEST_CASE("zoom --after near INT_MAX is refused before anything is made",
          "[cli][bad-input][zoom]") {
  // --after 2147483647 overflowed the flip + after: exit 3 with a std::vector message, and
  // z/configs left behind (cause 8).
  FlippedPair t;
  const fs::path z = t.dir.path() / "z";
  for (const char* after : {"2147483647", "16777217"}) {
    check_one_line(run_cli("zoom -q " + t.ab() + " -o " + z.string() + " --after " + after),
                   "--after " + std::string(after) + " is more than the 16777216 tokens");
    CHECK_FALSE(fs::exists(z));
  }
  check_one_line(run_cli("zoom -q " + t.ab() + " -o " + z.string() + " --after 99999999999"),
                 "--after 99999999999 is out of range");
  CHECK_FALSE(fs::exists(z));
}

TEST_CASE("a resumed zoom or sweep reads its traces: a cut one is run again, never kept",
          "[cli][bad-input]") {
  // After `truncate -s 50000 z/a.h5` zoom said "0 replay(s) to run" and crashed; a cut sweep
  // trace was "all complete" and stats failed (cause 9).
  FlippedPair t;
  const fs::path z = t.dir.path() / "z";
  const std::string zoom = "zoom " + t.ab() + " -o " + z.string();
  REQUIRE(run_cli(zoom + " -q").exit_code == 0);
  const std::string flips = ds::test::slurp(z / "flips.json");
  fs::resize_file(z / "a.h5", 50000);
  auto r = run_cli(zoom);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(has(r.err, "1 replay(s) to run"));
  CHECK(has(r.err, "replay-a done"));
  CHECK(ds::test::slurp(z / "flips.json") == flips);
  CHECK_NOTHROW(ds::trace::TraceReader::open(z / "a.h5"));
  CHECK_FALSE(ds::trace::TraceReader::open(z / "a.h5").cut_short());

  const fs::path p = t.dir.path() / "p.txt", sw = t.dir.path() / "sw";
  ds::test::write_prompts(p, 2);
  const std::string sweep =
      "sweep --grid 'dtype=fp32,bf16' -n 4 --prompts " + p.string() + " -o " + sw.string();
  REQUIRE(run_cli(sweep + " -q").exit_code == 0);
  const uint64_t size = fs::file_size(sw / "dtype-bf16.h5");
  fs::resize_file(sw / "dtype-bf16.h5", size / 2);
  r = run_cli(sweep);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(has(r.err, "kept 1 complete trace(s)"));
  CHECK(has(r.err, "dtype-bf16 done"));
  CHECK(run_cli("stats " + sw.string()).exit_code == 0);
}

TEST_CASE("a trace's recorded model is found from its own folder and verified before reuse",
          "[cli][bad-input][zoom]") {
  // A trace recorded with `-m m` (a relative path) was replayed from another folder holding
  // another model at m: zoom exited 0 with a full flips report, show and diff decoded with the
  // wrong tokenizer (cause 10).
  ds::test::TempDir dir;
  const fs::path w1 = dir.path() / "w1", w2 = dir.path() / "w2";
  fs::create_directories(w1);
  fs::create_directories(w2);
  fs::copy(ds::test::model_hf(), w1 / "m");
  fs::copy(ds::test::qwen2_hf(), w2 / "m");  // another model, another tokenizer, same name
  const fs::path p = dir.path() / "p.txt";
  ds::test::write_prompts(p);
  const std::string a = (dir.path() / "a.h5").string(), b = (dir.path() / "b.h5").string();
  const std::string run = "run -q -m m -n 24 --probes none --prompts " + p.string();
  REQUIRE(run_cli(run + " -o " + a, w1).exit_code == 0);
  REQUIRE(run_cli(run + " --dtype bf16 --batch 4 --gemm-policy heuristic -o " + b, w1).exit_code ==
          0);
  // from w2, m/ is the other model: the recorded working folder names w1/m
  auto r = run_cli("zoom -q " + a + " " + b + " -o z", w2);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(ds::test::slurp_json(w2 / "z" / "zoom.json")["model"] == (w1 / "m").string());
  const std::string shown = run_cli("show " + a, w2).out;
  CHECK(has(shown, "\"In the beginning\""));
  // the recorded model changed at its path: refused, naming the file and the digests
  fs::copy_file(w2 / "m" / "model.safetensors", w1 / "m" / "model.safetensors",
                fs::copy_options::overwrite_existing);
  r = run_cli("zoom -q " + a + " " + b + " -o z3", w2);
  check_one_line(r, "its file '" + (w1 / "m" / "model.safetensors").string() +
                        "' has changed since the trace was written");
  CHECK_FALSE(fs::exists(w2 / "z3"));
  check_input_error(run_cli("attribute -q --dtype bf16 " + a, w2), "has changed since");
  // the recorded tokenizer changed: shown as ids, saying why; decoded with --tokenizer, saying so
  fs::copy_file(w2 / "m" / "tokenizer.json", w1 / "m" / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  auto s = run_cli("show " + a, w2);
  CHECK(s.exit_code == 0);
  CHECK(has(s.err, "tokenizer.json' has changed since the trace was written"));
  CHECK(has(s.out, "prompt ids"));
  CHECK_FALSE(has(s.out, "In the beginning"));
  auto d = run_cli("diff --color never --pages 4 " + a + " " + b, w2);
  CHECK(d.exit_code == 0);
  CHECK(has(d.err, "has changed since the trace was written"));
  s = run_cli("show --tokenizer " + ds::test::model_hf() + " " + a, w2);
  CHECK(has(s.out, "\"In the beginning\""));
  CHECK_FALSE(has(s.err, "note:"));  // the same file as recorded: nothing to say
  s = run_cli("show --tokenizer " + (w2 / "m").string() + " " + a, w2);
  CHECK(has(s.err, "with --tokenizer '" + (w2 / "m").string() + "', not the tokenizer"));
}

TEST_CASE("run --force-tokens runs the model its trace records", "[cli][bad-input]") {
  // A trace of kjv-qwen2 forced into `run` without --model ran on kjv-llama without a word
  // (cause 11).
  ds::test::TempDir dir;
  const fs::path p = dir.path() / "p.txt";
  ds::test::write_prompts(p, 2);
  const std::string q = (dir.path() / "q.h5").string(), t = (dir.path() / "t.h5").string();
  REQUIRE(
      run_cli("run -q -m " + ds::test::qwen2_hf() + " -n 8 --prompts " + p.string() + " -o " + q)
          .exit_code == 0);
  auto r = run_cli("run -q --force-tokens " + q + " -o " + t);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto model = nlohmann::json::parse(ds::trace::TraceReader::open(t).model_json());
  CHECK(model["path"] == ds::test::qwen2_hf());
  check_one_line(run_cli("run -q --force-tokens " + q + " -m " + ds::test::model_hf() + " -o " +
                         (dir.path() / "t2.h5").string()),
                 "was recorded with other model files than the model loaded");
  CHECK_FALSE(fs::exists(dir.path() / "t2.h5"));
}

TEST_CASE("synth on SIGINT removes what it began, and a refusal names hidden files",
          "[cli][bad-input]") {
  // SIGINT one second into a 7B-shaped synth left a hidden 400 MB .creating file; the rerun said
  // "'s' exists and is not empty" while ls showed nothing (cause 13).
  ds::test::TempDir dir;
  const fs::path s = dir.path() / "s";
  const std::string cmd = "exec '" + ds::test::exe() + "' synth --shape llama2-7b --layers 1 -o " +
                          s.string() + " 2>" + (dir.path() / "err.txt").string();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // wait until the shard is being written, then interrupt
  for (int i = 0; i < 200; ++i) {
    if (fs::exists(s) && !fs::is_empty(s)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  INFO(ds::test::slurp(dir.path() / "err.txt"));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(has(ds::test::slurp(dir.path() / "err.txt"), "synth interrupted"));
  CHECK(entries(s).empty());  // no hidden .creating file left
  // a folder ls shows empty, holding a hidden file (a run killed with SIGKILL): named
  write_file(s / ".model.safetensors.AbCdEf.creating", "x");
  check_one_line(run_cli("synth --shape tiny -o " + s.string()),
                 "holds .model.safetensors.AbCdEf.creating (one hidden: ls -A shows it)");
}

TEST_CASE("a damaged tokenizer.json beside the model is reported as that", "[cli][bad-input]") {
  // `echo '{' > m/tokenizer.json; run -m m --prompts p.txt` said "a text prompt needs a
  // tokenizer", for 20 kinds of damage (cause 15).
  ds::test::TempDir dir;
  const fs::path m = dir.path() / "m", p = dir.path() / "p.txt";
  fs::copy(ds::test::model_hf(), m);
  fs::remove(m / "kjv-llama.bin");
  fs::remove(m / "tokenizer.bin");
  ds::test::write_prompts(p, 1);
  const std::string run = "run -q -n 2 -m " + m.string() + " --prompts " + p.string() + " -o " +
                          (dir.path() / "t.h5").string();
  const std::string json = (m / "tokenizer.json").string();
  write_file(m / "tokenizer.json", "{\n");
  auto r = run_cli(run);
  check_one_line(r, json + ": not valid JSON at line 2, column 1");
  CHECK_FALSE(has(r.err, "a text prompt needs a tokenizer\n"));
  write_file(m / "tokenizer.json", "{\"model\": 3}");
  check_input_error(run_cli(run), json);
  fs::remove(m / "tokenizer.json");
  fs::create_directories(m / "tokenizer.json");
  check_input_error(run_cli(run), "tokenizer.json' is a directory");
  fs::remove(m / "tokenizer.json");
  REQUIRE(::mkfifo((m / "tokenizer.json").c_str(), 0600) == 0);
  check_input_error(run_cli(run), "tokenizer.json' is not a regular file");
  // without a need for one (ids), the run goes on and says why it has no tokenizer
  r = run_cli("run -q -n 2 -m " + m.string() + " --prompt-ids 1,400 -o " +
              (dir.path() / "ids.h5").string());
  CHECK(r.exit_code == 0);
  CHECK(has(r.err, "cannot be loaded"));
}

TEST_CASE("stdout holds one format: stats --json - writes only JSON", "[cli][bad-input]") {
  // `stats a.h5 b.h5 --json - | python3 -m json.tool` failed: the table came first (cause 16).
  FlippedPair t;
  auto r = run_cli("stats " + t.ab() + " --json -");
  REQUIRE(r.exit_code == 0);
  CHECK_NOTHROW(nlohmann::json::parse(r.out));
  r = run_cli("stats " + t.ab() + " --html -");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.starts_with("<!DOCTYPE html>"));
  check_one_line(run_cli("stats " + t.ab() + " --json - --html -"), "--json - and --html -");
  check_one_line(run_cli("diff " + t.ab() + " --json - --html -"), "--json - and --html -");
  r = run_cli("diff " + t.ab() + " --json -");
  CHECK_NOTHROW(nlohmann::json::parse(r.out));
}

TEST_CASE("the lock message names the command that holds the folder", "[cli][bad-input]") {
  // A zoom into a folder where a sweep ran said "a zoom is running" (cause 17).
  FlippedPair t;
  const fs::path sw = t.dir.path() / "sw";
  fs::create_directories(sw);
  const int fd = ::open((sw / ".sweep.lock").c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);
  const std::string held = "4242 sweep\n";
  REQUIRE(::write(fd, held.data(), held.size()) == static_cast<ssize_t>(held.size()));
  check_one_line(run_cli("zoom -q " + t.ab() + " -o " + sw.string()),
                 "a sweep is running in '" + sw.string() + "' (pid 4242)");
  const fs::path p = write_file(t.dir.path() / "p.txt", "In the beginning\n");
  check_input_error(
      run_cli("sweep -q --grid seed=1,2 -n 2 --prompts " + p.string() + " -o " + sw.string()),
      "a sweep is running in '" + sw.string() + "' (pid 4242)");
  ::close(fd);
}

TEST_CASE("a number option given a word says it is not a number", "[cli][bad-input]") {
  // `diff a.h5 b.h5 --pages abc` said "Value abc not in range 0.000000 to 1797693..." (cause 18).
  FlippedPair t;
  check_one_line(run_cli("diff " + t.ab() + " --pages abc"), "--pages 'abc' is not a number");
  check_one_line(run_cli("diff " + t.ab() + " --pages -1"), "-1 must be >= 0");
  check_one_line(run_cli("diff " + t.ab() + " --pages 1.5"), "--pages 1.5 is not a whole number");
  check_one_line(run_cli("zoom " + t.ab() + " -o z --after x"), "--after 'x' is not a number");
  check_one_line(run_cli("run -n ten -o x.h5"), "invalid max_new 'ten': not a number");
  CHECK_FALSE(has(run_cli("diff " + t.ab() + " --pages abc").err, "179769"));
}

TEST_CASE("attribute runs the model its trace records", "[cli][bad-input]") {
  // `attribute t.h5` on a trace of any model but the default loaded the default one and refused
  // ("pass --model") (cause 21).
  ds::test::TempDir dir;
  const std::string t = ds::test::run_trace(
      dir.path(), "t.h5",
      "--model " + ds::test::mistral_hf() + " --probes 'embed,L*/out,final_norm'");
  auto r = run_cli("attribute -q --dtype bf16 --json - " + t);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_NOTHROW(nlohmann::json::parse(r.out));
  check_input_error(run_cli("attribute -q --dtype bf16 -m " + ds::test::model_hf() + " " + t),
                    "recorded with other model files");
}

TEST_CASE("empty values and bad environment values are refused, not read as absent",
          "[cli][bad-input]") {
  // `--json ''`, `--threads ''`, `--probes ''` were read as left out;
  // DRIFTSCOPE_READ_STALL_SECONDS=abc as the default (principle 12).
  FlippedPair t;
  check_one_line(run_cli("stats " + t.ab() + " --json ''"), "--json is given an empty value");
  check_one_line(run_cli("run -n 2 --threads '' -o x.h5"), "--threads is given an empty value");
  check_one_line(run_cli("run -n 2 --probes '' -o x.h5"), "--probes is given an empty value");
  check_one_line(run_cli("show ''"), "the trace argument is empty");
  CHECK(run_cli("generate -q -n 2 --prompt ''").exit_code == 0);  // the empty text is a prompt
  for (const char* var : {"DRIFTSCOPE_READ_STALL_SECONDS=abc", "DRIFTSCOPE_READ_STALL_SECONDS=-1",
                          "DRIFTSCOPE_WRITE_STALL_SECONDS=1e9", "DRIFTSCOPE_READ_THREADS=0",
                          "DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS=x", "COLUMNS=wide"}) {
    INFO(var);
    const std::string name = std::string(var).substr(0, std::string(var).find('='));
    ::putenv(const_cast<char*>(var));
    check_one_line(run_cli("show " + t.a.string()), name + "='");
    check_input_error(run_cli("run -q -n 2 --prompt-ids 1 -o " + (t.dir.path() / "e.h5").string()),
                      name + "='");
    ::unsetenv(name.c_str());
  }
  CHECK_FALSE(fs::exists(t.dir.path() / "e.h5"));
}

TEST_CASE("C1 controls, DEL and ESC in prompts and continuations are escaped on the terminal",
          "[cli][bad-input]") {
  // A prompt holding the 8-bit CSI U+009B ("\xc2\x9b31m") reached the terminal raw from `show`:
  // JSON quoting escapes C0 controls only (cause 12).
  ds::test::TempDir dir;
  const fs::path p = write_file(dir.path() / "c.txt",
                                "\xc2\x9b"
                                "31m the LORD \x1b[2J and\x7f Moses\n");
  const fs::path t = dir.path() / "c.h5";
  const auto run = run_cli("run -q -n 4 --prompts " + p.string() + " -o " + t.string());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto show = run_cli("show " + t.string());
  REQUIRE(show.exit_code == 0);
  CHECK_FALSE(has(show.out, "\xc2\x9b"));
  CHECK_FALSE(has(show.out, "\x1b"));
  CHECK_FALSE(has(show.out, "\x7f"));
  CHECK(has(show.out, "\\u009b31m the LORD \\u001b[2J and\\u007f Moses"));
}
