// Diff throughput and memory: writes synthetic trace pairs with the trace writer (random hidden
// states, B = A + small noise, same tokens so every row is compared), then times, side by side on
// the same page-cached files: `cat A B > /dev/null`, `driftscope diff`'s work (trace readers,
// diff_traces, terminal and JSON rendering) in a fresh child process whose peak RSS (getrusage
// ru_maxrss) is reported, and bench/diff_h5py.py (h5py reading every hidden dataset of both and
// computing a relative L2 per compared row). Ratios: diff / cat, h5py / diff. Beside them, the
// HDF5 floor: a child that only opens every dataset of both traces, looks up each of its chunks in
// the chunk index and closes it (no data read, no check) -- the metadata cost any reader of format
// v1's one-dataset-per-site layout pays through HDF5, whatever it does with the rows.
//
// Shapes: "bench" (2 sequences, 26 sites of width 1024, full logits V = 8192; --mb sets the trace
// size) and "110m" (a 110M-parameter model's shape: dim 768, 12 layers, all probes = 74 sites,
// top-20 logits of V = 32000, 8 prompts x 64 tokens).
//
//   bench_diff_throughput [--shape bench|110m] [--mb 200,400] [--dir DIR] [--reps 3] [--keep]
//   bench_diff_throughput --compression [--shape S] [--mb N] [--dir DIR] [--reps 3]
//       the pair rewritten by bench/trace_repack.py with each filter pipeline: size, write
//       seconds of the datasets, diff time against cat
//   bench_diff_throughput --writer-compression [--shape S] [--mb N] [--dir DIR] [--reps 3]
//       the pair written by the trace writer with --compression deflate1 and none (the default),
//       interleaved: size, write seconds, cat, diff
//   bench_diff_throughput --untrusted [--shape S] [--mb N] [--dir DIR] [--reps 7]
//       what reading traces from strangers costs (docs/trace-format.md, "Untrusted traces"): the
//       pair written without and with the Fletcher-32 checksums of tokens, top-K and lse, then,
//       interleaved, the diff of the plain pair as before (no checksum, in this process), of the
//       checksummed pair, and of the checksummed pair in a watched child as `driftscope diff`
//       reads (trace/read_supervisor.h); ratios to the first
//   bench_diff_throughput --diff-only A.h5 B.h5           (child: one diff, rendered)
//   bench_diff_throughput --diff-watched A.h5 B.h5        (child: the same in a watched child)
//   bench_diff_throughput --hdf5-floor A.h5 B.h5          (child: the HDF5 floor above)
//   bench_diff_throughput --write-pair A.h5 B.h5 ROWS SHAPE [DEFLATE_LEVEL [CHECKSUM]]
//                            (child: writes the pair; level 0 = none; CHECKSUM 0 = without)
// Every heavy step runs in a child forked from this small process: Linux counts the RSS a child
// inherited at fork in its ru_maxrss, so a big parent would inflate the measurement.
#include <fmt/format.h>
#include <hdf5.h>
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
#include "trace/read_supervisor.h"
#include "trace/writer.h"
#include "viewer/diff_json.h"
#include "viewer/diff_terminal.h"

namespace fs = std::filesystem;

