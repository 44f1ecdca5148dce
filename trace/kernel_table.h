// The optional /kernels table of a trace (docs/trace-format.md "/kernels"): KernelRecords stored
// as one growing, compressed dataset per column, appended by the trace writer's thread and read
// whole by the reader (one row per kernel launch: modest next to the hidden states).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/h5.h"
#include "trace/kernel_records.h"

namespace ds::trace {

// Buffers records and appends them to /kernels of an open trace file. The group and its columns
// are created on the first flush that has rows, so a run that records no kernel has no /kernels.
// Single-threaded: the writer thread owns it.
class KernelTableWriter {
 public:
  void add(std::vector<KernelRecord> records);
  size_t buffered() const { return buf_.size(); }
  int64_t rows() const { return rows_; }  // rows on disk, the same in every column

  // Appends the buffered rows to every column. On failure every column is cut back to the rows
  // written before (so the columns stay of equal length) and the error propagates.
  void flush(hid_t file);
  // Drops the buffered rows (after a write failure nothing more is written).
  void discard() { buf_.clear(); }
  // The columns: created (empty) in a file without them, or opened; closed (so that the file can
  // be closed and reopened: the trace writer's SWMR mode creates nothing, see swmr_file.h).
  void create(hid_t file);
  // The filters of the columns create() makes, as h5::create_growing (the trace's --compression).
  void set_deflate_level(int deflate_level) { deflate_level_ = deflate_level; }
  void open(hid_t file);
  void close();
  bool is_open() const { return static_cast<bool>(pass_); }
  bool exists_in(hid_t file) const;

 private:
  void rollback();
  h5::Id pass_, site_, op_, name_, grid_, block_, duration_;
  int64_t rows_ = 0;
  int deflate_level_ = h5::kDefaultDeflateLevel;
  std::vector<KernelRecord> buf_;
};

// Whether the file has a /kernels group.
bool has_kernel_table(hid_t file);

// The most kernel launches read_kernel_table reads (about 2.5 GB of records): a 7B model's
// 8k-token decode launches about 2.4 million.
constexpr int64_t kMaxKernelRows = int64_t{1} << 24;

// Every row of /kernels in order (empty when there is no table). Throws ds::Error with a hint
// when the table is malformed: a missing column, a column of the wrong type or shape, columns of
// unequal length, more than kMaxKernelRows rows. `trace` names the file in messages.
std::vector<KernelRecord> read_kernel_table(hid_t file, const std::string& trace);

}  // namespace ds::trace
