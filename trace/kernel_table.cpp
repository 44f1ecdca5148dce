// The /kernels table: column datasets appended in batches, validated and read whole.
#include "trace/kernel_table.h"

#include <fmt/format.h>

#include <array>

#include "common/error.h"
#include "trace/schema.h"

namespace ds::trace {
namespace {

// Rows per chunk of every column: a few forward passes' launches of a large model.
constexpr int64_t kChunkRows = 1024;

std::string column_path(const char* column) {
  return fmt::format("{}/{}", kKernelsGroup, column);
}

}  // namespace

void KernelTableWriter::add(std::vector<KernelRecord> records) {
  if (buf_.empty()) {
    buf_ = std::move(records);
  } else {
    buf_.insert(buf_.end(), std::make_move_iterator(records.begin()),
                std::make_move_iterator(records.end()));
  }
}

void KernelTableWriter::flush(hid_t file) {
  if (buf_.empty()) return;
  const int64_t n = static_cast<int64_t>(buf_.size());
  try {
    if (!pass_) create(file);
    std::vector<int32_t> pass, grid, block;
    std::vector<int64_t> duration;
    std::vector<std::string> site, op, name;
    pass.reserve(buf_.size());
    grid.reserve(3 * buf_.size());
    block.reserve(3 * buf_.size());
    duration.reserve(buf_.size());
    site.reserve(buf_.size());
    op.reserve(buf_.size());
    name.reserve(buf_.size());
    for (auto& r : buf_) {
      pass.push_back(r.pass);
      grid.insert(grid.end(), r.grid.begin(), r.grid.end());
      block.insert(block.end(), r.block.begin(), r.block.end());
      duration.push_back(r.duration_ns);
      site.push_back(std::move(r.site));
      op.push_back(std::move(r.op));
      name.push_back(std::move(r.name));
    }
    buf_.clear();
    h5::write_rows(pass_.get(), NumberFormat::i32, rows_, n, 0, pass.data());
    h5::write_string_rows(site_.get(), rows_, site);
    h5::write_string_rows(op_.get(), rows_, op);
    h5::write_string_rows(name_.get(), rows_, name);
    h5::write_rows(grid_.get(), NumberFormat::i32, rows_, n, 3, grid.data());
    h5::write_rows(block_.get(), NumberFormat::i32, rows_, n, 3, block.data());
    h5::write_rows(duration_.get(), NumberFormat::i64, rows_, n, 0, duration.data());
  } catch (...) {
    rollback();
    throw;
  }
  rows_ += n;
}

void KernelTableWriter::create(hid_t file) {
  const int z = deflate_level_;
  pass_ = h5::create_growing(file, column_path("pass"), NumberFormat::i32, 0, kChunkRows, z);
  site_ = h5::create_growing_strings(file, column_path("site"), kChunkRows, z);
  op_ = h5::create_growing_strings(file, column_path("op"), kChunkRows, z);
  name_ = h5::create_growing_strings(file, column_path("name"), kChunkRows, z);
  grid_ = h5::create_growing(file, column_path("grid"), NumberFormat::i32, 3, kChunkRows, z);
  block_ = h5::create_growing(file, column_path("block"), NumberFormat::i32, 3, kChunkRows, z);
  duration_ =
      h5::create_growing(file, column_path("duration_ns"), NumberFormat::i64, 0, kChunkRows, z);
}

void KernelTableWriter::open(hid_t file) {
  auto open_column = [&](const char* c) {
    return h5::Id(DS_H5_ID(H5Dopen2(file, column_path(c).c_str(), H5P_DEFAULT)));
  };
  pass_ = open_column("pass");
  site_ = open_column("site");
  op_ = open_column("op");
  name_ = open_column("name");
  grid_ = open_column("grid");
  block_ = open_column("block");
  duration_ = open_column("duration_ns");
}

void KernelTableWriter::close() {
  for (h5::Id* d : {&pass_, &site_, &op_, &name_, &grid_, &block_, &duration_}) d->reset();
}

bool KernelTableWriter::exists_in(hid_t file) const {
  return has_kernel_table(file);
}

void KernelTableWriter::rollback() {
  for (const h5::Id* d : {&pass_, &site_, &op_, &name_, &grid_, &block_, &duration_}) {
    h5::cut_rows(*d, rows_);
  }
}

bool has_kernel_table(hid_t file) {
  return h5::exists(file, kKernelsGroup);
}

namespace {

// What a malformed /kernels is reported as: the trace, what is wrong, and where the columns are
// specified.
Error malformed_kernels(const std::string& trace, const std::string& what) {
  return Error(fmt::format("trace '{}': /kernels {}", trace, what),
               "the trace is damaged, or its /kernels was not written by driftscope (the columns "
               "are listed in docs/trace-format.md, \"/kernels\")");
}

// A column of /kernels as read_kernel_table expects it, and once opened its dataset and rows.
struct KernelColumn {
  const char* name;
  bool strings;
  int64_t width;  // 0: rank 1; 3: [N, 3]
  h5::Id d;
  int64_t rows = 0;
};
using KernelColumns = std::array<KernelColumn, 7>;

// Every column opened and checked: its type class, rank and width.
KernelColumns open_kernel_columns(hid_t group, const std::string& trace) {
  KernelColumns cols{{{"pass", false, 0, {}},
                      {"site", true, 0, {}},
                      {"op", true, 0, {}},
                      {"name", true, 0, {}},
                      {"grid", false, 3, {}},
                      {"block", false, 3, {}},
                      {"duration_ns", false, 0, {}}}};
  for (auto& c : cols) {
    if (!h5::exists(group, c.name)) {
      throw malformed_kernels(trace, fmt::format("lacks the column '{}'", c.name));
    }
    const hid_t d = H5Dopen2(group, c.name, H5P_DEFAULT);
    if (d < 0) throw malformed_kernels(trace, fmt::format("column '{}' is not a dataset", c.name));
    c.d = h5::Id(d);
    const H5T_class_t cls = h5::dataset_class(d);
    if (c.strings ? cls != H5T_STRING : cls != H5T_INTEGER) {
      throw malformed_kernels(trace, fmt::format("column '{}' is not of {}", c.name,
                                                 c.strings ? "strings" : "integers"));
    }
    const auto shape = h5::dataset_shape(d);
    const bool ok = c.width == 0 ? shape.size() == 1 : shape.size() == 2 && shape[1] == c.width;
    if (!ok) {
      throw malformed_kernels(trace,
                              fmt::format("column '{}' has shape [{}], expected {}", c.name,
                                          fmt::join(shape, ", "), c.width == 0 ? "[N]" : "[N, 3]"));
    }
    c.rows = shape[0];
  }
  return cols;
}

// The rows every column holds, checked: the same in each, and at most kMaxKernelRows.
int64_t kernel_rows(const KernelColumns& cols, const std::string& trace) {
  const int64_t n = cols[0].rows;
  for (const auto& c : cols) {
    if (c.rows != n) {
      std::vector<std::string> lengths;
      for (const auto& k : cols) lengths.push_back(fmt::format("{} {}", k.name, k.rows));
      throw malformed_kernels(
          trace, fmt::format("has columns of unequal length ({})", fmt::join(lengths, ", ")));
    }
  }
  // Sized from the file's claim before anything is read: bounded (docs/cli.md, "Input limits")
  if (n > kMaxKernelRows) {
    throw malformed_kernels(
        trace,
        fmt::format("claims {} kernel launches, more than the limit of {}", n, kMaxKernelRows));
  }
  return n;
}

// The n rows of the checked columns, as records.
std::vector<KernelRecord> read_kernel_records(const KernelColumns& cols, int64_t n) {
  const size_t rows = static_cast<size_t>(n);
  std::vector<int32_t> pass(rows), grid(3 * rows), block(3 * rows);
  std::vector<int64_t> duration(rows);
  h5::read_rows(cols[0].d.get(), NumberFormat::i32, 0, n, 0, pass.data());
  const auto site = h5::read_string_rows(cols[1].d.get(), 0, n);
  const auto op = h5::read_string_rows(cols[2].d.get(), 0, n);
  const auto name = h5::read_string_rows(cols[3].d.get(), 0, n);
  h5::read_rows(cols[4].d.get(), NumberFormat::i32, 0, n, 3, grid.data());
  h5::read_rows(cols[5].d.get(), NumberFormat::i32, 0, n, 3, block.data());
  h5::read_rows(cols[6].d.get(), NumberFormat::i64, 0, n, 0, duration.data());
  std::vector<KernelRecord> out(rows);
  for (size_t i = 0; i < rows; ++i) {
    KernelRecord& r = out[i];
    r.pass = pass[i];
    r.site = site[i];
    r.op = op[i];
    r.name = name[i];
    for (size_t k = 0; k < 3; ++k) {
      r.grid[k] = grid[3 * i + k];
      r.block[k] = block[3 * i + k];
    }
    r.duration_ns = duration[i];
  }
  return out;
}

}  // namespace

std::vector<KernelRecord> read_kernel_table(hid_t file, const std::string& trace) {
  if (!has_kernel_table(file)) return {};
  h5::Id group;
  try {
    group = h5::open_group(file, kKernelsGroup);
  } catch (const Error&) {
    throw malformed_kernels(trace, "is not a group");
  }
  const KernelColumns cols = open_kernel_columns(group.get(), trace);
  return read_kernel_records(cols, kernel_rows(cols, trace));
}

}  // namespace ds::trace
