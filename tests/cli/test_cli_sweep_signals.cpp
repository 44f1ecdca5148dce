// One sweep at a time per folder, and a sweep stopped by a signal: a second `sweep -o DIR` while
// one runs is refused (naming its pid) instead of running the same configurations into the same
// files; SIGTERM to a sweep is forwarded once to its runs, which finish their traces, the state is
// saved (sweep.json exists from before the first run), exit 130, and `sweep -o DIR` resumes.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace fs = std::filesystem;
using ds::test::run_cli;

namespace {

// Waits up to `seconds` for `ready`; false when it never held.
template <typename F>
bool wait_for(F ready, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ready();
}

std::string slurp_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("sweep: a second sweep of one folder is refused while the first holds its lock",
          "[cli][sweep][bad-input]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", dir = tmp.path() / "d";
  ds::test::write_prompts(prompts);
  fs::create_directories(dir);
  // the lock as a running sweep holds it (another open file description, pid written)
  const int fd = ::open((dir / ".sweep.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  REQUIRE(::write(fd, "4242 sweep\n", 11) == 11);
  ds::test::check_input_error(run_cli("sweep --grid 'dtype=fp32,bf16' -n 2 --prompts " +
                                      prompts.string() + " -o " + dir.string()),
                              "a sweep is running in '" + dir.string() + "' (pid 4242)");
  CHECK(!fs::exists(dir / "sweep.json"));
  CHECK(!fs::exists(dir / "configs"));
  ::close(fd);  // the first sweep ended: the folder is free
  CHECK(run_cli("sweep -q --grid 'dtype=fp32,bf16' -n 2 --prompts " + prompts.string() + " -o " +
                dir.string())
            .exit_code == 0);
}

TEST_CASE("sweep: SIGTERM stops its runs and saves the state (exit 130) and the sweep resumes",
          "[cli][sweep]") {
  ds::test::TempDir tmp;
  const fs::path prompts = tmp.path() / "p.txt", dir = tmp.path() / "d";
  ds::test::write_prompts(prompts, 6);
  const std::string sweep = "'" + ds::test::exe() +
                            "' sweep --grid 'dtype=fp32,bf16,fp16' -n 300 " +
                            "--threads 1 --prompts " + prompts.string() + " -o " + dir.string();
  const fs::path rc = tmp.path() / "rc", err = tmp.path() / "err", pid = tmp.path() / "pid";
  const std::string bg = "(" + sweep + " 2>" + err.string() + " >/dev/null; echo $? >" +
                         rc.string() + ") </dev/null & echo $! >" + pid.string();
  REQUIRE(std::system(bg.c_str()) == 0);
  // sweep.json is written before the first run starts; then a run is under way
  REQUIRE(wait_for([&] { return fs::exists(dir / "sweep.json"); }, 60));
  REQUIRE(wait_for([&] { return fs::exists(dir / "logs" / "dtype-fp32.log"); }, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // SIGTERM to the sweep itself (the subshell's child): pkill by its unique command line
  REQUIRE(std::system(("pkill -TERM -f -- '-o " + dir.string() + "$'").c_str()) == 0);
  REQUIRE(wait_for([&] { return !slurp_file(rc).empty(); }, 120));
  CHECK(std::stoi(slurp_file(rc)) == 130);
  const std::string said = slurp_file(err);
  INFO(said);
  CHECK(said.find("interrupted; resume with driftscope sweep -o " + dir.string()) !=
        std::string::npos);
  // no run outlives the sweep ("[/]": the pattern must not match the shell that runs pgrep)
  CHECK(std::system(("pgrep -f -- '" + dir.string() + "[/]dtype-' >/dev/null").c_str()) != 0);
  const std::string state = slurp_file(dir / "sweep.json");
  CHECK(state.find("\"status\": \"missing\"") != std::string::npos);
  // resumed: what was missing runs, the rest is kept
  const auto r = run_cli("sweep -q -o " + dir.string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(slurp_file(dir / "sweep.json").find("\"status\": \"missing\"") == std::string::npos);
}