namespace {

struct Shape {
  const char* name;
  int width, layers;
  bool all_probes;  // 6 sites per layer, else attn_out, mlp_out, out
  int vocab;
  bool full_logits;
  int sequences, prompt;
};
constexpr Shape kBench{"bench", 1024, 8, false, 8192, true, 2, 16};
constexpr Shape k110m{"110m", 768, 12, true, 32000, false, 8, 8};

const Shape& shape_named(const std::string& n) {
  return n == "110m" ? k110m : kBench;
}

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

std::vector<std::string> sites(const Shape& sh) {
  std::vector<std::string> s = {"embed"};
  static const char* three[] = {"attn_out", "mlp_out", "out"};
  static const char* six[] = {"attn_norm", "attn_out", "resid_mid", "mlp_norm", "mlp_out", "out"};
  for (int l = 0; l < sh.layers; ++l) {
    if (sh.all_probes) {
      for (const char* k : six) s.push_back(fmt::format("L{}/{}", l, k));
    } else {
      for (const char* k : three) s.push_back(fmt::format("L{}/{}", l, k));
    }
  }
  s.push_back("final_norm");
  return s;
}

// Raw bytes one row holds in one trace (before compression).
double row_bytes(const Shape& sh) {
  return sites(sh).size() * sh.width * 4.0 + (sh.full_logits ? sh.vocab * 4.0 : 0) + 20 * 8.0 + 4.0;
}

// Writes A and B with `rows` positions per sequence; B = A·(1 + 1e-6·noise), logits + 1e-4·noise.
void write_pair(const fs::path& a, const fs::path& b, int rows, const Shape& sh,
                int deflate_level = ds::trace::WriterOptions{}.deflate_level,
                bool checksum = ds::trace::WriterOptions{}.checksum) {
  const auto names = sites(sh);
  auto make = [&](const fs::path& p, bool is_b) {
    ds::trace::WriterOptions w;
    w.path = p;
    w.force = true;
    w.full_logits = sh.full_logits;
    w.deflate_level = deflate_level;
    w.checksum = checksum;
    w.queue_steps = 2;  // steps are large here: keep the writer's queue small
    ds::trace::RunInfo info;
    info.tool_version = "bench";
    info.model_json = fmt::format(
        R"({{"config":{{"n_layers":{},"vocab_size":{}}},"files":[{{"name":"synthetic","bytes":0,"sha256":"0"}}],"tokenizer":null}})",
        sh.layers, sh.vocab);
    info.config_json = is_b ? R"({"dtype":"bf16"})" : R"({"dtype":"fp32"})";
    return std::make_unique<ds::trace::TraceWriter>(w, info);
  };
  auto wa = make(a, false), wb = make(b, true);
  Rng rng{0x9E3779B97F4A7C15ULL}, noise{12345};
  for (int seq = 0; seq < sh.sequences; ++seq) {
    std::vector<int32_t> prompt(static_cast<size_t>(sh.prompt));
    for (int i = 0; i < sh.prompt; ++i) prompt[i] = 1 + (seq * 31 + i * 7) % (sh.vocab - 1);
    wa->begin_sequence(seq, prompt);
    wb->begin_sequence(seq, prompt);
    for (int r = 0; r < rows;) {
      // prefill, then 64 rows a step (bench) or one row a step, as decoding writes them (110m)
      const int n = r == 0 ? sh.prompt : std::min(sh.full_logits ? 64 : 1, rows - r);
      ds::trace::StepRecord sa, sb;
      sa.seq = sb.seq = seq;
      sa.n_rows = sb.n_rows = n;
      for (const auto& name : names) {
        ds::trace::HiddenRows ha{name, sh.width,
                                 std::vector<float>(static_cast<size_t>(n) * sh.width)};
        ds::trace::HiddenRows hb = ha;
        for (size_t i = 0; i < ha.values.size(); ++i) {
          ha.values[i] = rng.next();
          hb.values[i] = ha.values[i] * (1.0f + 1e-6f * noise.next());
        }
        sa.hidden.push_back(std::move(ha));
        sb.hidden.push_back(std::move(hb));
      }
      sa.vocab = sb.vocab = sh.vocab;
      sa.logits.resize(static_cast<size_t>(n) * sh.vocab);
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
  if (report.summary.sequences == 0 || text.empty() || json.empty()) return 1;
  return 0;
}

// The HDF5 floor: every dataset opened, its chunks looked up, closed.
herr_t floor_visit(hid_t loc, const char* name, const H5L_info_t*, void* count) {
  const hid_t d = H5Oopen(loc, name, H5P_DEFAULT);
  if (d < 0) return -1;
  if (H5Iget_type(d) != H5I_DATASET) return H5Oclose(d) < 0 ? -1 : 0;
  const hid_t dcpl = H5Dget_create_plist(d), space = H5Dget_space(d);
  hsize_t dims[2] = {0, 0}, chunk[2] = {0, 0};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  if (H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 2, chunk) > 0 && chunk[0] > 0) {
    for (hsize_t r = 0; r < dims[0]; r += chunk[0]) {
      hsize_t offset[2] = {r, 0}, size = 0;
      haddr_t addr = 0;
      unsigned mask = 0;
      H5Dget_chunk_info_by_coord(d, offset, &mask, &addr, &size);
    }
  }
  H5Sclose(space);
  H5Pclose(dcpl);
  H5Dclose(d);
  ++*static_cast<long*>(count);
  return 0;
}

int hdf5_floor(const char* a, const char* b) {
  long count = 0;
  for (const char* path : {a, b}) {
    const hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0 || H5Lvisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, floor_visit, &count) < 0) return 1;
    H5Fclose(f);
  }
  return count > 0 ? 0 : 1;
}

struct Timing {
  double cat = 0, diff = 0, h5py = 0, floor = 0;
  long rss_kb = 0;
};

