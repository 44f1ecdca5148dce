// Bad trace inputs fed to the real executable: a FIFO, a link to one or a directory given where a
// trace is read is refused before anything opens it (an open would wait for a writer for ever),
// and stats refuses one file named twice, which would count as two runs.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace fs = std::filesystem;
using ds::test::check_input_error;
using ds::test::has;
using ds::test::run_cli;
using ds::test::run_trace;

namespace {

// Watches a FIFO while commands run: a reader that opens it (and would block there until a
// writer came) is let go at once with end of file, and opened() says that it happened.
class FifoWatch {
 public:
  explicit FifoWatch(fs::path fifo) : fifo_(std::move(fifo)), thread_([this] { watch(); }) {}
  ~FifoWatch() {
    stop_ = true;
    thread_.join();
  }
  bool opened() const { return opened_; }

 private:
  void watch() {
    while (!stop_) {
      // without a reader at the other end this fails (ENXIO) and opens nothing
      const int fd = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) {
        opened_ = true;
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  fs::path fifo_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> opened_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("a FIFO or a directory given as a trace is refused before anything opens it",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const std::string a = run_trace(dir.path(), "a.h5");
  const std::string out = (dir.path() / "out.h5").string();
  const fs::path fifo = dir.path() / "f.h5", link = dir.path() / "l.h5";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_symlink(fifo, link);
  const fs::path folder = dir.path() / "d.h5";
  fs::create_directory(folder);
  const FifoWatch watch(fifo);
  for (const fs::path& p : {fifo, link, folder}) {
    const std::string t = p.string(), refused = "'" + t + "' is not a regular file";
    INFO(t);
    // show, diff and stats read in a watched child process: the message and code pass through
    check_input_error(run_cli("show " + t), refused);
    check_input_error(run_cli("diff " + t + " " + a), refused);
    check_input_error(run_cli("diff " + a + " " + t), refused);
    check_input_error(run_cli("run -n 3 -q --force-tokens " + t + " -o " + out), refused);
    check_input_error(run_cli("attribute " + t + " --dtype bf16"), refused);
    if (p != folder) check_input_error(run_cli("stats " + a + " " + t), refused);
  }
  // to stats, a directory is a sweep folder
  check_input_error(run_cli("stats " + a + " " + folder.string()), "holds no sweep.json");
  CHECK_FALSE(watch.opened());
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("stats refuses one trace given twice under any name", "[cli][bad-input]") {
  ds::test::TempDir dir;
  const std::string a = run_trace(dir.path(), "a.h5"),
                    b = run_trace(dir.path(), "b.h5", "--dtype bf16");
  const std::string twice = "' is given twice (the same file as '" + a + "')";
  check_input_error(run_cli("stats " + a + " " + a + " " + b), "'" + a + twice);
  const std::string dotted = (dir.path() / "." / "a.h5").string();
  check_input_error(run_cli("stats " + a + " " + dotted + " " + b), "'" + dotted + twice);
  const std::string hard = (dir.path() / "hard.h5").string();
  fs::create_hard_link(a, hard);
  check_input_error(run_cli("stats " + a + " " + hard + " " + b), "'" + hard + twice);
  // a trace that a sweep folder also gives
  const fs::path prompts = dir.path() / "p.jsonl", sweep = dir.path() / "sweep";
  std::ofstream(prompts) << "{\"ids\": [1, 400]}\n";
  REQUIRE(run_cli("sweep --grid 'dtype=fp32,bf16' -n 3 --prompts " + prompts.string() + " -o " +
                  sweep.string())
              .exit_code == 0);
  const std::string swept = (sweep / "dtype-bf16.h5").string();
  check_input_error(run_cli("stats " + sweep.string() + " " + swept), "is given twice");
  check_input_error(run_cli("stats " + sweep.string() + " " + sweep.string()), "is given twice");
  // each once: two runs; diff of a trace with itself stays a sanity check
  const auto once = run_cli("stats " + a + " " + b);
  INFO(once.err);
  CHECK(once.exit_code == 0);
  CHECK(has(once.out, "2 runs"));
  CHECK(run_cli("diff -q --fail-on flip " + a + " " + a).exit_code == 0);
}
