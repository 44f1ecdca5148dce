// `driftscope run` and `show` end to end: interruption by SIGINT, a write failure, and the
// summary in text and JSON.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

namespace fs = std::filesystem;
using ds::test::run_cli;

namespace {

// Every dataset of every sequence holds the same number of rows, and tokens one more
// (the token chosen from the last row) — or, for a sequence cut before its first step, only the
// prompt.
void check_consistent(const ds::trace::TraceReader& r) {
  for (int i : r.sequence_indices()) {
    auto s = r.sequence(i);
    INFO("seq " << i << " rows " << s.rows << " tokens " << s.tokens.size());
    for (const auto& site : s.sites) CHECK(site.shape[0] == s.rows);
    if (s.rows == 0) {
      CHECK(s.tokens.size() == static_cast<size_t>(s.prompt_len));
    } else {
      CHECK(s.tokens.size() == static_cast<size_t>(s.rows) + 1);
    }
    CHECK(r.topk(i, 0, s.rows).ids.size() == static_cast<size_t>(s.rows * s.topk));
  }
}

void write_prompts(const fs::path& p, int n) {
  std::ofstream out(p);
  for (int i = 0; i < n; ++i) out << "Once upon a time there was a cat number " << i << "\n";
}

}  // namespace

TEST_CASE("run + show: a complete trace", "[cli][trace]") {
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5";
  auto r = run_cli("run --prompt 'Once upon a time' -n 12 -o " + t.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto s = run_cli("show " + t.string());
  REQUIRE(s.exit_code == 0);
  CHECK(s.out.find("status    complete") != std::string::npos);
  CHECK(s.out.find("\"Once upon a time\"") != std::string::npos);
  // kjv-llama: 4 layers of dim 128; default sites embed, 3 per layer, final_norm; rows: the
  // prompt's 7 tokens (BOS + 6, as the Rust tokenizers library encodes it) + 12 generated - 1.
  CHECK(s.out.find("14 sites, each [18, 128] float32") != std::string::npos);
  auto j = run_cli("show --json " + t.string());
  REQUIRE(j.exit_code == 0);
  auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["complete"] == true);
  CHECK(doc["config"]["dtype"] == "fp32");
  CHECK(doc["model"]["files"][0]["sha256"] ==
        "80bbce01814f0bc0bf4e8e4bfb8a5c4b6b0dec12c135e0f9fd46d0610390e160");
  CHECK(doc["sequences"][0]["rows"] == 18);
  // Overwriting needs --force.
  CHECK(run_cli("run -n 2 -o " + t.string()).exit_code == 2);
  CHECK(run_cli("run -n 2 --force -q -o " + t.string()).exit_code == 0);
}