// cat, diff and the h5py script on the same pair, interleaved, medians of `reps`.
Timing time_pair(const std::string& self, const fs::path& a, const fs::path& b, int reps,
                 bool with_h5py) {
  const std::string cat = fmt::format("cat '{}' '{}' > /dev/null", a.string(), b.string());
  if (std::system(cat.c_str()) != 0) std::exit(2);  // warm the page cache
  const std::string script = std::string(DRIFTSCOPE_SOURCE_DIR) + "/bench/diff_h5py.py";
  std::vector<double> t_cat, t_diff, t_py, t_floor;
  Timing t;
  std::fflush(stdout);
  for (int r = 0; r < reps; ++r) {
    t_cat.push_back(run_child({"/bin/sh", "-c", cat}).wall);
    const ChildRun d = run_child({self, "--diff-only", a.string(), b.string()});
    t_diff.push_back(d.wall);
    t.rss_kb = std::max(t.rss_kb, d.max_rss_kb);
    t_floor.push_back(run_child({self, "--hdf5-floor", a.string(), b.string()}).wall);
    if (with_h5py) {
      t_py.push_back(run_child({"/usr/bin/python3", script, a.string(), b.string()}, true).wall);
    }
  }
  t.cat = median(t_cat);
  t.diff = median(t_diff);
  t.floor = median(t_floor);
  t.h5py = with_h5py ? median(t_py) : 0;
  return t;
}

int rows_for(const Shape& sh, int mb) {
  if (&sh == &k110m) return 64 + sh.prompt - 1;  // 8 prompt tokens + 64 generated, as `run -n 64`
  // The writer's default stores the values as they are (random float32 would deflate to ~84%).
  return std::max(sh.prompt + 1, static_cast<int>(mb * 1e6 / row_bytes(sh) / sh.sequences));
}

int compression_study(const std::string& self, const fs::path& dir, int reps, const Shape& sh,
                      int mb) {
  const fs::path a = dir / "a_study.h5", b = dir / "b_study.h5";
  std::fflush(stdout);
  run_child(
      {self, "--write-pair", a.string(), b.string(), std::to_string(rows_for(sh, mb)), sh.name});
  const std::string repack = std::string(DRIFTSCOPE_SOURCE_DIR) + "/bench/trace_repack.py";
  fmt::print(
      "{}-shape pair rewritten with each pipeline (bench/trace_repack.py, h5py); write s = "
      "seconds writing A's datasets\n",
      sh.name);
  fmt::print("{:>18} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8}\n", "pipeline", "A MB", "write s",
             "cat s", "diff s", "h5py s", "diff/cat");
  for (const char* kind : {"none", "fletcher32", "deflate1", "shuffle-deflate1", "shuffle-deflate4",
                           "shuffle-deflate9"}) {
    const fs::path va = dir / fmt::format("a_{}.h5", kind), vb = dir / fmt::format("b_{}.h5", kind);
    const std::string out = (dir / "repack.out").string();
    const std::string cmd = fmt::format("/usr/bin/python3 '{}' '{}' '{}' {} > '{}'", repack,
                                        a.string(), va.string(), kind, out);
    if (std::system(cmd.c_str()) != 0) return 2;
    double write_s = 0;
    if (FILE* f = std::fopen(out.c_str(), "r")) {
      if (std::fscanf(f, "%lf", &write_s) != 1) write_s = -1;
      std::fclose(f);
    }
    const std::string cmd_b = fmt::format("/usr/bin/python3 '{}' '{}' '{}' {} > /dev/null", repack,
                                          b.string(), vb.string(), kind);
    if (std::system(cmd_b.c_str()) != 0) return 2;
    const Timing t = time_pair(self, va, vb, reps, true);
    fmt::print("{:>18} {:>10.1f} {:>9.2f} {:>9.3f} {:>9.3f} {:>9.3f} {:>7.1f}x\n", kind,
               fs::file_size(va) / 1e6, write_s, t.cat, t.diff, t.h5py, t.diff / t.cat);
    std::fflush(stdout);
    fs::remove(va);
    fs::remove(vb);
  }
  fs::remove(a);
  fs::remove(b);
  return 0;
}

