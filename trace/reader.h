// Trace reader (format v1): opens and validates a trace, then reads datasets lazily, row ranges
// at a time, so a trace of any size is never loaded whole. The exception is the optional /kernels
// table, read whole: one row per kernel launch is small next to the hidden states.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trace/dataset_rows.h"
#include "trace/h5.h"
#include "trace/kernel_records.h"

namespace ds::trace {

struct SiteInfo {
  std::string name;            // "embed", "L0/attn_out", ...
  std::vector<int64_t> shape;  // [rows, width]
  NumberFormat elem = NumberFormat::f32;
};

struct SequenceInfo {
  int index = 0;
  int prompt_len = 0;
  int gen_len = 0;
  std::string stop_reason;
  std::vector<int32_t> tokens;  // prompt then generated tokens
  int64_t rows = 0;             // positions that went through the forward pass (all datasets)
  std::vector<SiteInfo> sites;  // hidden sites in forward order
  int topk = 0;                 // K of logits/topk_*; 0 when no logits were recorded
  bool has_full_logits = false;
};

struct TopKRows {
  int k = 0;
  std::vector<int32_t> ids;   // (rows, k)
  std::vector<float> logits;  // (rows, k)
};

// A hidden site's rows located once on the reader's thread (TraceReader::plain_hidden) and read
// as float afterwards on any thread, with no HDF5 call (trace/dataset_rows.h, PlainRows). Valid
// while its reader is open.
class PlainHidden {
 public:
  int64_t rows() const { return rows_.end(); }
  // Rows [begin, begin + count) into `buffer`, as TraceReader::hidden does.
  std::span<const float> read(int64_t begin, int64_t count, std::vector<float>& buffer) const;

 private:
  friend class TraceReader;
  PlainHidden(PlainRows rows, NumberFormat elem, int64_t width)
      : rows_(std::move(rows)), elem_(elem), width_(width) {}
  PlainRows rows_;
  NumberFormat elem_;
  int64_t width_;
};

class TraceReader {
 public:
  // Throws ds::Error with a hint for a missing file, a file that is not HDF5, an HDF5 file that
  // is not a driftscope trace, a trace of an unsupported format_version, or a trace written by
  // another producer that does not conform to format v1 (trace/conformance.h: the error names
  // the first non-conforming dataset or attribute).
  static TraceReader open(const std::filesystem::path& path);
  // The same checks on a trace held in memory (an HDF5 file image, opened with the core driver;
  // the image is copied). `name` stands for the path in messages; file_size() is unavailable.
  static TraceReader open_image(std::span<const std::byte> image, const std::string& name);

  const std::filesystem::path& path() const { return path_; }
  int format_version() const { return format_version_; }
  bool complete() const { return complete_; }
  const std::string& stop_reason() const { return stop_reason_; }
  const std::string& tool_version() const { return tool_version_; }
  // Who wrote the trace: the root attribute `producer` when present (python/driftscope_trace
  // writes one, e.g. "driftscope_trace 0.1.0 (transformers 4.46.3, torch 1.13.0)"), else
  // "driftscope <tool_version>". A producer other than driftscope is validated on open.
  const std::string& producer() const { return producer_; }
  const std::string& config_json() const { return config_json_; }
  const std::string& model_json() const { return model_json_; }
  const std::string& env_json() const { return env_json_; }
  const std::string& command_line() const { return command_line_; }
  uint64_t file_size() const;
  // A file shorter than HDF5's record of its end (a partial copy): opened all the same, with what
  // lies before the cut readable; sequences or rows past it fail to read as damaged.
  struct CutShort {
    uint64_t on_disk = 0, expected = 0;  // bytes
  };
  const std::optional<CutShort>& cut_short() const { return cut_short_; }

  std::vector<int> sequence_indices() const;  // sorted
  // Throws ds::Error "trace 'PATH' is damaged: /seq/N/..." when the sequence's group is not
  // consistent (trace/conformance.h, check_sequence): a tokens dataset not of rank 1, a negative
  // gen_len, hidden sites of unequal width, datasets of unequal row counts, ... Callers that can
  // go on without it (show, diff) name it and go on.
  SequenceInfo sequence(int seq) const;

  // Row reads open each dataset once (kept open while reads stay in one sequence) and read its
  // chunks directly (trace/dataset_rows.h). A chunk that cannot be read or inflated throws
  // ds::Error naming the dataset and rows.
  // Rows [begin, begin+count) of a hidden site, converted to float (f16/bf16 widened exactly).
  std::vector<float> hidden(int seq, const std::string& site, int64_t begin, int64_t count) const;
  // The same rows read into `buffer` (grown when too small, never shrunk, so a loop over blocks
  // allocates and zeroes once); the span is its first count x width values.
  std::span<const float> hidden(int seq, const std::string& site, int64_t begin, int64_t count,
                                std::vector<float>& buffer) const;
  // Rows [0, rows) of a hidden site located for reads on another thread: for a trace opened
  // read-only from a file whose site is stored unfiltered with every chunk on disk; nullopt
  // otherwise (hidden() reads it). Throws as hidden() does for a missing or malformed site.
  std::optional<PlainHidden> plain_hidden(int seq, const std::string& site, int64_t rows) const;
  TopKRows topk(int seq, int64_t begin, int64_t count) const;
  std::vector<float> lse(int seq, int64_t begin, int64_t count) const;
  std::vector<float> full_logits(int seq, int64_t begin, int64_t count) const;  // (count, V)
  // The same rows read into `buffer` (grown when too small, never shrunk), as hidden() does.
  std::span<const float> full_logits(int seq, int64_t begin, int64_t count,
                                     std::vector<float>& buffer) const;

  // The optional /kernels table: every GPU kernel launch of a CUDA run recorded with CUPTI, with
  // the tap site it contributes to. Absent (false, empty) on CPU traces. kernels() returns the
  // rows in file order, read whole, and throws ds::Error with a hint on a malformed table (a
  // missing column, a wrong type or shape, columns of unequal length).
  bool has_kernels() const;
  std::vector<KernelRecord> kernels() const;

 private:
  // Validates the root of a file just opened (owns `fid` from here on).
  // `lenient`: a file cut short, whose status attributes may lie past the cut (read as absent).
  static TraceReader from_open_file(hid_t fid, const std::filesystem::path& path,
                                    bool lenient = false);
  void read_root();  // the root's attributes and /meta, checked
  h5::Id dataset(int seq, const std::string& rel) const;
  SequenceInfo read_sequence(int seq, hid_t group) const;
  // The open dataset /seq/<seq>/<rel>, read as `as` (default: its own element type); the
  // datasets of other sequences are closed.
  DatasetRows& rows_of(int seq, const std::string& rel, std::optional<NumberFormat> as) const;
  DatasetRows& hidden_rows(int seq, const std::string& site, int64_t begin, int64_t count) const;
  struct OpenDatasets;
  std::filesystem::path path_;
  std::shared_ptr<h5::Id> file_;
  std::shared_ptr<OpenDatasets> open_;
  int format_version_ = 0;
  std::optional<CutShort> cut_short_;
  bool lenient_ = false;
  bool complete_ = false;
  std::string stop_reason_, tool_version_, producer_, config_json_, model_json_, env_json_,
      command_line_;
};

}  // namespace ds::trace
