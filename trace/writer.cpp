// Trace writer: the thread that fills a trace's datasets (trace/layout.h) from a bounded queue,
// its flush points and the end of the file.
#include "trace/writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/env.h"
#include "common/error.h"
#include "common/float_formats.h"
#include "common/io_error.h"
#include "trace/h5.h"
#include "trace/kernel_table.h"
#include "trace/layout.h"
#include "trace/schema.h"
#include "trace/swmr_file.h"
#include "trace/topk.h"

namespace fs = std::filesystem;

namespace ds::trace {

struct WriterFile {
  WriterFile(const fs::path& path, bool replace) : swmr(path, replace) {}
  SwmrFile swmr;
  KernelTableWriter kernels;  // /kernels, created with its first rows
  std::chrono::steady_clock::time_point last_flush = std::chrono::steady_clock::now();
};

// Per sequence: its layout, its open datasets (while it runs), how many rows / tokens are
// written (consistent across datasets) and how many are committed (on disk before the last
// flush point, and recorded in gen_len), and the steps received but not yet written: rows are
// written in batches (see flush), so a decode step does not cost one HDF5 write per dataset.
struct TraceWriter::SeqState {
  int index = 0;
  std::vector<int32_t> prompt;
  bool created = false;  // its group and datasets exist in the file
  bool ended = false;    // End seen: its datasets are closed
  std::string stop_reason = "running";
  // layout: hidden sites in the first step's order with their widths; K = 0: no logits yet
  std::vector<std::pair<std::string, int>> site_order;
  int K = 0, V = 0;
  SequenceDatasets datasets;  // open while the sequence runs
  int64_t rows = 0, n_tokens = 0;
  int64_t committed_rows = 0, committed_tokens = 0;
  // buffered, not yet written: hidden_buf[i] the rows of site_order[i] (fewer entries: none)
  std::vector<std::vector<float>> hidden_buf;
  std::vector<int32_t> ids_buf, tokens_buf;
  std::vector<float> vals_buf, lse_buf, full_buf;
  int64_t buffered_rows = 0;
  size_t buffered_bytes = 0;

