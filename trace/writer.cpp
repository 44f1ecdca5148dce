// Trace writer: HDF5 layout of format v1, filled by a background thread from a bounded queue.
#include "trace/writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "common/error.h"
#include "common/float_formats.h"
#include "trace/h5.h"
#include "trace/kernel_table.h"
#include "trace/schema.h"
#include "trace/topk.h"

namespace fs = std::filesystem;

namespace ds::trace {

Storage parse_hidden_dtype(const std::string& s) {
  if (s == "f32") return Storage::native;
  if (s == "f16") return Storage::f16;
  if (s == "bf16") return Storage::bf16;
  throw Error(fmt::format("unknown hidden dtype '{}'", s), "--hidden-dtype takes f32, f16 or bf16");
}

const char* hidden_dtype_name(Storage d) {
  switch (d) {
    case Storage::native: return "f32";
    case Storage::f16: return "f16";
    case Storage::bf16: return "bf16";
  }
  return "?";
}

struct WriterFile {
  h5::Id file;
  KernelTableWriter kernels;  // /kernels, created on the first non-empty flush
  std::chrono::steady_clock::time_point last_flush = std::chrono::steady_clock::now();
};

// Per-sequence datasets, how many rows / tokens are on disk (consistent across datasets), and
// the steps received but not yet written: rows are written in batches (see flush_rows), so a
// decode step does not cost one HDF5 write per dataset.
struct TraceWriter::SeqState {
  h5::Id group;
  std::map<std::string, h5::Id> hidden;  // site -> dataset
  h5::Id tokens, topk_ids, topk_logits, lse, full;
  int64_t rows = 0;
  int64_t n_tokens = 0;
  int prompt_len = 0;
  // buffered, not yet written
  std::vector<std::pair<std::string, int>> site_order;  // site, width (first step's order)
  std::map<std::string, std::vector<float>> hidden_buf;
  std::vector<int32_t> ids_buf, tokens_buf;
  std::vector<float> vals_buf, lse_buf, full_buf;
  int64_t buffered_rows = 0;
  int K = 0, V = 0;
};

namespace {

// Rows buffered per sequence before they are written (also written every 0.5 s and at the end).
constexpr int64_t kFlushRows = 64;
// Kernel records buffered before they are written (also every 0.5 s and at the end): a few
// forward passes of a large model.
constexpr size_t kFlushKernelRows = 4096;

// Rows per chunk: the largest power of two whose chunk stays within 256 KiB (large enough to
// compress, small for decode), at most 1024. A power of two divides the writer's 64-row batches
// (each batch fills whole chunks, none is rewritten) and the diff's power-of-two read blocks (a
// block covers whole chunks, each inflated once).
int64_t chunk_rows_for(int64_t width, size_t elem) {
  const int64_t target = 256 * 1024;
  const int64_t fit = target / std::max<int64_t>(1, width * static_cast<int64_t>(elem));
  int64_t rows = 1;
  while (rows * 2 <= std::min<int64_t>(fit, 1024)) rows *= 2;
  return rows;
}

h5::Elem hidden_elem(Storage d) {
  switch (d) {
    case Storage::native: return h5::Elem::F32;
    case Storage::f16: return h5::Elem::F16;
    case Storage::bf16: return h5::Elem::BF16;
  }
  return h5::Elem::F32;
}

}  // namespace

TraceWriter::TraceWriter(WriterOptions options, RunInfo info) : opt_(std::move(options)) {
  h5::silence_errors();
  if (opt_.topk < 1) throw Error(fmt::format("topk {} must be >= 1", opt_.topk), "--trace-topk takes N >= 1");
  if (fs::exists(opt_.path) && !opt_.force) {
    throw Error(fmt::format("trace '{}' already exists", opt_.path.string()),
                "pass --force to overwrite it, or choose another -o path");
  }
  if (opt_.path.has_parent_path() && !fs::exists(opt_.path.parent_path())) {
    throw Error(fmt::format("folder '{}' does not exist", opt_.path.parent_path().string()));
  }
  if (const char* f = std::getenv("DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS")) fail_after_steps_ = std::atoi(f);
  file_ = std::make_unique<WriterFile>();
  const hid_t fid = H5Fcreate(opt_.path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (fid < 0) {
    throw Error(fmt::format("cannot create trace '{}'", opt_.path.string()),
                "check that the folder is writable and the disk not full");
  }
  file_->file = h5::Id(fid);
  const hid_t root = file_->file.get();
  h5::write_attr(root, "format", std::string(kFormatName));
  h5::write_attr(root, "format_version", int64_t{kFormatVersion});
  h5::write_attr(root, "tool_version", info.tool_version);
  h5::write_attr(root, "complete", int64_t{0});
  h5::write_attr(root, "stop_reason", std::string("running"));
  h5::Id meta = h5::create_group(root, "meta");
  h5::write_attr(meta.get(), "config_json", info.config_json);
  h5::write_attr(meta.get(), "model_json", info.model_json);
  h5::write_attr(meta.get(), "env_json", info.env_json);
  h5::write_attr(meta.get(), "command_line", info.command_line);
  h5::Id seq = h5::create_group(root, "seq");
  DS_H5(H5Fflush(root, H5F_SCOPE_GLOBAL));
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
  std::unique_lock lock(mu_);
  not_full_.wait(lock, [&] { return queue_.size() < opt_.queue_steps || failed_; });
  if (failed_ && !std::holds_alternative<Stop>(m)) {
    throw Error(fmt::format("writing trace '{}' failed: {}", opt_.path.string(), error_),
                "the trace keeps every step written before the failure (complete=0)");
  }
  queue_.push_back(std::move(m));
  not_empty_.notify_one();
}

void TraceWriter::begin_sequence(int seq, const std::vector<int32_t>& prompt) {
  push(Begin{seq, prompt});
}
void TraceWriter::append(StepRecord step) { push(std::move(step)); }
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

void TraceWriter::run() {
  while (true) {
    Message m;
    {
      std::unique_lock lock(mu_);
      not_empty_.wait(lock, [&] { return !queue_.empty(); });
      m = std::move(queue_.front());
      queue_.pop_front();
      not_full_.notify_one();
    }
    if (std::holds_alternative<Stop>(m)) return;
    if (failed()) continue;  // after a failure, drain without writing
    try {
      std::visit([this](auto& msg) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(msg)>, Stop>) handle(msg);
      }, m);
      maybe_flush(false);
    } catch (const std::exception& e) {
      std::lock_guard lock(mu_);
      failed_ = true;
      error_ = e.what();
      not_full_.notify_all();
    }
  }
}