// The pair written by the trace writer itself with each --compression choice (deflate1, and none,
// the default), interleaved: every repetition writes, cats and diffs each choice in turn.
int writer_compression_study(const std::string& self, const fs::path& dir, int reps,
                             const Shape& sh, int mb) {
  const int levels[] = {1, 0};
  struct Acc {
    std::vector<double> write, cat, diff;
    long rss_kb = 0;
    double mb_a = 0;
  };
  Acc acc[2];
  const int rows = rows_for(sh, mb);
  std::fflush(stdout);
  for (int r = 0; r < reps; ++r) {
    for (int i = 0; i < 2; ++i) {
      const std::string z = std::to_string(levels[i]);
      const fs::path a = dir / ("a_writer" + z + ".h5"), b = dir / ("b_writer" + z + ".h5");
      acc[i].write.push_back(run_child({self, "--write-pair", a.string(), b.string(),
                                        std::to_string(rows), sh.name, z})
                                 .wall);
      acc[i].mb_a = fs::file_size(a) / 1e6;
      const std::string cat = fmt::format("cat '{}' '{}' > /dev/null", a.string(), b.string());
      if (std::system(cat.c_str()) != 0) return 2;  // page cache warm, as for the diff
      acc[i].cat.push_back(run_child({"/bin/sh", "-c", cat}).wall);
      const ChildRun d = run_child({self, "--diff-only", a.string(), b.string()});
      acc[i].diff.push_back(d.wall);
      acc[i].rss_kb = std::max(acc[i].rss_kb, d.max_rss_kb);
    }
  }
  fmt::print(
      "{}-shape pair written by the trace writer with each --compression, {} interleaved "
      "repetitions (medians); write s = the child generating and writing A and B\n",
      sh.name, reps);
  fmt::print("{:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}\n", "compression", "A MB", "write s",
             "cat s", "diff s", "diff/cat", "diff RSS");
  for (int i = 0; i < 2; ++i) {
    const double c = median(acc[i].cat), d = median(acc[i].diff);
    fmt::print("{:>12} {:>9.1f} {:>9.2f} {:>9.3f} {:>9.3f} {:>8.1f}x {:>7.1f} MB\n",
               ds::trace::compression_name(levels[i]), acc[i].mb_a, median(acc[i].write), c, d,
               d / c, acc[i].rss_kb / 1024.0);
    fs::remove(dir / fmt::format("a_writer{}.h5", levels[i]));
    fs::remove(dir / fmt::format("b_writer{}.h5", levels[i]));
  }
  return 0;
}