  std::string path() const { return sequence_path(index); }
};

namespace {

// Rows buffered per sequence before they are written (also written every 0.5 s and at the end),
// and bytes: a step of a large model with full logits is megabytes.
constexpr int64_t kFlushRows = 64;
constexpr size_t kFlushBytes = 4u << 20;
// Kernel records buffered before they are written (also every 0.5 s and at the end): a few
// forward passes of a large model.
constexpr size_t kFlushKernelRows = 4096;

std::atomic<bool> g_abandoned{false};

// DRIFTSCOPE_WRITE_STALL_SECONDS: how long the writer may make no progress (default 120 s: far
// more than one step of a large model takes to write, even deflated at level 9).
double write_stall_seconds() {
  return env::write_stall_seconds();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

size_t message_bytes(const StepRecord& m) {
  size_t b = sizeof(m) + m.logits.size() * sizeof(double) + m.new_tokens.size() * 4;
  for (const auto& h : m.hidden) b += sizeof(h) + h.site.size() + h.values.size() * sizeof(float);
  return b;
}

}  // namespace

TraceWriter::TraceWriter(WriterOptions options, RunInfo info) : opt_(std::move(options)) {
  h5::silence_errors();
  if (opt_.topk < 1)
    throw Error(fmt::format("topk {} must be >= 1", opt_.topk), "--trace-topk takes N >= 1");
  if (opt_.deflate_level < 0 || opt_.deflate_level > 9) {
    throw Error(fmt::format("deflate level {} is outside 0..9", opt_.deflate_level),
                "--compression takes none, deflate or deflate1 ... deflate9");
  }
  check_trace_target(opt_.path, opt_.force);  // and again when the file is committed
  if (opt_.path.has_parent_path() && !fs::exists(opt_.path.parent_path())) {
    throw Error(fmt::format("folder '{}' does not exist", opt_.path.parent_path().string()),
                "create it first (mkdir -p), or choose another -o path");
  }
  fail_after_steps_ = env::trace_fail_after_steps();
  stall_after_steps_ = env::trace_stall_after_steps();
  stall_s_ = write_stall_seconds();
  h5::keep_errors_in_this_thread();
  file_ = std::make_unique<WriterFile>(opt_.path, opt_.force);
  file_->kernels.set_deflate_level(opt_.deflate_level);
  try {
    const hid_t root = file_->swmr.id();
    h5::write_attr(root, "format", std::string(kFormatName));
    h5::write_attr(root, "format_version", int64_t{kFormatVersion});
    h5::write_attr(root, "tool_version", info.tool_version);
    h5::write_attr(root, "complete", int64_t{0});
    h5::write_attr(root, "stop_reason", std::string("running"));
    {
      h5::Id meta = h5::create_group(root, kMetaGroup);
      h5::write_attr(meta.get(), "config_json", info.config_json);
      h5::write_attr(meta.get(), "model_json", info.model_json);
      h5::write_attr(meta.get(), "env_json", info.env_json);
      h5::write_attr(meta.get(), "command_line", info.command_line);
      h5::Id seq = h5::create_group(root, kSeqGroup);
    }
    create_ahead(root, 0);
    file_->swmr.start_swmr();
  } catch (const TraceTargetError&) {  // something else took the path meanwhile
    file_.reset();
    throw;
  } catch (const Error& e) {
    file_.reset();
    // The operating system's reason when HDF5 names one ("No space left on device"), with its
    // hint; HDF5's call and stack are the detail, for --verbose.
    const h5::OsError os = h5::kept_os_error();
    throw TraceWriteError(
        fmt::format("cannot write trace '{}': {}", opt_.path.string(),
                    os.message.empty() ? std::string(e.what()) : os.message),
        os.errnum != 0 ? io_hint(std::error_code(os.errnum, std::generic_category()))
                       : std::string("check that the folder is writable and the disk not full"),
        std::string(e.what()) + "\n" + h5::kept_error_stack());
  }
  progress_at_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { run(); });
}

TraceWriter::~TraceWriter() {
  if (!finished_) {
    try {
      finish(false, "interrupted");
    } catch (...) {
    }
  }
}

void TraceWriter::push(Message m) {
  size_t bytes = 64;
  if (const auto* step = std::get_if<StepRecord>(&m)) bytes = message_bytes(*step);
  if (const auto* k = std::get_if<Kernels>(&m)) bytes += k->records.size() * sizeof(KernelRecord);
  std::unique_lock lock(mu_);
  // Back-pressure in bytes and in messages; a message larger than the whole budget passes alone.
  const auto room = [&] {
    return failed_ || queue_.empty() ||
           (queue_.size() < opt_.queue_steps && queued_bytes_ + bytes <= opt_.queue_bytes);
  };
  if (!room()) {
    const auto t0 = std::chrono::steady_clock::now();
    wait_for_progress(lock, room);
    ++queue_times_.producer_waits;
    queue_times_.producer_wait_s += seconds_since(t0);
  }
  if (failed_ && !std::holds_alternative<Stop>(m)) {
    throw Error(fmt::format("writing trace '{}' failed: {}", opt_.path.string(), error_),
                "the trace keeps every step written before the failure (complete=0)");
  }
  queued_bytes_ += bytes;
  queue_.emplace_back(std::move(m), bytes);
  not_empty_.notify_one();
}

void TraceWriter::mark_progress() {
  std::lock_guard lock(mu_);
  progress_at_ = std::chrono::steady_clock::now();
}

// Waits until `ready` (under mu_), or until the writer thread has shown no progress for the stall
// limit: then the writer counts as failed (stalled_), `ready` or not. False when it stalled.
bool TraceWriter::wait_for_progress(std::unique_lock<std::mutex>& lock,
                                    const std::function<bool()>& ready) {
  const auto limit = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(stall_s_));
  while (!ready()) {
    if (stalled_) return false;
    if (not_full_.wait_until(lock, progress_at_ + limit) == std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= progress_at_ + limit && !ready()) {
      stalled_ = true;
      if (!failed_) {
        failed_ = true;
        error_ = fmt::format(
            "the writer made no progress for {:g} s (a file system that does not answer, or a "
            "file another process changed)",
            stall_s_);
      }
      not_full_.notify_all();
      return false;
    }
  }
  return true;
}

