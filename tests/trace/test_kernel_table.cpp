// The optional /kernels table: records written through the trace writer read back equal, the
// HDF5 layout docs/trace-format.md promises (types, shapes, chunked and compressed), no table
// when there are no records, rows kept by an interrupted or failing writer, and clear errors for
// a malformed table.
#include <fmt/format.h>
#include <hdf5.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <ostream>

#include "common/error.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace ds::trace {
// For CHECK(a == b) on records and their messages (the struct itself has no comparison); static:
// local to this file, found by argument-dependent lookup.
static bool operator==(const KernelRecord& x, const KernelRecord& y) {
  return x.pass == y.pass && x.site == y.site && x.op == y.op && x.name == y.name &&
         x.grid == y.grid && x.block == y.block && x.duration_ns == y.duration_ns;
}
static std::ostream& operator<<(std::ostream& os, const KernelRecord& r) {
  return os << "{" << r.pass << " " << r.site << " " << r.op << " " << r.name << " (" << r.grid[0]
            << "," << r.grid[1] << "," << r.grid[2] << ") (" << r.block[0] << "," << r.block[1]
            << "," << r.block[2] << ") " << r.duration_ns << "}";
}
}  // namespace ds::trace

namespace {

using ds::trace::KernelRecord;

ds::trace::WriterOptions options(const std::filesystem::path& p) {
  ds::trace::WriterOptions w;
  w.path = p;
  w.topk = 2;
  return w;
}

// One forward pass of one sequence: n rows of a width-2 embed tap, no logits.
ds::trace::StepRecord step(int n, std::vector<int32_t> new_tokens) {
  ds::trace::StepRecord s;
  s.n_rows = n;
  s.hidden.push_back({"embed", 2, std::vector<float>(static_cast<size_t>(2 * n), 1.5f)});
  s.new_tokens = std::move(new_tokens);
  return s;
}

// Records as a CUPTI recorder would produce them, written out by hand.
std::vector<KernelRecord> pass0() {
  return {
      {0, "embed", "embedding", "embedding_gather_kernel", {3, 1, 1}, {64, 1, 1}, 1200},
      {0,
       "L0/attn_out",
       "o_proj",
       "void gemm_tiled_splitk<4>(float const*, float const*, float*, int, int, int)",
       {2, 4, 4},
       {128, 1, 1},
       3100},
      {0,
       "logits",
       "lm_head",
       "ampere_sgemm_128x64_nn",
       {1, 250, 1},
       {256, 1, 1},
       5'000'000'000},  // > 2^31: the column is int64
  };
}
std::vector<KernelRecord> pass1() {
  return {
      {1, "embed", "embedding", "embedding_gather_kernel", {1, 1, 1}, {64, 1, 1}, 900},
      {1, "L0/attn_out", "attention", "attention_decode<64, 8> ✓", {8, 1, 1}, {32, 4, 1}, 2750},
  };
}

std::vector<KernelRecord> concat(std::vector<KernelRecord> a, const std::vector<KernelRecord>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The HDF5 class, rank, dims and chunking/filters of one column, read independently of the reader.
struct ColumnLayout {
  H5T_class_t cls = H5T_NO_CLASS;
  size_t size = 0;
  bool vlen_utf8 = false;
  std::vector<hsize_t> dims;
  bool chunked = false, deflate = false, unlimited = false;
};

ColumnLayout layout(const std::filesystem::path& p, const char* column) {
  ColumnLayout c;
  hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, (std::string("kernels/") + column).c_str(), H5P_DEFAULT);
  hid_t t = H5Dget_type(d);
  c.cls = H5Tget_class(t);
  c.size = H5Tget_size(t);
  c.vlen_utf8 = c.cls == H5T_STRING && H5Tis_variable_str(t) > 0 && H5Tget_cset(t) == H5T_CSET_UTF8;
  hid_t s = H5Dget_space(d);
  const int rank = H5Sget_simple_extent_ndims(s);
  c.dims.resize(static_cast<size_t>(rank));
  std::vector<hsize_t> max(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(s, c.dims.data(), max.data());
  c.unlimited = max[0] == H5S_UNLIMITED;
  hid_t pl = H5Dget_create_plist(d);
  c.chunked = H5Pget_layout(pl) == H5D_CHUNKED;
  for (int i = 0; i < H5Pget_nfilters(pl); ++i) {
    unsigned flags = 0;
    size_t n = 0;
    c.deflate |= H5Pget_filter2(pl, static_cast<unsigned>(i), &flags, &n, nullptr, 0, nullptr,
                                nullptr) == H5Z_FILTER_DEFLATE;
  }
  H5Pclose(pl);
  H5Sclose(s);
  H5Tclose(t);
  H5Dclose(d);
  H5Fclose(f);
  return c;
}

bool has_kernels_link(const std::filesystem::path& p) {
  hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const bool has = H5Lexists(f, "kernels", H5P_DEFAULT) > 0;
  H5Fclose(f);
  return has;
}

}  // namespace

TEST_CASE("kernel table: records written through the writer read back equal",
          "[trace][kernels][kernel_table]") {
  ds::test::TempDir dir;
  const auto path = dir.path() / "k.h5";
  {
    auto o = options(path);
    o.deflate_level = 1;  // --compression deflate: the columns carry the filters
    ds::trace::TraceWriter w(o, {});
    w.begin_sequence(0, {1, 5, 6});
    w.append_kernels(pass0());
    w.append(step(3, {7}));
    w.append_kernels(pass1());
    w.append_kernels({});  // nothing to add
    w.append(step(1, {8}));
    w.end_sequence(0, "max_new");
    REQUIRE(w.finish(true, "finished"));
  }
  const auto r = ds::trace::TraceReader::open(path);
  REQUIRE(r.has_kernels());
  const auto got = r.kernels();
  const auto want = concat(pass0(), pass1());
  REQUIRE(got.size() == 5);
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == want[i]);
  // The rest of the trace reads as before: /kernels is beside /seq, not in it.
  CHECK(r.complete());
  CHECK(r.sequence_indices() == std::vector<int>{0});
  CHECK(r.sequence(0).tokens == std::vector<int32_t>{1, 5, 6, 7, 8});
  CHECK(r.sequence(0).rows == 4);

  // The layout of docs/trace-format.md, read with the HDF5 C API.
  for (const char* c : {"site", "op", "name"}) {
    INFO(c);
    const auto l = layout(path, c);
    CHECK(l.vlen_utf8);
    CHECK(l.dims == std::vector<hsize_t>{5});
  }
  for (const char* c : {"grid", "block"}) {
    INFO(c);
    const auto l = layout(path, c);
    CHECK(l.cls == H5T_INTEGER);
    CHECK(l.size == 4);
    CHECK(l.dims == std::vector<hsize_t>{5, 3});
  }
  CHECK(layout(path, "pass").size == 4);
  CHECK(layout(path, "pass").dims == std::vector<hsize_t>{5});
  CHECK(layout(path, "duration_ns").size == 8);
  for (const char* c : {"pass", "site", "op", "name", "grid", "block", "duration_ns"}) {
    INFO(c);
    const auto l = layout(path, c);
    CHECK(l.chunked);
    CHECK(l.deflate);
    CHECK(l.unlimited);
  }
}

TEST_CASE(
    "kernel table: with --compression none, the default, the columns carry no filter and read back "
    "equal",
    "[trace][kernels][kernel_table][compression]") {
  ds::test::TempDir dir;
  const auto path = dir.path() / "k.h5";
  {
    auto o = options(path);
    CHECK(o.deflate_level == 0);  // the default
    ds::trace::TraceWriter w(o, {});
    w.begin_sequence(0, {1, 5, 6});
    w.append_kernels(pass0());
    w.append(step(3, {7}));
    w.append_kernels(pass1());
    w.end_sequence(0, "max_new");
    REQUIRE(w.finish(true, "finished"));
  }
  const auto got = ds::trace::TraceReader::open(path).kernels();
  const auto want = concat(pass0(), pass1());
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == want[i]);
  for (const char* c : {"pass", "site", "op", "name", "grid", "block", "duration_ns"}) {
    INFO(c);
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, (std::string("kernels/") + c).c_str(), H5P_DEFAULT);
    hid_t pl = H5Dget_create_plist(d);
    CHECK(H5Pget_layout(pl) == H5D_CHUNKED);
    CHECK(H5Pget_nfilters(pl) == 0);
    H5Pclose(pl);
    H5Dclose(d);
    H5Fclose(f);
  }
}