void TraceWriter::handle(Begin& m) {
  auto s = std::make_unique<SeqState>();
  h5::Id seq_group = h5::open_group(file_->file.get(), "seq");
  s->group = h5::create_group(seq_group.get(), std::to_string(m.seq));
  s->prompt_len = static_cast<int>(m.prompt.size());
  s->tokens = h5::create_growing(s->group.get(), "tokens", h5::Elem::I32, 0, 4096);
  h5::write_rows(s->tokens.get(), h5::Elem::I32, 0, static_cast<int64_t>(m.prompt.size()), 0,
                 m.prompt.data());
  s->n_tokens = static_cast<int64_t>(m.prompt.size());
  h5::write_attr(s->group.get(), "prompt_len", int64_t{s->prompt_len});
  h5::write_attr(s->group.get(), "gen_len", int64_t{0});
  h5::write_attr(s->group.get(), "stop_reason", std::string("running"));
  seqs_[m.seq] = std::move(s);
}

void TraceWriter::handle(StepRecord& m) {
  auto it = seqs_.find(m.seq);
  if (it == seqs_.end()) throw Error(fmt::format("trace writer: step for unknown sequence {}", m.seq));
  SeqState& s = *it->second;
  if (fail_after_steps_ >= 0 && steps_written_ >= fail_after_steps_) {
    flush(s);  // what came before the failing step reaches the disk, as it would have
    file_->kernels.flush(file_->file.get());
    throw Error("No space left on device (injected by DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS)");
  }
  const int64_t n = m.n_rows;
  for (auto& h : m.hidden) {
    auto [buf, added] = s.hidden_buf.try_emplace(h.site);
    if (added) s.site_order.emplace_back(h.site, h.width);
    buf->second.insert(buf->second.end(), h.values.begin(), h.values.end());
  }
  if (!m.logits.empty()) {
    s.V = m.vocab;
    s.K = std::min(opt_.topk, s.V);
    for (int64_t r = 0; r < n; ++r) {
      std::span<const double> row(m.logits.data() + r * s.V, static_cast<size_t>(s.V));
      TopK t = top_k(row, s.K);
      s.ids_buf.insert(s.ids_buf.end(), t.ids.begin(), t.ids.end());
      for (double v : t.logits) s.vals_buf.push_back(static_cast<float>(v));
      s.lse_buf.push_back(static_cast<float>(log_sum_exp(row)));
    }
    if (opt_.full_logits) s.full_buf.insert(s.full_buf.end(), m.logits.begin(), m.logits.end());
  }
  s.tokens_buf.insert(s.tokens_buf.end(), m.new_tokens.begin(), m.new_tokens.end());
  s.buffered_rows += n;
  ++steps_written_;
  if (s.buffered_rows >= kFlushRows) flush(s);
}