// The writer thread is stuck inside HDF5: it is left to itself, and nothing here touches HDF5
// again (closing the file or its datasets would wait on it or race it); what it holds is leaked.
void TraceWriter::abandon() {
  thread_.detach();
  for (auto& [i, s] : seqs_) static_cast<void>(s.release());
  static_cast<void>(file_.release());
  g_abandoned.store(true);
}

void TraceWriter::begin_sequence(int seq, const std::vector<int32_t>& prompt) {
  push(Begin{seq, prompt});
}
void TraceWriter::append(StepRecord step) {
  push(std::move(step));
}
void TraceWriter::end_sequence(int seq, const std::string& stop_reason) {
  push(End{seq, stop_reason});
}
void TraceWriter::append_kernels(std::vector<KernelRecord> records) {
  if (!records.empty()) push(Kernels{std::move(records)});
}

bool TraceWriter::failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

std::string TraceWriter::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

TraceWriter::QueueTimes TraceWriter::queue_times() const {
  std::lock_guard lock(mu_);
  return queue_times_;
}

std::string TraceWriter::error_detail() const {
  std::lock_guard lock(mu_);
  return error_detail_;
}

void TraceWriter::fail(const std::exception& e) {
  std::lock_guard lock(mu_);
  if (!failed_) {
    failed_ = true;
    // The operating system's reason (e.g. "No space left on device") when HDF5 names one: the
    // user's one line; the failed call and HDF5's whole stack are the detail (--verbose).
    const h5::OsError os = h5::kept_os_error();
    error_ = !os.message.empty() ? os.message : std::string(e.what());
    error_detail_ = std::string(e.what()) + "\n" + h5::kept_error_stack();
  }
  not_full_.notify_all();
}

void TraceWriter::run() {
  h5::keep_errors_in_this_thread();
  while (true) {
    Message m;
    {
      std::unique_lock lock(mu_);
      if (queue_.empty()) {
        const auto t0 = std::chrono::steady_clock::now();
        not_empty_.wait(lock, [&] { return !queue_.empty(); });
        queue_times_.writer_idle_s += seconds_since(t0);
      }
      m = std::move(queue_.front().first);
      queued_bytes_ -= queue_.front().second;
      queue_.pop_front();
      progress_at_ = std::chrono::steady_clock::now();
      if (std::holds_alternative<Stop>(m)) thread_done_ = true;
      not_full_.notify_all();
    }
    if (std::holds_alternative<Stop>(m)) return;
    if (failed()) continue;  // after a failure, drain without writing
    try {
      std::visit(
          [this](auto& msg) {
            if constexpr (!std::is_same_v<std::decay_t<decltype(msg)>, Stop>) handle(msg);
          },
          m);
      maybe_flush(false);
      mark_progress();
    } catch (const std::exception& e) {
      fail(e);
    }
  }
}

// SWMR write mode creates nothing: the writer leaves it (closing every open object, reopening
// the file in plain mode) for the few moments it creates groups, datasets or string attributes.
void TraceWriter::with_structure(const std::function<void(int64_t)>& create) {
  close_all();
  file_->swmr.leave_swmr();
  create(file_->swmr.id());
  file_->swmr.start_swmr();
  open_all();
}

void TraceWriter::close_all() {
  for (auto& [i, s] : seqs_) s->datasets.close();
  file_->kernels.close();
}

void TraceWriter::open_all() {
  const hid_t f = file_->swmr.id();
  for (auto& [i, sp] : seqs_) {
    if (sp->created && !sp->ended) open_sequence(*sp);
  }
  if (file_->kernels.exists_in(f)) file_->kernels.open(f);
}

