// Diff throughput and memory: writes synthetic trace pairs of two sizes (random hidden states and
// full logits, B = A + small noise, same tokens so every row is compared), then times
// `cat A B > /dev/null` (page-cached) against the diff of the pair, run in a fresh child process
// whose peak RSS (getrusage ru_maxrss) is reported. The ratio is diff time / cat time.
//
//   bench_diff_throughput [--mb 200,400] [--dir /tmp/ds-bench-diff] [--reps 3] [--keep]
//   bench_diff_throughput --diff-only A.h5 B.h5     (child: one diff, rendered)
//   bench_diff_throughput --write-pair A.h5 B.h5 ROWS (child: writes the pair)
// Every heavy step runs in a child forked from this small process: Linux counts the RSS a child
// inherited at fork in its ru_maxrss, so a big parent would inflate the measurement.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/child_process.h"
#include "diff/diff.h"
#include "trace/writer.h"
#include "viewer/json.h"
#include "viewer/terminal.h"

namespace fs = std::filesystem;

namespace {

constexpr int kWidth = 1024;  // hidden width
constexpr int kLayers = 8;
constexpr int kVocab = 8192;  // full logits per row
constexpr int kSequences = 2;
constexpr int kPrompt = 16;

// xorshift64*: fast uniform floats in [-1, 1).
struct Rng {
  uint64_t s;
  float next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const uint64_t x = s * 0x2545F4914F6CDD1DULL;
    return static_cast<float>(static_cast<double>(x >> 40) / (1ULL << 23) - 1.0);
  }
};

std::vector<std::string> sites() {
  std::vector<std::string> s = {"embed"};
  for (int l = 0; l < kLayers; ++l) {
    for (const char* k : {"attn_out", "mlp_out", "out"}) s.push_back(fmt::format("L{}/{}", l, k));
  }
  s.push_back("final_norm");
  return s;
}

// Raw bytes one row holds in one trace (before compression).
double row_bytes() {
  return sites().size() * kWidth * 4.0 + kVocab * 4.0 + 20 * 8.0 + 4.0;
}