// Writes the buffered rows of a sequence to every dataset (creating them on first use). On
// failure the datasets are cut back to the rows written before, and the error propagates.
void TraceWriter::flush(SeqState& s) {
  if (s.buffered_rows == 0 && s.tokens_buf.empty()) return;
  try {
    const int64_t at = s.rows, n = s.buffered_rows;
    const h5::Elem he = hidden_elem(opt_.hidden_dtype);
    std::vector<uint16_t> bits;
    for (const auto& [site, width] : s.site_order) {
      auto& d = s.hidden[site];
      if (!d) {
        d = h5::create_growing(s.group.get(), "hidden/" + site, he, width,
                               chunk_rows_for(width, h5::elem_size(he)));
      }
      const std::vector<float>& v = s.hidden_buf[site];
      if (he == h5::Elem::F32) {
        h5::write_rows(d.get(), he, at, n, width, v.data());
      } else {
        bits.resize(v.size());
        narrow(v.data(), bits.data(), v.size(), opt_.hidden_dtype);
        h5::write_rows(d.get(), he, at, n, width, bits.data());
      }
    }
    if (!s.lse_buf.empty()) {
      if (!s.topk_ids) {
        s.topk_ids = h5::create_growing(s.group.get(), "logits/topk_ids", h5::Elem::I32, s.K,
                                        chunk_rows_for(s.K, 4));
        s.topk_logits = h5::create_growing(s.group.get(), "logits/topk_logits", h5::Elem::F32,
                                           s.K, chunk_rows_for(s.K, 4));
        s.lse = h5::create_growing(s.group.get(), "logits/lse", h5::Elem::F32, 0, 4096);
        if (opt_.full_logits) {
          s.full = h5::create_growing(s.group.get(), "logits/full", h5::Elem::F32, s.V,
                                      chunk_rows_for(s.V, 4));
        }
      }
      h5::write_rows(s.topk_ids.get(), h5::Elem::I32, at, n, s.K, s.ids_buf.data());
      h5::write_rows(s.topk_logits.get(), h5::Elem::F32, at, n, s.K, s.vals_buf.data());
      h5::write_rows(s.lse.get(), h5::Elem::F32, at, n, 0, s.lse_buf.data());
      if (s.full) h5::write_rows(s.full.get(), h5::Elem::F32, at, n, s.V, s.full_buf.data());
    }
    h5::write_rows(s.tokens.get(), h5::Elem::I32, s.n_tokens,
                   static_cast<int64_t>(s.tokens_buf.size()), 0, s.tokens_buf.data());
    s.rows += n;
    s.n_tokens += static_cast<int64_t>(s.tokens_buf.size());
    h5::write_attr(s.group.get(), "gen_len", s.n_tokens - s.prompt_len);
  } catch (...) {
    rollback(s);
    throw;
  }
  for (auto& [site, v] : s.hidden_buf) v.clear();
  s.ids_buf.clear();
  s.vals_buf.clear();
  s.lse_buf.clear();
  s.full_buf.clear();
  s.tokens_buf.clear();
  s.buffered_rows = 0;
}