// Planned sequences from `from` on (up to 16 of them), with every dataset, in plain mode. Few
// at a time: HDF5 keeps memory for every object created in one plain-mode window (256 at once
// made `run` 53 MiB larger at 190 prompts of all probes; 16 cost no measurable time).
void TraceWriter::create_ahead(hid_t f, int from) {
  if (opt_.planned_vocab <= 0) return;
  constexpr int kAhead = 16;
  const int n = static_cast<int>(opt_.planned_prompts.size());
  const int V = opt_.planned_vocab;
  const SequenceLayout layout{opt_.planned_sites,     number_format(opt_.hidden_dtype),
                              std::min(opt_.topk, V), V,
                              opt_.full_logits,       opt_.deflate_level,
                              opt_.checksum};
  for (int i = std::max(from, created_ahead_); i < std::min(n, from + kAhead); ++i) {
    create_sequence(f, i, opt_.planned_prompts[i], opt_.deflate_level, opt_.checksum);
    create_datasets(f, sequence_path(i), layout);
    created_ahead_ = i + 1;
  }
}

void TraceWriter::open_sequence(SeqState& s) {
  open_sequence_datasets(file_->swmr.id(), s.index, s.site_order, s.K > 0, opt_.full_logits,
                         s.datasets);
}

void TraceWriter::handle(Begin& m) {
  auto sp = std::make_unique<SeqState>();
  SeqState& s = *sp;
  s.index = m.seq;
  s.prompt = std::move(m.prompt);
  s.n_tokens = s.committed_tokens = static_cast<int64_t>(s.prompt.size());
  seqs_[m.seq] = std::move(sp);
  const bool planned = opt_.planned_vocab > 0 &&
                       m.seq < static_cast<int>(opt_.planned_prompts.size()) &&
                       opt_.planned_prompts[m.seq] == s.prompt;
  if (!planned) return;  // created in the file with its first step (or at the end)
  s.site_order = opt_.planned_sites;
  s.V = opt_.planned_vocab;
  s.K = std::min(opt_.topk, s.V);
  s.created = true;  // now, or by this window (whose open_all then opens it)
  if (m.seq >= created_ahead_) {
    with_structure([&](hid_t f) { create_ahead(f, m.seq); });
  } else {
    open_sequence(s);
  }
}

