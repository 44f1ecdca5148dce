// Trace writer (format v1, docs/trace-format.md): a background thread that appends each forward
// step's tapped hidden states, logits summary and tokens to chunked, compressed HDF5 datasets
// (in batches of up to 64 rows or 4 MiB per sequence, and at least every 0.5 s), and the kernel
// records of a CUDA run to the optional /kernels table, so that compute never waits on the disk
// beyond a queue bounded in bytes. The file is in HDF5 SWMR write mode (trace/swmr_file.h): a
// kill, a full disk or an interrupt at any moment leaves a file that opens, holding every step
// before the last flush point (each sequence's gen_len says how many).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "common/float_formats.h"
#include "trace/kernel_records.h"

namespace ds::trace {

// Storage of hidden states in the trace (--hidden-dtype): native = f32, f16 or bf16.
Storage parse_hidden_dtype(const std::string& s);  // throws ds::Error naming the value
const char* hidden_dtype_name(Storage d);          // "f32", "f16", "bf16"

// Filters of every dataset of the trace (--compression): "none" -> 0 (no filter, the default),
// "deflate" -> 1, "deflate1" .. "deflate9" -> 1 .. 9 (HDF5's shuffle, then deflate at that
// level). Throws ds::Error naming the value.
int parse_compression(const std::string& s);
std::string compression_name(int deflate_level);  // "none", "deflate1" ... "deflate9"

struct WriterOptions {
  std::filesystem::path path;
  Storage hidden_dtype = Storage::native;  // f32
  int topk = 20;
  bool full_logits = false;
  bool force = false;     // overwrite an existing file
  int deflate_level = 0;  // 0: no filter (the default); 1..9: shuffle + deflate at that level
                          // (parse_compression; "deflate" = h5::kDefaultDeflateLevel)
  // Tokens, top-K ids and logits and lse with HDF5's Fletcher-32 checksum (docs/trace-format.md,
  // "Untrusted traces"); off only to measure what the checksum costs (bench_diff_throughput).
  bool checksum = true;
  size_t queue_steps = 64;  // steps queued before append() blocks
  // The run's plan, when known up front (traced runs): every prompt, the hidden sites with
  // their widths, the vocabulary. The writer then creates the groups and datasets of up to 16
  // sequences at a time before they start, outside SWMR mode, instead of opening a plain-mode
  // window per batch (swmr_file.h); groups of planned sequences that never began are removed
  // at the end.
  std::vector<std::vector<int32_t>> planned_prompts;
  std::vector<std::pair<std::string, int>> planned_sites;
  int planned_vocab = 0;           // 0: no plan
  size_t queue_bytes = 64u << 20;  // bytes of queued steps before append() blocks (one step
                                   // larger than this still passes, alone)
};

// The /meta attributes and the tool version (root attribute).
struct RunInfo {
  std::string tool_version;
  std::string config_json = "{}";
  std::string model_json = "{}";
  std::string env_json = "{}";
  std::string command_line;
};

struct HiddenRows {
  std::string site;  // "embed", "L0/out", ...
  int width = 0;
  std::vector<float> values;  // (n_rows, width) as the runtime produced them (fp64 rounded)
};

// One forward pass of one sequence: n_rows new positions, appended after the rows already written.
struct StepRecord {
  int seq = 0;
  int n_rows = 0;
  std::vector<HiddenRows> hidden;
  int vocab = 0;
  std::vector<double> logits;       // (n_rows, vocab); empty: no logits for this step
  std::vector<int32_t> new_tokens;  // tokens chosen after this step, appended to tokens
};

class TraceWriter {
 public:
  // Creates the file (refusing to overwrite one without options.force) and starts the thread.
  TraceWriter(WriterOptions options, RunInfo info);
  // Finishes as interrupted if finish() was not called.
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void begin_sequence(int seq, const std::vector<int32_t>& prompt);
  // Queues a step; blocks while the queue is full. Throws ds::Error once the writer has failed.
  void append(StepRecord step);
  void end_sequence(int seq, const std::string& stop_reason);
  // Queues kernel records (KernelRecorder::drain()) for the /kernels table, which is created on
  // the first non-empty batch. Rows are written like steps: in batches, at least every 0.5 s,
  // and at finish(). Blocks while the queue is full; throws ds::Error once the writer has failed.
  void append_kernels(std::vector<KernelRecord> records);
  // Drains the queue, writes root attributes complete and stop_reason, closes the file.
  // Returns false (with error()) when a write failed; the file then holds the steps before it.
  bool finish(bool complete, const std::string& stop_reason);

  bool failed() const;
  std::string error() const;
  // HDF5's error stack at the failure, for --verbose (empty when the failure was not HDF5's).
  std::string error_detail() const;
  const WriterOptions& options() const { return opt_; }

 private:
  struct Begin {
    int seq;
    std::vector<int32_t> prompt;
  };
  struct End {
    int seq;
    std::string stop_reason;
  };
  struct Kernels {
    std::vector<KernelRecord> records;
  };
  struct Stop {};
  using Message = std::variant<Begin, StepRecord, End, Kernels, Stop>;

  struct SeqState;
  void run();
  void handle(Begin& m);
  void handle(StepRecord& m);
  void handle(End& m);
  void handle(Kernels& m);
  void push(Message m);
  void fail(const std::exception& e);
  void flush(SeqState& s);
  void rollback(SeqState& s);
  void maybe_flush(bool force);
  void flush_point();
  void flush_kernels();
  void commit(SeqState& s);
  void with_structure(const std::function<void(int64_t file)>& create);  // hid_t
  void close_all();
  void open_all();
  void finish_file(bool complete, const std::string& stop_reason, bool ok);
  void create_ahead(int64_t file, int from);  // hid_t
  void open_sequence(SeqState& s);
  int created_ahead_ = 0;  // planned sequences [0, created_ahead_) exist in the file

  WriterOptions opt_;
  std::unique_ptr<struct WriterFile> file_;
  std::map<int, std::unique_ptr<SeqState>> seqs_;  // writer thread only
  int steps_written_ = 0;
  int fail_after_steps_ = -1;  // test hook: DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS

  mutable std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::pair<Message, size_t>> queue_;  // message, its bytes
  size_t queued_bytes_ = 0;
  bool failed_ = false;
  std::string error_, error_detail_;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace ds::trace