TEST_CASE("kernel table: many batches across the flush size keep every row in order",
          "[trace][kernels][kernel_table]") {
  ds::test::TempDir dir;
  const auto path = dir.path() / "many.h5";
  // 3 batches of 2500 rows: the writer flushes at 4096 buffered rows and at the end.
  std::vector<KernelRecord> all;
  {
    ds::trace::TraceWriter w(options(path), {});
    for (int b = 0; b < 3; ++b) {
      std::vector<KernelRecord> batch;
      for (int i = 0; i < 2500; ++i) {
        const int k = b * 2500 + i;
        batch.push_back({k / 10,
                         fmt::format("L{}/mlp_out", k % 7),
                         "down_proj",
                         fmt::format("gemm_{}", k % 3),
                         {k, 2, 3},
                         {128, 1, k % 5},
                         10 * k});
      }
      all.insert(all.end(), batch.begin(), batch.end());
      w.append_kernels(std::move(batch));
    }
    REQUIRE(w.finish(true, "finished"));
  }
  const auto got = ds::trace::TraceReader::open(path).kernels();
  REQUIRE(got.size() == 7500);
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += !(got[i] == all[i]);
  CHECK(bad == 0);
  CHECK(got[7499].grid == std::array<int32_t, 3>{7499, 2, 3});
  CHECK(got[7499].duration_ns == 74990);
}