void TraceWriter::handle(StepRecord& m) {
  auto it = seqs_.find(m.seq);
  if (it == seqs_.end())
    throw Error(fmt::format("trace writer: step for unknown sequence {}", m.seq));
  SeqState& s = *it->second;
  if (fail_after_steps_ >= 0 && steps_written_ >= fail_after_steps_) {
    flush(s);  // what came before the failing step reaches the disk, as it would have
    flush_point();
    throw Error("No space left on device (injected by DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS)");
  }
  while (stall_after_steps_ >= 0 && steps_written_ >= stall_after_steps_) {
    std::this_thread::sleep_for(std::chrono::hours(1));  // as a call that never returns
  }
  // The step's layout: new sites or the first logits need datasets, so a structure window.
  // Each hidden site's place in site_order: a step brings them in that order as a rule, so its
  // j-th site is looked for at j first.
  bool new_layout = !s.created;
  std::vector<size_t> order_at(m.hidden.size());
  for (size_t j = 0; j < m.hidden.size(); ++j) {
    const std::string& site = m.hidden[j].site;
    size_t i = j;
    if (i >= s.site_order.size() || s.site_order[i].first != site) {
      i = static_cast<size_t>(std::find_if(s.site_order.begin(), s.site_order.end(),
                                           [&](const auto& x) { return x.first == site; }) -
                              s.site_order.begin());
    }
    if (i == s.site_order.size()) {
      s.site_order.emplace_back(site, m.hidden[j].width);
      new_layout = true;
    }
    order_at[j] = i;
  }
  const bool summary = m.logits.empty() && !m.lse.empty();
  if ((!m.logits.empty() || summary) && s.K == 0) {
    s.V = m.vocab;
    s.K = std::min(opt_.topk, s.V);
    new_layout = true;
  }
  if (summary && (opt_.full_logits || m.lse.size() != static_cast<size_t>(m.n_rows) ||
                  m.topk_ids.size() != static_cast<size_t>(m.n_rows) * s.K ||
                  m.topk_logits.size() != m.topk_ids.size())) {
    throw Error(fmt::format("trace writer: a logits summary of {} rows does not fit top-{} rows{}",
                            m.lse.size(), s.K, opt_.full_logits ? " (full logits asked for)" : ""));
  }
  if (new_layout) {
    with_structure([&](hid_t f) {
      const NumberFormat he = number_format(opt_.hidden_dtype);
      const int z = opt_.deflate_level;
      // The other sequences begun with this one (a batch) get the same layout in the same
      // window; a later step with other sites opens another.
      for (auto& [i, tp] : seqs_) {
        SeqState& t = *tp;
        if (t.ended || (t.created && &t != &s)) continue;
        if (&t != &s && t.site_order.empty() && t.K == 0) {
          t.site_order = s.site_order;
          t.K = s.K;
          t.V = s.V;
        }
        if (!t.created) create_sequence(f, t.index, t.prompt, z, opt_.checksum);
        t.created = true;
        create_datasets(f, t.path(),
                        {t.site_order, he, t.K, t.V, opt_.full_logits, z, opt_.checksum});
      }
    });
  }
  const int64_t n = m.n_rows;
  if (s.hidden_buf.size() < s.site_order.size()) s.hidden_buf.resize(s.site_order.size());
  for (size_t j = 0; j < m.hidden.size(); ++j) {
    const std::vector<float>& values = m.hidden[j].values;
    auto& buf = s.hidden_buf[order_at[j]];
    buf.insert(buf.end(), values.begin(), values.end());
    s.buffered_bytes += values.size() * sizeof(float);
  }
  if (summary) {
    s.ids_buf.insert(s.ids_buf.end(), m.topk_ids.begin(), m.topk_ids.end());
    s.vals_buf.insert(s.vals_buf.end(), m.topk_logits.begin(), m.topk_logits.end());
    s.lse_buf.insert(s.lse_buf.end(), m.lse.begin(), m.lse.end());
    s.buffered_bytes += static_cast<size_t>(n) * (8 * s.K + 4);
  } else if (!m.logits.empty()) {
    for (int64_t r = 0; r < n; ++r) {
      std::span<const double> row(m.logits.data() + r * s.V, static_cast<size_t>(s.V));
      TopK t = top_k(row, s.K);
      s.ids_buf.insert(s.ids_buf.end(), t.ids.begin(), t.ids.end());
      for (double v : t.logits) s.vals_buf.push_back(static_cast<float>(v));
      s.lse_buf.push_back(static_cast<float>(log_sum_exp(row)));
    }
    s.buffered_bytes += static_cast<size_t>(n) * (8 * s.K + 4);
    if (opt_.full_logits) {
      s.full_buf.insert(s.full_buf.end(), m.logits.begin(), m.logits.end());
      s.buffered_bytes += m.logits.size() * sizeof(float);
    }
  }
  s.tokens_buf.insert(s.tokens_buf.end(), m.new_tokens.begin(), m.new_tokens.end());
  s.buffered_rows += n;
  ++steps_written_;
  if (s.buffered_rows >= kFlushRows || s.buffered_bytes >= kFlushBytes) flush(s);
}

