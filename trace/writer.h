// Trace writer (format v1, docs/trace-format.md): a background thread that appends each forward
// step's tapped hidden states, logits summary and tokens to chunked, compressed HDF5 datasets
// (in batches of up to 64 rows or 4 MiB per sequence, and at least every 0.5 s), and the kernel
// records of a CUDA run to the optional /kernels table, so that compute never waits on the disk
// beyond a queue bounded in bytes. The file is in HDF5 SWMR write mode (trace/swmr_file.h): a
// kill, a full disk or an interrupt at any moment leaves a file that opens, holding every step
// before the last flush point (each sequence's gen_len says how many).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "common/error.h"
#include "trace/certificate.h"
#include "trace/kernel_records.h"
#include "trace/writer_options.h"

namespace ds::trace {

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
  std::vector<double> logits;  // (n_rows, vocab); empty: no logits for this step, or a summary:
  // the rows' top-k (k = the writer's topk, at most vocab) and log-sum-exp, computed elsewhere as
  // trace/topk.h does (the CUDA backend, on the device); used when logits is empty and lse is not
  std::vector<int32_t> topk_ids;    // (n_rows, k)
  std::vector<float> topk_logits;   // (n_rows, k)
  std::vector<float> lse;           // (n_rows)
  std::vector<int32_t> new_tokens;  // tokens chosen after this step, appended to tokens
};

// The trace could not be created (a full disk, a folder that cannot be written): the message
// says the path and the operating system's reason; detail() holds the failed HDF5 call and
// HDF5's error stack, for --verbose.
class TraceWriteError : public Error {
 public:
  TraceWriteError(std::string message, std::string hint, std::string detail)
      : Error(std::move(message), std::move(hint)), detail_(std::move(detail)) {}
  const std::string& detail() const { return detail_; }

 private:
  std::string detail_;
};

class TraceWriter {
 public:
  // Creates the file (refusing to overwrite one without options.force) and starts the thread;
  // throws TraceWriteError when the file cannot be created.
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
  // A writer that makes no progress for the stall limit (DRIFTSCOPE_WRITE_STALL_SECONDS, default
  // 120) fails as a write does, here and in a blocked append(); its file is left as its last
  // flush point made it (complete=0), and writer_abandoned() says so.
  bool finish(bool complete, const std::string& stop_reason);
  // The observer proof of the run (run --certify, certificate.h), written by finish() into
  // /certify and the root's certify_json when the run completes. Call before finish().
  void set_certificate(Certificate c) { certificate_ = std::move(c); }

  bool failed() const;
  std::string error() const;
  // HDF5's error stack at the failure, for --verbose (empty when the failure was not HDF5's).
  std::string error_detail() const;
  const WriterOptions& options() const { return opt_; }

  // What the bounded queue cost so far: how often and how long the producers (append() and the
  // other queueing calls) waited for room, and how long the writer thread waited for a message
  // (the rest of its time it was writing). For bench_trace_host_cost.
  struct QueueTimes {
    int64_t producer_waits = 0;
    double producer_wait_s = 0;
    double writer_idle_s = 0;
  };
  QueueTimes queue_times() const;

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
  void write_certificate(int64_t file, const Certificate& c);  // hid_t
  void create_ahead(int64_t file, int from);                   // hid_t
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
  QueueTimes queue_times_;
  bool failed_ = false;
  std::string error_, error_detail_;
  bool finished_ = false;
  std::optional<Certificate> certificate_;
  // The stall bound: the writer thread's last sign of progress (a message taken or handled),
  // whether it has ended, and whether it was given up on (stuck inside HDF5, which cannot be
  // interrupted: on a file another process rewrote, or a file system that does not answer).
  std::chrono::steady_clock::time_point progress_at_;
  double stall_s_ = 0;
  int stall_after_steps_ = -1;  // test hook: DRIFTSCOPE_TRACE_STALL_AFTER_STEPS
  bool thread_done_ = false, stalled_ = false;
  void mark_progress();
  bool wait_for_progress(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready);
  void abandon();
  std::thread thread_;
};

// True once a trace writer was given up on (TraceWriter::finish after the stall limit): its
// thread is still inside HDF5, so the process must end without HDF5's clean-up at exit, which
// would wait on it (driftscope's main ends with _Exit then).
bool writer_abandoned();

}  // namespace ds::trace