void TraceWriter::handle(End& m) {
  auto it = seqs_.find(m.seq);
  if (it == seqs_.end()) return;
  flush(*it->second);
  h5::write_attr(it->second->group.get(), "stop_reason", m.stop_reason);
}

void TraceWriter::handle(Kernels& m) {
  file_->kernels.add(std::move(m.records));
  if (file_->kernels.buffered() >= kFlushKernelRows) file_->kernels.flush(file_->file.get());
}

// Cuts every dataset of the sequence back to the last fully written step.
void TraceWriter::rollback(SeqState& s) {
  auto cut = [](const h5::Id& d, int64_t rows) {
    if (!d) return;
    hsize_t dims[2] = {0, 0};
    h5::Id space(H5Dget_space(d.get()));
    if (!space) return;
    const int rank = H5Sget_simple_extent_dims(space.get(), dims, nullptr);
    if (rank < 1) return;
    dims[0] = static_cast<hsize_t>(rows);
    H5Dset_extent(d.get(), dims);
  };
  for (auto& [site, d] : s.hidden) cut(d, s.rows);
  cut(s.topk_ids, s.rows);
  cut(s.topk_logits, s.rows);
  cut(s.lse, s.rows);
  cut(s.full, s.rows);
  cut(s.tokens, s.n_tokens);
}

void TraceWriter::maybe_flush(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (force || now - file_->last_flush > std::chrono::milliseconds(500)) {
    for (auto& [i, s] : seqs_) flush(*s);
    file_->kernels.flush(file_->file.get());
    DS_H5(H5Fflush(file_->file.get(), H5F_SCOPE_GLOBAL));
    file_->last_flush = now;
  }
}

bool TraceWriter::finish(bool complete, const std::string& stop_reason) {
  if (finished_) return !failed();
  finished_ = true;
  {
    std::unique_lock lock(mu_);
    queue_.push_back(Stop{});  // never blocks: Stop may exceed the bound
    not_empty_.notify_one();
  }
  thread_.join();
  bool ok = !failed();
  try {
    if (ok) {
      for (auto& [i, s] : seqs_) flush(*s);  // steps still buffered when the run stopped
      file_->kernels.flush(file_->file.get());
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    failed_ = true;
    error_ = e.what();
    ok = false;
  }
  if (!ok) file_->kernels.discard();  // after a write failure nothing more is written
  try {
    const hid_t root = file_->file.get();
    for (auto& [i, s] : seqs_) {
      if (h5::read_attr_string(s->group.get(), "stop_reason") == "running") {
        h5::write_attr(s->group.get(), "stop_reason", std::string("interrupted"));
      }
    }
    h5::write_attr(root, "complete", int64_t{complete && ok ? 1 : 0});
    h5::write_attr(root, "stop_reason", ok ? stop_reason : std::string("interrupted"));
    if (!ok) h5::write_attr(root, "error", error());
    seqs_.clear();
    maybe_flush(true);
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    if (!failed_) {
      failed_ = true;
      error_ = e.what();
    }
  }
  seqs_.clear();
  file_.reset();
  return !failed();
}

}  // namespace ds::trace