// Writes the buffered rows of a sequence to every dataset. On failure the datasets are cut back
// to the rows written before (best effort), and the error propagates.
void TraceWriter::flush(SeqState& s) {
  if (s.buffered_rows == 0 && s.tokens_buf.empty()) return;
  try {
    const int64_t at = s.rows, n = s.buffered_rows;
    const NumberFormat he = number_format(opt_.hidden_dtype);
    std::vector<uint16_t> bits;
    static const std::vector<float> kNone;
    for (size_t i = 0; i < s.site_order.size(); ++i) {
      const auto& [site, width] = s.site_order[i];
      const std::vector<float>& v = i < s.hidden_buf.size() ? s.hidden_buf[i] : kNone;
      if (static_cast<int64_t>(v.size()) != n * width) {
        throw Error(fmt::format("trace writer: site {} has {} values for {} rows of width {}", site,
                                v.size(), n, width));
      }
      const h5::Id& d = s.datasets.hidden.at(site);
      if (he == NumberFormat::f32) {
        h5::write_rows(d.get(), he, at, n, width, v.data());
      } else {
        bits.resize(v.size());
        narrow(v.data(), bits.data(), v.size(), opt_.hidden_dtype);
        h5::write_rows(d.get(), he, at, n, width, bits.data());
      }
    }
    if (!s.lse_buf.empty()) {
      h5::write_rows(s.datasets.topk_ids.get(), NumberFormat::i32, at, n, s.K, s.ids_buf.data());
      h5::write_rows(s.datasets.topk_logits.get(), NumberFormat::f32, at, n, s.K,
                     s.vals_buf.data());
      h5::write_rows(s.datasets.lse.get(), NumberFormat::f32, at, n, 0, s.lse_buf.data());
      if (s.datasets.full)
        h5::write_rows(s.datasets.full.get(), NumberFormat::f32, at, n, s.V, s.full_buf.data());
    }
    h5::write_rows(s.datasets.tokens.get(), NumberFormat::i32, s.n_tokens,
                   static_cast<int64_t>(s.tokens_buf.size()), 0, s.tokens_buf.data());
    s.rows += n;
    s.n_tokens += static_cast<int64_t>(s.tokens_buf.size());
  } catch (...) {
    rollback(s);
    throw;
  }
  for (auto& v : s.hidden_buf) {
    v.clear();
    v.shrink_to_fit();  // a finished batch's buffers are not kept for the rest of the run
  }
  for (auto* v : {&s.vals_buf, &s.lse_buf, &s.full_buf}) v->clear();
  s.ids_buf.clear();
  s.tokens_buf.clear();
  s.buffered_rows = 0;
  s.buffered_bytes = 0;
}

void TraceWriter::handle(End& m) {
  auto it = seqs_.find(m.seq);
  if (it == seqs_.end()) return;
  SeqState& s = *it->second;
  s.stop_reason = m.stop_reason;  // written at the end: SWMR mode creates no string attribute
  flush(s);
  flush_point();  // the finished sequence is committed whole, then its datasets are closed
  s.datasets.close();
  s.ended = true;
  H5garbage_collect();  // HDF5's free lists keep what the closed datasets used otherwise
}

void TraceWriter::handle(Kernels& m) {
  file_->kernels.add(std::move(m.records));
  if (file_->kernels.buffered() >= kFlushKernelRows) flush_kernels();
}

// Appends the buffered kernel records, creating /kernels (in a structure window) with the first.
void TraceWriter::flush_kernels() {
  if (file_->kernels.buffered() == 0) return;
  if (!file_->kernels.is_open()) {
    with_structure([&](hid_t f) {
      file_->kernels.create(f);
      file_->kernels.close();
    });
  }
  file_->kernels.flush(file_->swmr.id());
}

// Cuts every dataset of the sequence back to the last fully written step.
void TraceWriter::rollback(SeqState& s) {
  for (auto& [site, d] : s.datasets.hidden) h5::cut_rows(d, s.rows);
  h5::cut_rows(s.datasets.topk_ids, s.rows);
  h5::cut_rows(s.datasets.topk_logits, s.rows);
  h5::cut_rows(s.datasets.lse, s.rows);
  h5::cut_rows(s.datasets.full, s.rows);
  h5::cut_rows(s.datasets.tokens, s.n_tokens);
}

