// Damaged and hostile traces (docs/trace-format.md, "Untrusted traces"): whatever a file holds,
// `show` and `diff` end within the stall limit with exit 0 (what they read, with what they could
// not read named) or exit 2 ("driftscope: ..." and a hint), never with a signal or a source path.
// The files: the fuzzer's HDF5-internal hangs and crashes (tests/fuzz/known_hangs), a seeded flip
// of one bit in every byte of a small trace, and the trace cut at every 1% of its length.
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/cli/cli.h"
#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "trace/read_supervisor.h"
#include "trace/reader.h"

namespace fs = std::filesystem;
using ds::test::has;
using ds::test::run_cli;

namespace {

struct Result {
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

// One of this process's descriptors (stdout, stderr) sent to a file while it lives.
class ToFile {
 public:
  ToFile(int fd, const fs::path& file) : fd_(fd), saved_(dup(fd)) {
    std::fflush(nullptr);
    const int f = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    dup2(f, fd_);
    close(f);
  }
  ~ToFile() {
    std::fflush(nullptr);
    dup2(saved_, fd_);
    close(saved_);
  }
  ToFile(const ToFile&) = delete;
  ToFile& operator=(const ToFile&) = delete;

 private:
  int fd_, saved_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// driftscope's own entry, in this process (the per-process start of the executable would cost
// more than the reads): stdout and stderr go to files for the call. The watched child that
// `show` and `diff` read in (trace/read_supervisor.h) is forked from here.
Result cli(const std::vector<std::string>& args, const fs::path& dir) {
  std::vector<std::string> words = {"driftscope"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const fs::path out = dir / "cli.out", err = dir / "cli.err";
  Result r;
  {
    const ToFile to_out(STDOUT_FILENO, out), to_err(STDERR_FILENO, err);
    const auto start = std::chrono::steady_clock::now();
    r.code = ds::cli_main(static_cast<int>(words.size()), argv.data());
    r.seconds = seconds_since(start);
  }
  r.out = ds::test::slurp(out);
  r.err = ds::test::slurp(err);
  return r;
}

std::vector<char> bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::vector<char>& b, size_t n) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(b.data(), static_cast<std::streamsize>(n));
}

// The contract for every damaged file: exit 0, or exit 2 with "driftscope: " and a hint; no
// signal (a signal shows as 128 + n), no source path or raw library message.
void check_contract(const Result& r, const std::string& what) {
  INFO(what << ": exit " << r.code << ", stderr: " << r.err);
  CHECK((r.code == 0 || r.code == 2));
  // driftscope's message is the last lines: before it, glibc (or, in a sanitizer build,
  // AddressSanitizer, with its stack) may report what HDF5 did to the heap in the child
  const auto at = r.err.rfind("driftscope: ");
  const std::string message = at == std::string::npos ? r.err : r.err.substr(at);
  if (r.code == 2) {
    CHECK((at == 0 || (at != std::string::npos && r.err[at - 1] == '\n')));
    CHECK(has(message, "\nhint: "));
  }
  CHECK(!has(message, ".cpp:"));
  CHECK(!has(message, "internal error"));
  CHECK(r.seconds < 10);
}

// A small real trace: two prompts, a few tokens, logits only.
fs::path small_trace(const ds::test::TempDir& dir, const std::string& extra = "--probes none") {
  const fs::path p = dir.path() / "a.h5";
  const auto prompts = dir.path() / "p.txt";
  std::ofstream(prompts) << "Once upon a time\nTom and Sue\n";
  const auto r =
      run_cli("run --prompts " + prompts.string() + " -n 4 -q " + extra + " -o " + p.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return p;
}

// The stall limit for this process's watched reads (restored on scope exit).
struct StallLimit {
  explicit StallLimit(const char* seconds) { setenv("DRIFTSCOPE_READ_STALL_SECONDS", seconds, 1); }
  ~StallLimit() { unsetenv("DRIFTSCOPE_READ_STALL_SECONDS"); }
};

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

TEST_CASE("untrusted traces: every fuzzer find that hangs or crashes HDF5 ends with exit 0 or 2",
          "[cli][untrusted]") {
  ds::test::TempDir dir;
  const StallLimit limit("3");
  const fs::path good = small_trace(dir);
  int files = 0;
  const fs::path known = ds::test::source_dir() + "/tests/fuzz/known_hangs";
  for (const auto& e : fs::directory_iterator(known)) {
    if (e.path().extension() == ".md") continue;
    ++files;
    const fs::path t = dir.path() / (e.path().stem().string() + ".h5");
    fs::copy_file(e.path(), t, fs::copy_options::overwrite_existing);
    const Result s = cli({"show", t.string()}, dir.path());
    check_contract(s, "show " + e.path().filename().string());
    const Result d = cli({"diff", "-q", good.string(), t.string()}, dir.path());
    check_contract(d, "diff " + e.path().filename().string());
  }
  CHECK(files >= 3);
}

TEST_CASE("untrusted traces: the hanging vlen attribute is stopped and named", "[cli][untrusted]") {
  ds::test::TempDir dir;
  const StallLimit limit("2");
  const fs::path t = dir.path() / "hang.h5";
  fs::copy_file(
      ds::test::source_dir() + "/tests/fuzz/known_hangs/trace_reader-hdf5-vlen-attribute-hang.h5",
      t);
  const Result s = cli({"show", t.string()}, dir.path());
  INFO(s.err);
  CHECK(s.code == 2);
  CHECK(s.err.starts_with("driftscope: trace '" + t.string() + "' (opening it) is damaged"));
  CHECK(s.seconds < 6);
}

TEST_CASE("untrusted traces: a flipped superblock bit is refused at once, not retried for minutes",
          "[cli][untrusted]") {
  ds::test::TempDir dir;
  const fs::path a = small_trace(dir);
  const auto original = bytes_of(a);
  const fs::path b = dir.path() / "b.h5";
  for (int byte = 8; byte <= 16; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      auto flipped = original;
      flipped[byte] = static_cast<char>(flipped[byte] ^ (1 << bit));
      write_bytes(b, flipped, flipped.size());
      const Result s = cli({"show", b.string()}, dir.path());
      check_contract(s, "byte " + std::to_string(byte) + " bit " + std::to_string(bit));
      CHECK(s.seconds < 2);
    }
  }
}

TEST_CASE("untrusted traces: a damaged group header names the trace and the group, no source path",
          "[cli][untrusted]") {
  ds::test::TempDir dir;
  const fs::path a = small_trace(dir);
  // The object header of /seq, found by h5py (independently of driftscope's reader).
  const std::string cmd = "/usr/bin/python3 -c \"import h5py; f = h5py.File('" + a.string() +
                          "', 'r'); print(h5py.h5o.get_info(f['seq'].id).addr)\"";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char line[64] = {};
  REQUIRE(std::fgets(line, sizeof line, p) != nullptr);
  pclose(p);
  const size_t at = std::stoull(line);
  auto bytes = bytes_of(a);
  REQUIRE(at + 8 < bytes.size());
  bytes[at + 6] = static_cast<char>(bytes[at + 6] ^ 0x80);  // inside the checksummed header
  const fs::path b = dir.path() / "b.h5";
  write_bytes(b, bytes, bytes.size());
  const Result s = cli({"show", b.string()}, dir.path());
  INFO(s.err);
  CHECK(s.code == 2);
  CHECK(s.err.starts_with("driftscope: trace '" + b.string() +
                          "' is damaged: cannot open group seq"));
  CHECK(has(s.err, "\nhint: "));
  CHECK(!has(s.err, ".cpp"));
}

TEST_CASE("untrusted traces: a trace cut at every 1% of its length", "[cli][untrusted]") {
  ds::test::TempDir dir;
  const StallLimit limit("3");
  const fs::path a = small_trace(dir, "--probes default");
  const auto original = bytes_of(a);
  const fs::path b = dir.path() / "b.h5";
  int opened = 0, salvaged = 0;
  for (int percent = 1; percent <= 100; ++percent) {
    // the last step cuts one byte: a copy that lost its end
    const size_t n = percent == 100 ? original.size() - 1 : original.size() * percent / 100;
    write_bytes(b, original, n);
    const Result s = cli({"show", b.string()}, dir.path());
    check_contract(s, "cut at " + std::to_string(n) + " of " + std::to_string(original.size()));
    const Result d = cli({"diff", "-q", "--json", "-", a.string(), b.string()}, dir.path());
    check_contract(d, "diff, cut at " + std::to_string(n));
    if (d.code == 0) {  // what was read of the cut copy is what was written, bit for bit
      const auto j = nlohmann::json::parse(d.out);
      INFO("cut at " << n << ": " << j["summary"].dump());
      CHECK(j["summary"]["diverged"] == 0);
      CHECK(j["summary"]["drifted"] == 0);
    }
    if (s.code == 0) {
      ++opened;
      CHECK(has(s.out, "CUT SHORT: " + std::to_string(n) + " of "));
      salvaged += has(s.out, "\nseq 0    prompt");
    }
  }
  WARN("trace of " << original.size() << " bytes cut at 1%..99% and one byte short: " << opened
                   << " of 100 cuts open, " << salvaged << " with sequence 0 read whole");
  // One byte short: the trace opens, says so, and names what it cannot read.
  write_bytes(b, original, original.size() - 1);
  const Result s = cli({"show", b.string()}, dir.path());
  INFO(s.out << s.err);
  CHECK(s.code == 0);
  CHECK(has(s.out, "CUT SHORT: " + std::to_string(original.size() - 1) + " of " +
                       std::to_string(original.size()) + " bytes on disk"));
}

namespace {

// What a reader got from a trace: a digest of everything `show` and `diff` read (root and
// sequence metadata, tokens, top-K, lse, every hidden row, full logits), split by kind.
struct Digest {
  uint64_t meta = 1469598103934665603ull, tokens = meta, values = meta;
  bool named = false;  // a sequence was named damaged (show and diff go on without it)
};

void mix(uint64_t& h, const void* data, size_t n) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
}
void mix(uint64_t& h, const std::string& s) {
  mix(h, s.data(), s.size());
}

Digest read_everything(const fs::path& path) {
  Digest d;
  const auto r = ds::trace::TraceReader::open(path);
  for (const std::string* s : {&r.config_json(), &r.model_json(), &r.env_json(), &r.command_line(),
                               &r.stop_reason(), &r.producer()}) {
    mix(d.meta, *s);
  }
  for (int i : r.sequence_indices()) {
    ds::trace::SequenceInfo q;
    try {
      q = r.sequence(i);
      mix(d.meta, q.stop_reason);
      mix(d.meta, &q.rows, sizeof q.rows);
      mix(d.tokens, q.tokens.data(), q.tokens.size() * sizeof(int32_t));
      std::vector<float> buffer;
      for (const auto& site : q.sites) {
        const auto rows = r.hidden(i, site.name, 0, q.rows, buffer);
        mix(d.values, rows.data(), rows.size_bytes());
      }
      if (q.topk > 0) {
        const auto t = r.topk(i, 0, q.rows);
        mix(d.values, t.ids.data(), t.ids.size() * sizeof(int32_t));
        mix(d.values, t.logits.data(), t.logits.size() * sizeof(float));
        const auto l = r.lse(i, 0, q.rows);
        mix(d.values, l.data(), l.size() * sizeof(float));
      }
    } catch (const ds::Error&) {
      d.named = true;
    }
  }
  return d;
}

enum Read : int {
  kSame = 0,     // read as written
  kRefused = 2,  // the trace refused as a whole, with a message
  kNamed = 20,   // read, with a sequence named damaged
  kTokens = 21,  // read without notice, tokens changed: a diff would report a flip
  kValues = 22,  // read without notice, top-K, lse or hidden values changed: reported as drift
  kMeta = 23,    // read without notice, only metadata or text changed
};

}  // namespace

TEST_CASE("untrusted traces: one flipped bit in every byte of a small trace (seeded)",
          "[cli][untrusted]") {
  ds::test::TempDir dir;
  const StallLimit limit("3");
  const fs::path a = small_trace(dir);
  const auto original = bytes_of(a);
  const Digest want = read_everything(a);
  REQUIRE(!want.named);
  const fs::path b = dir.path() / "b.h5";
  // Under AddressSanitizer (the CI's sanitizer build, several times slower) every 7th byte.
#if defined(__SANITIZE_ADDRESS__)
  const size_t stride = 7;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  const size_t stride = 7;
#else
  const size_t stride = 1;
#endif
#else
  const size_t stride = 1;
#endif
  std::map<int, int> outcomes;
  auto flipped = original;
  std::vector<std::string> silent;  // the first flips that changed tokens or values unnoticed
  int stalled = 0, crashed = 0;
  double slowest = 0;
  const fs::path err = dir.path() / "err";
  for (size_t i = 0; i < original.size(); i += stride) {
    const int bit = static_cast<int>(splitmix(20261125 + i) % 8);
    flipped[i] = static_cast<char>(original[i] ^ (1 << bit));
    write_bytes(b, flipped, flipped.size());
    flipped[i] = original[i];
    // The product's watched read (trace/read_supervisor.h), its messages to a file.
    int code = -1;
    double seconds = 0;
    {
      const ToFile to_err(STDERR_FILENO, err);
      const auto start = std::chrono::steady_clock::now();
      code = ds::trace::run_with_watched_reads([&] {
        // a crash ends the child as it ends driftscope, not in Catch's handler for this process
        for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) signal(sig, SIG_DFL);
        try {
          const Digest got = read_everything(b);
          if (got.named) return int{kNamed};
          if (got.tokens != want.tokens) return int{kTokens};
          if (got.values != want.values) return int{kValues};
          return int{got.meta != want.meta ? kMeta : kSame};
        } catch (const ds::Error& e) {
          std::fprintf(stderr, "driftscope: %s\nhint: %s\n", e.what(), e.hint().c_str());
          return int{kRefused};
        }
      });
      seconds = seconds_since(start);
    }
    const std::string message = ds::test::slurp(err);
    INFO("byte " << i << " bit " << bit << ": " << code << ", " << message);
    CHECK(std::set<int>{0, 2, 20, 21, 22, 23}.count(code) == 1);  // never 3 (internal error)
    if (code == kRefused) {
      // the message is the last lines (glibc, or AddressSanitizer with its stack, may report
      // first what HDF5 did to the heap)
      const auto at = message.rfind("driftscope: ");
      REQUIRE(at != std::string::npos);
      CHECK(message.find("\nhint: ", at) != std::string::npos);
      CHECK(!has(message.substr(at), ".cpp:"));
    }
    stalled += has(message, "stayed inside HDF5");
    crashed += has(message, "crashed HDF5");
    slowest = std::max(slowest, seconds);
    CHECK(seconds < 10);
    ++outcomes[code];
    if (code == kTokens || code == kValues) {
      if (silent.size() < 8) silent.push_back(fmt::format("{}:{}", i, bit));
    }
  }
  WARN("one bit flipped in every "
       << (stride == 1 ? "" : std::to_string(stride) + "th ") << "byte of a " << original.size()
       << "-byte trace: " << outcomes[kRefused] << " refused (exit 2; " << crashed
       << " crashed HDF5, " << stalled << " stopped at the stall limit), " << outcomes[kNamed]
       << " read with a sequence named "
       << "damaged, " << outcomes[kSame] << " read as written; read without notice: "
       << outcomes[kTokens] << " with other tokens (a diff would report a flip), "
       << outcomes[kValues] << " with other top-K, lse or hidden values (drift), "
       << outcomes[kMeta] << " with other metadata; slowest " << slowest
       << " s; first silent token or value changes (byte:bit): "
       << fmt::format("{}", fmt::join(silent, " ")));
}