TEST_CASE("kernel table: no records, no /kernels group", "[trace][kernels][kernel_table]") {
  ds::test::TempDir dir;
  const auto path = dir.path() / "none.h5";
  {
    ds::trace::TraceWriter w(options(path), {});
    w.begin_sequence(0, {1});
    w.append_kernels({});
    w.append(step(1, {2}));
    w.end_sequence(0, "max_new");
    REQUIRE(w.finish(true, "finished"));
  }
  CHECK_FALSE(has_kernels_link(path));
  const auto r = ds::trace::TraceReader::open(path);
  CHECK_FALSE(r.has_kernels());
  CHECK(r.kernels().empty());
}

TEST_CASE("kernel table: an interrupted writer keeps the rows it was given",
          "[trace][kernels][kernel_table]") {
  ds::test::TempDir dir;
  SECTION("destroyed without finish (Ctrl-C unwinding the run)") {
    const auto path = dir.path() / "int.h5";
    {
      ds::trace::TraceWriter w(options(path), {});
      w.begin_sequence(0, {1, 5, 6});
      w.append(step(3, {7}));
      w.append_kernels(pass0());
      w.append(step(1, {8}));
      w.append_kernels(pass1());
    }
    const auto r = ds::trace::TraceReader::open(path);
    CHECK_FALSE(r.complete());
    CHECK(r.stop_reason() == "interrupted");
    const auto got = r.kernels();
    const auto want = concat(pass0(), pass1());
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == want[i]);
  }
  SECTION("a write failure keeps the rows queued before the failing step") {
    const auto path = dir.path() / "fail.h5";
    // The writer's test hook makes the second step fail like a full disk.
    ::setenv("DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS", "1", 1);
    ds::trace::TraceWriter w(options(path), {});
    ::unsetenv("DRIFTSCOPE_TRACE_FAIL_AFTER_STEPS");
    w.begin_sequence(0, {1, 5, 6});
    w.append_kernels(pass0());
    w.append(step(3, {7}));
    w.append_kernels(pass1());
    w.append(step(1, {8}));  // fails on the writer thread
    CHECK_FALSE(w.finish(true, "finished"));
    const auto r = ds::trace::TraceReader::open(path);
    CHECK_FALSE(r.complete());
    CHECK(r.sequence(0).rows == 3);
    const auto got = r.kernels();
    const auto want = concat(pass0(), pass1());
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == want[i]);
  }
}

TEST_CASE("kernel table: a malformed table is refused with a hint",
          "[trace][kernels][kernel_table][errors]") {
  ds::test::TempDir dir;
  const auto path = dir.path() / "bad.h5";
  {
    ds::trace::TraceWriter w(options(path), {});
    w.append_kernels(concat(pass0(), pass1()));
    REQUIRE(w.finish(true, "finished"));
  }
  auto expect_error = [&](const std::string& what) {
    const auto r = ds::trace::TraceReader::open(path);  // the rest of the trace still opens
    CHECK(r.has_kernels());
    try {
      r.kernels();
      FAIL("no error");
    } catch (const ds::Error& e) {
      CHECK_THAT(e.what(), Catch::Contains(what));
      CHECK_THAT(e.hint(), Catch::Contains("docs/trace-format.md"));
    }
  };
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "kernels/op", H5P_DEFAULT);
  const hsize_t four = 4;
  H5Dset_extent(d, &four);  // one row shorter than the others
  H5Dclose(d);
  H5Fclose(f);
  expect_error(
      "columns of unequal length (pass 5, site 5, op 4, name 5, grid 5, block 5, "
      "duration_ns 5)");

  f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(f, "kernels/block", H5P_DEFAULT);
  H5Fclose(f);
  expect_error("lacks the column 'block'");
}