// A flush point: the rows written so far reach the file, then each sequence's gen_len is
// raised to them and reaches the file too. A reader of a file cut at any moment trusts
// gen_len: the rows it counts were on disk before it was written.
void TraceWriter::flush_point() {
  flush_kernels();
  DS_H5(H5Fflush(file_->swmr.id(), H5F_SCOPE_GLOBAL));
  bool marked = false;
  for (auto& [i, s] : seqs_) {
    // Rows without a token: run -n 0 records the prompt's positions and chooses nothing.
    const bool moved = s->n_tokens != s->committed_tokens || s->rows != s->committed_rows;
    if (s->created && !s->ended && moved) {
      commit(*s);
      marked = true;
    }
  }
  if (marked) DS_H5(H5Fflush(file_->swmr.id(), H5F_SCOPE_GLOBAL));
  file_->last_flush = std::chrono::steady_clock::now();
}

void TraceWriter::commit(SeqState& s) {
  h5::write_attr(s.datasets.group.get(), "gen_len",
                 s.n_tokens - static_cast<int64_t>(s.prompt.size()));
  s.committed_rows = s.rows;
  s.committed_tokens = s.n_tokens;
}

void TraceWriter::maybe_flush(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (force || now - file_->last_flush > std::chrono::milliseconds(500)) {
    for (auto& [i, s] : seqs_) {
      if (s->created && !s->ended) flush(*s);
    }
    flush_point();
  }
}

bool TraceWriter::finish(bool complete, const std::string& stop_reason) {
  if (finished_) return !failed();
  finished_ = true;
  {
    std::unique_lock lock(mu_);
    queue_.emplace_back(Stop{}, 0);  // never blocks: Stop may exceed the bound
    not_empty_.notify_one();
    if (!wait_for_progress(lock, [&] { return thread_done_; })) {
      lock.unlock();
      abandon();
      return false;
    }
  }
  thread_.join();
  h5::keep_errors_in_this_thread();
  bool ok = !failed();
  if (ok) {
    try {
      maybe_flush(true);  // steps still buffered when the run stopped
    } catch (const std::exception& e) {
      fail(e);
      ok = false;
    }
  }
  finish_file(complete, stop_reason, ok);
  seqs_.clear();
  file_.reset();
  return !failed();
}