// The diff of a plain pair (as read before checksums and watched reads), of a checksummed pair,
// and of the checksummed pair in a watched child, interleaved; medians of `reps`.
int untrusted_study(const std::string& self, const fs::path& dir, int reps, const Shape& sh,
                    int mb) {
  const fs::path a0 = dir / "a_plain.h5", b0 = dir / "b_plain.h5", a1 = dir / "a_checksum.h5",
                 b1 = dir / "b_checksum.h5";
  const std::string rows = std::to_string(rows_for(sh, mb)), level = "0";
  std::fflush(stdout);
  run_child({self, "--write-pair", a0.string(), b0.string(), rows, sh.name, level, "0"});
  run_child({self, "--write-pair", a1.string(), b1.string(), rows, sh.name, level, "1"});
  const std::string cat = fmt::format("cat '{}' '{}' '{}' '{}' > /dev/null", a0.string(),
                                      b0.string(), a1.string(), b1.string());
  if (std::system(cat.c_str()) != 0) return 2;  // warm the page cache
  std::vector<double> plain, checked, watched;
  for (int r = 0; r < reps; ++r) {
    plain.push_back(run_child({self, "--diff-only", a0.string(), b0.string()}).wall);
    checked.push_back(run_child({self, "--diff-only", a1.string(), b1.string()}).wall);
    watched.push_back(run_child({self, "--diff-watched", a1.string(), b1.string()}).wall);
  }
  const double p = median(plain), c = median(checked), w = median(watched);
  fmt::print(
      "synthetic traces ({}), --compression none, {} rows a sequence, A {:.1f} MB plain, "
      "{:.1f} MB checksummed; medians of {} interleaved runs\n",
      sh.name, rows, fs::file_size(a0) / 1e6, fs::file_size(a1) / 1e6, reps);
  fmt::print("{:<52} {:>8} {:>8}\n", "diff", "s", "ratio");
  fmt::print("{:<52} {:>8.3f} {:>7.3f}x\n", "plain pair, in this process (as before)", p, 1.0);
  fmt::print("{:<52} {:>8.3f} {:>7.3f}x\n", "checksummed tokens/top-K/lse, in this process", c,
             c / p);
  fmt::print("{:<52} {:>8.3f} {:>7.3f}x\n", "checksummed, in a watched child (driftscope diff)", w,
             w / p);
  for (const auto& f : {a0, b0, a1, b1}) fs::remove(f);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--diff-only") return diff_only(argv[2], argv[3]);
  if (argc == 4 && std::string(argv[1]) == "--diff-watched") {
    return ds::trace::run_with_watched_reads([&] { return diff_only(argv[2], argv[3]); });
  }
  if (argc == 4 && std::string(argv[1]) == "--hdf5-floor") return hdf5_floor(argv[2], argv[3]);
  if (argc >= 6 && argc <= 8 && std::string(argv[1]) == "--write-pair") {
    write_pair(argv[2], argv[3], std::atoi(argv[4]), shape_named(argv[5]),
               argc >= 7 ? std::atoi(argv[6]) : ds::trace::WriterOptions{}.deflate_level,
               argc == 8 ? std::atoi(argv[7]) != 0 : ds::trace::WriterOptions{}.checksum);
    return 0;
  }
  std::vector<int> sizes = {200, 400};
  fs::path dir = fs::temp_directory_path() / "ds-bench-diff";
  int reps = 3;
  bool keep = false, compression = false, writer_compression = false, untrusted = false;
  const Shape* sh = &kBench;
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
    } else if (arg == "--shape" && i + 1 < argc) {
      sh = &shape_named(argv[++i]);
    } else if (arg == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--keep") {
      keep = true;
    } else if (arg == "--compression") {
      compression = true;
    } else if (arg == "--writer-compression") {
      writer_compression = true;
    } else if (arg == "--untrusted") {
      untrusted = true;
    } else {
      fmt::print(stderr,
                 "usage: {} [--shape bench|110m] [--mb 200,400] [--dir DIR] [--reps N] [--keep] "
                 "[--compression | --writer-compression | --untrusted]\n",
                 argv[0]);
      return 2;
    }
  }
  fs::create_directories(dir);
  const std::string self = fs::canonical("/proc/self/exe").string();
  if (compression) return compression_study(self, dir, reps, *sh, sizes.front());
  if (writer_compression) return writer_compression_study(self, dir, reps, *sh, sizes.front());
  if (untrusted) return untrusted_study(self, dir, reps, *sh, sizes.front());
  if (sh == &k110m) sizes = {0};
  fmt::print(
      "synthetic traces ({}): {} sequences, {} hidden sites of width {}, {} V={}, f32, written "
      "with "
      "the default --compression ({})\n",
      sh->name, sh->sequences, sites(*sh).size(), sh->width,
      sh->full_logits ? "top-20 + full logits" : "top-20 logits", sh->vocab,
      ds::trace::compression_name(ds::trace::WriterOptions{}.deflate_level));
  fmt::print("{:>9} {:>6} {:>8} {:>9} {:>8} {:>9} {:>8} {:>8} {:>10} {:>8} {:>9} {:>10}\n",
             "trace MB", "rows", "cat s", "cat MB/s", "diff s", "diff MB/s", "diff/cat", "floor s",
             "floor/cat", "h5py s", "h5py/diff", "diff RSS");
  for (int mb : sizes) {
    const int rows = rows_for(*sh, mb);
    const fs::path a = dir / fmt::format("a_{}_{}.h5", sh->name, mb),
                   b = dir / fmt::format("b_{}_{}.h5", sh->name, mb);
    const auto tw = std::chrono::steady_clock::now();
    std::fflush(stdout);  // a forked child would print what is still buffered again
    // Written by a child, so that this process stays small: a child's ru_maxrss includes the
    // size of the process it was forked from.
    run_child({self, "--write-pair", a.string(), b.string(), std::to_string(rows), sh->name});
    const double write_s = seconds_since(tw);
    const double bytes = static_cast<double>(fs::file_size(a) + fs::file_size(b));
    const Timing t = time_pair(self, a, b, reps, true);
    fmt::print(
        "{:>9.1f} {:>6} {:>8.3f} {:>9.0f} {:>8.3f} {:>9.1f} {:>7.1f}x {:>8.3f} {:>9.1f}x "
        "{:>8.3f} {:>8.1f}x {:>7.1f} MB\n",
        fs::file_size(a) / 1e6, rows * sh->sequences, t.cat, bytes / 1e6 / t.cat, t.diff,
        bytes / 1e6 / t.diff, t.diff / t.cat, t.floor, t.floor / t.cat, t.h5py, t.h5py / t.diff,
        t.rss_kb / 1024.0);
    fmt::print(stderr, "  (wrote the pair in {:.1f} s; sizes A {:.1f} MB, B {:.1f} MB)\n", write_s,
               fs::file_size(a) / 1e6, fs::file_size(b) / 1e6);
    if (!keep) {
      fs::remove(a);
      fs::remove(b);
    }
  }
  fmt::print(
      "diff/cat = diff time / cat time (both files, page-cached); floor = a process that only "
      "opens every dataset of both, looks up its chunks and closes it; h5py/diff = "
      "bench/diff_h5py.py time / diff time; medians of {} interleaved runs; diff RSS = peak RSS of "
      "the diff process "
      "(ru_maxrss)\n",
      reps);
  return 0;
}