TEST_CASE("run: -n 0 records the prompt's positions (T = R = prompt_len)", "[cli][trace]") {
  // docs/trace-format.md: with --max-new 0 every prompt position goes through the forward pass
  // and is recorded, and no token is chosen. The rows must be those a run that goes on to
  // generate records for the same prompt (the prefill is the same pass).
  ds::test::TempDir dir;
  const auto t0 = dir.path() / "n0.h5", t3 = dir.path() / "n3.h5";
  for (const auto& [t, n] : {std::pair{t0, "0"}, std::pair{t3, "3"}}) {
    auto r =
        run_cli("run --prompt-ids 1,400,401,402 -q -n " + std::string(n) + " -o " + t.string());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  auto a = ds::trace::TraceReader::open(t0), b = ds::trace::TraceReader::open(t3);
  CHECK(a.complete());
  const auto s = a.sequence(0);
  CHECK(s.prompt_len == 4);
  CHECK(s.gen_len == 0);
  CHECK(s.tokens.size() == 4);
  CHECK(s.rows == 4);
  for (const auto& site : s.sites) CHECK(site.shape[0] == 4);
  for (const auto& site : s.sites) {
    INFO(site.name);
    CHECK(a.hidden(0, site.name, 0, 4) == b.hidden(0, site.name, 0, 4));
  }
  CHECK(a.topk(0, 0, 4).ids == b.topk(0, 0, 4).ids);
  CHECK(a.lse(0, 0, 4) == b.lse(0, 0, 4));
  auto show = run_cli("show " + t0.string());
  CHECK(show.out.find("0 positions recorded") == std::string::npos);
}

TEST_CASE("run: SIGINT leaves a readable, consistent trace with complete=0",
          "[cli][trace][interrupt]") {
  ds::test::TempDir dir;
  const auto prompts = dir.path() / "prompts.txt";
  write_prompts(prompts, 400);
  const auto t = dir.path() / "int.h5";
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string out = t.string(), p = prompts.string();
    int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl(ds::test::exe().c_str(), "driftscope", "run", "--prompts", p.c_str(), "-n", "400",
          "--probes", "all", "-o", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until some steps are on disk, then interrupt. The writer creates the groups of the
  // first 256 prompts before the first step: count the growth after that.
  for (int i = 0; i < 100 && !fs::exists(t); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));  // creation of those groups
  const uintmax_t created = fs::exists(t) ? fs::file_size(t) : 0;
  for (int i = 0; i < 100 && (!fs::exists(t) || fs::file_size(t) < created + 200000); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  auto r = ds::trace::TraceReader::open(t);
  CHECK_FALSE(r.complete());
  CHECK(r.stop_reason() == "interrupted");
  const auto seqs = r.sequence_indices();
  REQUIRE(!seqs.empty());
  CHECK(seqs.size() < 400);
  // The stop lands inside a group, whose sequences end "interrupted", or between two groups (the
  // run checks before it begins the next): then the last sequence begun ran to its end and no
  // later one was begun (a fresh-clone CI run met this once, on a loaded 2-core machine).
  const std::string last = r.sequence(seqs.back()).stop_reason;
  INFO("last sequence " << seqs.back() << " stopped: " << last);
  CHECK((last == "interrupted" || last == "max_new" || last == "eos" || last == "context"));
  check_consistent(r);
  auto s = run_cli("show " + t.string());
  CHECK(s.exit_code == 0);
  CHECK(s.out.find("INCOMPLETE") != std::string::npos);
}

TEST_CASE("run: a write failure leaves every step written before it", "[cli][trace][interrupt]") {
  ds::test::TempDir dir;
  const auto t2 = dir.path() / "fail2.h5";
  const std::string cmd = "DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS=7 '" + ds::test::exe() +
                          "' run -n 50 -o " + t2.string() + " >/dev/null 2>" +
                          (dir.path() / "err.txt").string();
  const int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 2);
  std::ifstream err(dir.path() / "err.txt");
  std::string msg((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  CHECK(msg.find("No space left on device") != std::string::npos);
  auto reader = ds::trace::TraceReader::open(t2);
  CHECK_FALSE(reader.complete());
  auto s = reader.sequence(0);
  CHECK(s.rows == 1 + 6);  // the prefill (BOS) and 6 decode steps were written before step 8 failed
  check_consistent(reader);
}

TEST_CASE("run: a trace writer that makes no progress gives up after the stall limit",
          "[cli][trace][interrupt]") {
  // A writer stuck inside HDF5 (seen on a file another run rewrote: H5C_protect retrying for
  // ever) held the run until SIGKILL, Ctrl-C included. The hook makes the writer thread stop
  // returning after 3 steps; with a 1 s limit the run must end by itself, exit 2, saying why.
  ds::test::TempDir dir;
  const auto t = dir.path() / "stall.h5";
  const auto start = std::chrono::steady_clock::now();
  const std::string cmd =
      "DRIFTSCOPE_TRACE_STALL_AFTER_STEPS=3 DRIFTSCOPE_WRITE_STALL_SECONDS=1 "
      "timeout -s KILL 120 '" +
      ds::test::exe() + "' run -n 400 -o " + t.string() + " >/dev/null 2>" +
      (dir.path() / "err.txt").string();
  const int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
  std::ifstream err(dir.path() / "err.txt");
  std::string msg((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  CHECK(msg.find("writing trace '" + t.string() +
                 "' failed: the writer made no progress for 1 s") != std::string::npos);
}

TEST_CASE("show prints the continuation as generate does, leading space included", "[cli][trace]") {
  // On the third-party stories260K, whose continuation llama2.c's run.c has printed.
  DS_REQUIRE_SHARED_MODELS();
  const std::string m = " -m " + ds::test::stories_bin();
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5";
  REQUIRE(run_cli("run -p 'The cat' -n 20 -q -o " + t.string() + m).exit_code == 0);
  auto s = run_cli("show " + t.string());
  REQUIRE(s.exit_code == 0);
  auto field = [&](const std::string& label) {
    const size_t at = s.out.find("  " + label + "  ");
    REQUIRE(at != std::string::npos);
    const size_t begin = s.out.find('"', at), end = s.out.find('\n', at);
    return nlohmann::json::parse(s.out.substr(begin, end - begin)).get<std::string>();
  };
  const std::string prompt = field("prompt"), continuation = field("continuation");
  CHECK(prompt == "The cat");
  // llama2.c's run.c prints "The cat and a boy were playing in the park." for this prompt.
  CHECK(continuation.starts_with(" and a boy"));
  auto g = run_cli("generate -p 'The cat' -n 20 -q" + m);
  CHECK(prompt + continuation + "\n" == g.out);
}

TEST_CASE("run: --trace-topk sets the logits kept, the old --topk is refused", "[cli][trace]") {
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5";
  REQUIRE(run_cli("run -n 4 -q --trace-topk 5 -o " + t.string()).exit_code == 0);
  auto r = ds::trace::TraceReader::open(t);
  CHECK(r.sequence(0).topk == 5);
  CHECK(nlohmann::json::parse(r.config_json())["trace"]["topk"] == 5);
  const auto t2 = dir.path() / "t2.h5";
  auto old = run_cli("run -n 4 --topk 5 -o " + t2.string());
  ds::test::check_input_error(old, "--topk is now called --trace-topk");
  CHECK(old.err.find("--top-k N samples") != std::string::npos);
  CHECK_FALSE(fs::exists(t2));
  // --top-k stays the sampling option of every run command.
  CHECK(run_cli("run -n 4 -q --top-k 3 --temperature 1 -o " + t2.string()).exit_code == 0);
}