// The end of the file: after a failure nothing more is committed (HDF5 may have dropped the
// chunk whose write failed, so rows written since the last flush point are not trusted) and the
// open datasets are cut back to their committed rows (best effort). Then one last plain-mode
// window, with the reserve given back, writes
// the string attributes (stop reasons, complete, error), creates the groups of sequences that
// never got a step, and cuts every dataset to its committed rows; a clean close clears the SWMR
// flags. If even that cannot be done, the file stays as the last flush point left it.
void TraceWriter::finish_file(bool complete, const std::string& stop_reason, bool ok) {
  file_->swmr.release_reserve();
  if (!ok) {
    file_->kernels.discard();  // after a write failure nothing more is written
    for (auto& [i, s] : seqs_) {
      if (!s->created || s->ended) continue;
      s->rows = s->committed_rows;
      s->n_tokens = s->committed_tokens;
      rollback(*s);
    }
    H5Fflush(file_->swmr.id(), H5F_SCOPE_GLOBAL);  // errors ignored: the commit marks stand
  }
  constexpr long long kWindowBytes = 256 << 10;  // the last window writes some KiB of metadata
  const long long free = file_->swmr.free_bytes();
  if (!ok && free >= 0 && free < kWindowBytes) return;  // the file stays at its last flush point
  try {
    close_all();
    file_->swmr.leave_swmr();
    const hid_t f = file_->swmr.id();
    for (auto& [i, sp] : seqs_) {
      SeqState& s = *sp;
      if (!s.created) create_sequence(f, s.index, s.prompt, opt_.deflate_level, opt_.checksum);
      h5::Id g = h5::open_group(f, s.path());
      auto cut = [&](const std::string& rel, int64_t rows) {
        if (!h5::exists(g.get(), rel)) return;
        h5::Id d = open_dataset(g.get(), rel);
        std::vector<int64_t> shape = h5::dataset_shape(d.get());
        if (shape.empty() || shape[0] == rows) return;
        hsize_t dims[2] = {static_cast<hsize_t>(rows),
                           shape.size() > 1 ? static_cast<hsize_t>(shape[1]) : 0};
        DS_H5(H5Dset_extent(d.get(), dims));
      };
      // After a clean run every dataset already holds exactly the committed rows (each write
      // extends it to them): opening them all would only cost memory (HDF5 keeps about 3 KB per
      // dataset opened in this window until the file closes: +20 MiB for 190 sequences of all
      // probes). After a failure, or with rows past the last flush point, each is cut back.
      const bool exact = ok && s.rows == s.committed_rows && s.n_tokens == s.committed_tokens;
      if (!exact) {
        for (const auto& [site, width] : s.site_order) cut(hidden_path(site), s.committed_rows);
        for (const char* l : kLogitsDatasets) cut(logits_path(l), s.committed_rows);
        cut(kTokensDataset, s.committed_tokens);
      }
      h5::write_attr(g.get(), "gen_len",
                     s.committed_tokens - static_cast<int64_t>(s.prompt.size()));
      h5::write_attr(g.get(), "stop_reason",
                     s.ended && ok ? s.stop_reason : std::string("interrupted"));
    }
    for (int i = 0; i < created_ahead_; ++i) {  // planned, created ahead, never begun
      if (!seqs_.count(i)) DS_H5(H5Ldelete(f, sequence_path(i).c_str(), H5P_DEFAULT));
    }
    const hid_t root = f;
    if (certificate_ && complete && ok) write_certificate(f, *certificate_);
    h5::write_attr(root, "complete", int64_t{complete && ok ? 1 : 0});
    h5::write_attr(root, "stop_reason", ok ? stop_reason : std::string("interrupted"));
    if (!ok) h5::write_attr(root, "error", error());
    file_->swmr.close();
  } catch (const std::exception& e) {
    fail(e);
  }
}

namespace {

template <typename T, typename F>
void write_column(hid_t group, const char* name, NumberFormat e,
                  const std::vector<CertifyRow>& rows, F field) {
  std::vector<T> v;
  v.reserve(rows.size());
  for (const CertifyRow& r : rows) v.push_back(static_cast<T>(field(r)));
  h5::Id d = h5::create_growing(group, name, e, 0, 4096, 0, true);
  h5::write_rows(d.get(), e, 0, static_cast<int64_t>(v.size()), 0, v.data());
}

}  // namespace

// /certify: one row per logits row (sequence, row, both digests, both chosen tokens), and the
// root's certify_json with the verdict.
void TraceWriter::write_certificate(int64_t file, const Certificate& c) {
  const hid_t f = static_cast<hid_t>(file);
  h5::Id g = h5::create_group(f, kCertifyGroup);
  write_column<int32_t>(g.get(), "seq", NumberFormat::i32, c.digests,
                        [](const CertifyRow& r) { return r.seq; });
  write_column<int32_t>(g.get(), "row", NumberFormat::i32, c.digests,
                        [](const CertifyRow& r) { return r.row; });
  // digests as int64: the same 64 bits (h5py: .view(numpy.uint64))
  write_column<int64_t>(g.get(), "tapped", NumberFormat::i64, c.digests,
                        [](const CertifyRow& r) { return static_cast<int64_t>(r.tapped); });
  write_column<int64_t>(g.get(), "untapped", NumberFormat::i64, c.digests,
                        [](const CertifyRow& r) { return static_cast<int64_t>(r.untapped); });
  write_column<int32_t>(g.get(), "token_tapped", NumberFormat::i32, c.digests,
                        [](const CertifyRow& r) { return r.token_tapped; });
  write_column<int32_t>(g.get(), "token_untapped", NumberFormat::i32, c.digests,
                        [](const CertifyRow& r) { return r.token_untapped; });
  h5::write_attr(f, "certify_json", c.json());
}

bool writer_abandoned() {
  return g_abandoned.load();
}

}  // namespace ds::trace