// Writes A and B with `rows` positions per sequence; B = A·(1 + 1e-6·noise), logits + 1e-4·noise.
void write_pair(const fs::path& a, const fs::path& b, int rows) {
  const auto names = sites();
  auto make = [&](const fs::path& p, bool is_b) {
    ds::trace::WriterOptions w;
    w.path = p;
    w.force = true;
    w.full_logits = true;
    w.queue_steps = 2;  // steps are large here: keep the writer's queue small
    ds::trace::RunInfo info;
    info.tool_version = "bench";
    info.model_json =
        R"({"config":{"n_layers":8,"vocab_size":8192},"files":[{"name":"synthetic","bytes":0,"sha256":"0"}],"tokenizer":null})";
    info.config_json = is_b ? R"({"dtype":"bf16"})" : R"({"dtype":"fp32"})";
    return std::make_unique<ds::trace::TraceWriter>(w, info);
  };
  auto wa = make(a, false), wb = make(b, true);
  Rng rng{0x9E3779B97F4A7C15ULL}, noise{12345};
  for (int seq = 0; seq < kSequences; ++seq) {
    std::vector<int32_t> prompt(kPrompt);
    for (int i = 0; i < kPrompt; ++i) prompt[i] = 1 + (seq * 31 + i * 7) % (kVocab - 1);
    wa->begin_sequence(seq, prompt);
    wb->begin_sequence(seq, prompt);
    for (int r = 0; r < rows;) {
      const int n = r == 0 ? kPrompt : std::min(64, rows - r);  // prefill, then 64 rows a step
      ds::trace::StepRecord sa, sb;
      sa.seq = sb.seq = seq;
      sa.n_rows = sb.n_rows = n;
      for (const auto& name : names) {
        ds::trace::HiddenRows ha{name, kWidth, std::vector<float>(static_cast<size_t>(n) * kWidth)};
        ds::trace::HiddenRows hb = ha;
        for (size_t i = 0; i < ha.values.size(); ++i) {
          ha.values[i] = rng.next();
          hb.values[i] = ha.values[i] * (1.0f + 1e-6f * noise.next());
        }
        sa.hidden.push_back(std::move(ha));
        sb.hidden.push_back(std::move(hb));
      }
      sa.vocab = sb.vocab = kVocab;
      sa.logits.resize(static_cast<size_t>(n) * kVocab);
      sb.logits.resize(sa.logits.size());
      for (size_t i = 0; i < sa.logits.size(); ++i) {
        sa.logits[i] = 5.0 * rng.next();
        sb.logits[i] = sa.logits[i] + 1e-4 * noise.next();
      }
      for (int k = 0; k < (r == 0 ? 1 : n); ++k) {  // the prefill chooses one token, a step n
        const int32_t t = 3 + (r + k) % 500;
        sa.new_tokens.push_back(t);
        sb.new_tokens.push_back(t);
      }
      wa->append(std::move(sa));
      wb->append(std::move(sb));
      r += n;
    }
    wa->end_sequence(seq, "max_new");
    wb->end_sequence(seq, "max_new");
  }
  wa->finish(true, "finished");
  wb->finish(true, "finished");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using ds::bench::ChildRun;
using ds::bench::run_child;

int diff_only(const char* a, const char* b) {
  const auto ta = ds::trace::TraceReader::open(a), tb = ds::trace::TraceReader::open(b);
  const auto report = ds::diff::diff_traces(ta, tb);
  const std::string text = ds::viewer::render_terminal(report);
  const std::string json = ds::viewer::render_json(report);
  if (report.summary.sequences != kSequences || text.empty() || json.empty()) return 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--diff-only") return diff_only(argv[2], argv[3]);
  if (argc == 5 && std::string(argv[1]) == "--write-pair") {
    write_pair(argv[2], argv[3], std::atoi(argv[4]));
    return 0;
  }
  std::vector<int> sizes = {200, 400};
  fs::path dir = fs::temp_directory_path() / "ds-bench-diff";
  int reps = 3;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mb" && i + 1 < argc) {
      sizes.clear();
      std::string list = argv[++i];
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        sizes.push_back(std::atoi(list.substr(at, comma - at).c_str()));
        at = comma + 1;
      }
    } else if (arg == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--keep") {
      keep = true;
    } else {
      fmt::print(stderr, "usage: {} [--mb 200,400] [--dir DIR] [--reps N] [--keep]\n", argv[0]);
      return 2;
    }
  }
  fs::create_directories(dir);
  const std::string self = fs::canonical("/proc/self/exe").string();
  fmt::print("synthetic traces: {} sequences, {} hidden sites of width {}, full logits V={}, f32\n",
             kSequences, sites().size(), kWidth, kVocab);
  fmt::print("{:>10} {:>8} {:>10} {:>12} {:>10} {:>12} {:>8} {:>14}\n", "trace MB", "rows", "cat s",
             "cat MB/s", "diff s", "diff MB/s", "ratio", "diff peak RSS");
  for (int mb : sizes) {
    // Random float32 compresses to about 84% with shuffle + deflate: aim a little above the size.
    const int rows =
        std::max(kPrompt + 1, static_cast<int>(mb * 1e6 / 0.80 / row_bytes() / kSequences));
    const fs::path a = dir / fmt::format("a_{}.h5", mb), b = dir / fmt::format("b_{}.h5", mb);
    const auto tw = std::chrono::steady_clock::now();
    // Written by a child, so that this process stays small: a child's ru_maxrss includes the
    // size of the process it was forked from.
    run_child({self, "--write-pair", a.string(), b.string(), std::to_string(rows)});
    const double write_s = seconds_since(tw);
    const double bytes = static_cast<double>(fs::file_size(a) + fs::file_size(b));
    const std::string cat = fmt::format("cat '{}' '{}' > /dev/null", a.string(), b.string());
    if (std::system(cat.c_str()) != 0) return 2;  // warm the page cache
    std::vector<double> t_cat, t_diff;
    long rss = 0;
    for (int r = 0; r < reps; ++r) {
      t_cat.push_back(run_child({"/bin/sh", "-c", cat}).wall);
      const ChildRun d = run_child({self, "--diff-only", a.string(), b.string()});
      t_diff.push_back(d.wall);
      rss = std::max(rss, d.max_rss_kb);
    }
    const double c = median(t_cat), d = median(t_diff);
    fmt::print("{:>10.1f} {:>8} {:>10.3f} {:>12.0f} {:>10.3f} {:>12.1f} {:>7.1f}x {:>11.1f} MB\n",
               fs::file_size(a) / 1e6, rows * kSequences, c, bytes / 1e6 / c, d, bytes / 1e6 / d,
               d / c, rss / 1024.0);
    fmt::print(stderr, "  (wrote the pair in {:.1f} s; sizes A {:.1f} MB, B {:.1f} MB)\n", write_s,
               fs::file_size(a) / 1e6, fs::file_size(b) / 1e6);
    if (!keep) {
      fs::remove(a);
      fs::remove(b);
    }
  }
  fmt::print(
      "ratio = diff time / cat time (both files, page-cached, medians of {} runs); peak RSS "
      "of the diff process (ru_maxrss)\n",
      reps);
  return 0;
}
