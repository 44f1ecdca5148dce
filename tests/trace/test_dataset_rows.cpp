// The direct-chunk read path (trace/dataset_rows.h) against the values written: datasets of every
// layout and filter pipeline, made with the HDF5 C API here, read over ranges that start and end
// inside chunks, cross them, and cover the partial last chunk. The fast path and the H5Dread
// fallback must give the same values, and damaged chunk bytes must be an error, not numbers.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "tests/support/temp_dir.h"
#include "trace/dataset_rows.h"
#include "trace/h5.h"

namespace {

using ds::NumberFormat;
using ds::h5::Id;

enum class Pipe { none, deflate, shuffle_deflate, fletcher, contiguous, split_columns };

// A [rows, width] dataset of `type` holding `data` (rows x width elements of elem_bytes).
Id make(hid_t file, const std::string& name, hid_t type, int64_t rows, int64_t width,
        int64_t chunk_rows, Pipe pipe, const void* data, hid_t mem_type) {
  hsize_t dims[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(width)};
  Id space(H5Screate_simple(2, dims, nullptr));
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE));
  if (pipe != Pipe::contiguous) {
    hsize_t chunk[2] = {static_cast<hsize_t>(chunk_rows),
                        static_cast<hsize_t>(pipe == Pipe::split_columns ? width / 2 : width)};
    H5Pset_chunk(dcpl.get(), 2, chunk);
  }
  if (pipe == Pipe::shuffle_deflate || pipe == Pipe::split_columns) H5Pset_shuffle(dcpl.get());
  if (pipe == Pipe::deflate || pipe == Pipe::shuffle_deflate || pipe == Pipe::split_columns)
    H5Pset_deflate(dcpl.get(), 4);
  if (pipe == Pipe::fletcher) H5Pset_fletcher32(dcpl.get());
  Id d(H5Dcreate2(file, name.c_str(), type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  REQUIRE(d);
  REQUIRE(H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  return d;
}

// Every (begin, count) of interest for `rows` rows in chunks of `chunk` rows.
std::vector<std::pair<int64_t, int64_t>> ranges(int64_t rows, int64_t chunk) {
  std::vector<std::pair<int64_t, int64_t>> r = {{0, rows},
                                                {0, 1},
                                                {rows - 1, 1},
                                                {1, chunk},
                                                {chunk, chunk},
                                                {chunk - 1, 2},
                                                {chunk + 3, rows - chunk - 3},
                                                {2, 3}};
  // Consecutive blocks that do not end on chunk boundaries, as the diff reads them.
  for (int64_t b = 0; b < rows; b += chunk + 3) r.emplace_back(b, std::min(chunk + 3, rows - b));
  return r;
}

}  // namespace

TEST_CASE("dataset rows: every layout and pipeline reads back the values written",
          "[trace][read]") {
  ds::h5::silence_errors();
  ds::test::TempDir dir;
  const auto path = dir.path() / "layouts.h5";
  Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const int64_t rows = 37, width = 24, chunk = 8;  // 5 chunks, the last one partial
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3, 3);
  std::vector<float> f(static_cast<size_t>(rows * width));
  for (auto& x : f) x = u(rng);
  std::vector<int32_t> ints(f.size());
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<int32_t>(i * 7919) - 5000;
  std::vector<uint16_t> bits(f.size());
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i * 40503u);

  struct Case {
    std::string name;
    Pipe pipe;
    NumberFormat elem;
    bool fast;
  };
  const std::vector<Case> cases = {
      {"f32_none", Pipe::none, NumberFormat::f32, true},
      {"f32_deflate", Pipe::deflate, NumberFormat::f32, true},
      {"f32_shuffle_deflate", Pipe::shuffle_deflate, NumberFormat::f32, true},
      {"f32_fletcher", Pipe::fletcher, NumberFormat::f32, false},
      {"f32_contiguous", Pipe::contiguous, NumberFormat::f32, false},
      {"f32_split_columns", Pipe::split_columns, NumberFormat::f32, false},
      {"i32_shuffle_deflate", Pipe::shuffle_deflate, NumberFormat::i32, true},
      {"bf16_shuffle_deflate", Pipe::shuffle_deflate, NumberFormat::bf16, true},
      {"f16_shuffle_deflate", Pipe::shuffle_deflate, NumberFormat::f16, true},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const void* data = c.elem == NumberFormat::f32   ? static_cast<const void*>(f.data())
                       : c.elem == NumberFormat::i32 ? static_cast<const void*>(ints.data())
                                                     : static_cast<const void*>(bits.data());
    const hid_t mem = c.elem == NumberFormat::f32   ? H5T_NATIVE_FLOAT
                      : c.elem == NumberFormat::i32 ? H5T_NATIVE_INT32
                      : c.elem == NumberFormat::f16 ? ds::h5::file_type(NumberFormat::f16)
                                                    : H5T_NATIVE_UINT16;
    Id d =
        make(file.get(), c.name, ds::h5::file_type(c.elem), rows, width, chunk, c.pipe, data, mem);
    ds::trace::DatasetRows r(std::move(d), c.elem);
    CHECK(r.fast() == c.fast);
    const size_t eb = ds::traits(c.elem).bytes;
    for (const auto& [b, n] : ranges(rows, chunk)) {
      INFO("rows " << b << " + " << n);
      std::vector<uint8_t> got(static_cast<size_t>(n * width) * eb, 0xEE);
      r.read(b, n, got.data());
      const auto* want = static_cast<const uint8_t*>(data) + static_cast<size_t>(b * width) * eb;
      CHECK(std::memcmp(got.data(), want, got.size()) == 0);
    }
  }
  // An int64 dataset read as int32: HDF5 converts (the fallback), values as written.
  std::vector<int64_t> wide(ints.begin(), ints.end());
  Id d64 = make(file.get(), "i64", H5T_STD_I64LE, rows, width, chunk, Pipe::shuffle_deflate,
                wide.data(), H5T_NATIVE_INT64);
  ds::trace::DatasetRows r64(std::move(d64), NumberFormat::i32);
  CHECK_FALSE(r64.fast());
  std::vector<int32_t> got(static_cast<size_t>(rows * width));
  r64.read(0, rows, got.data());
  CHECK(got == ints);
  CHECK_THROWS_AS(r64.read(rows - 1, 2, got.data()), ds::Error);
}

TEST_CASE("dataset rows: unfiltered rows located once read the same on another thread",
          "[trace][read]") {
  ds::h5::silence_errors();
  ds::test::TempDir dir;
  const auto path = dir.path() / "plain.h5";
  const int64_t rows = 37, width = 24, chunk = 8;
  std::vector<float> f(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < f.size(); ++i) f[i] = 0.5f * static_cast<float>(i) - 100.0f;
  {
    Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    make(file.get(), "none", H5T_IEEE_F32LE, rows, width, chunk, Pipe::none, f.data(),
         H5T_NATIVE_FLOAT);
    make(file.get(), "deflate", H5T_IEEE_F32LE, rows, width, chunk, Pipe::deflate, f.data(),
         H5T_NATIVE_FLOAT);
    // Only the first chunk written: the others are fill values, not on disk.
    hsize_t dims[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(width)};
    Id space(H5Screate_simple(2, dims, nullptr));
    Id dcpl(H5Pcreate(H5P_DATASET_CREATE));
    hsize_t ch[2] = {static_cast<hsize_t>(chunk), static_cast<hsize_t>(width)};
    H5Pset_chunk(dcpl.get(), 2, ch);
    Id sparse(H5Dcreate2(file.get(), "sparse", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl.get(),
                         H5P_DEFAULT));
    hsize_t offset[2] = {0, 0};
    REQUIRE(H5Dwrite_chunk(sparse.get(), H5P_DEFAULT, 0, offset,
                           static_cast<size_t>(chunk * width) * 4, f.data()) >= 0);
  }
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  const ds::trace::PlainFile pf = ds::trace::plain_file(file.get());
  REQUIRE(pf.fd >= 0);
  CHECK(pf.size == std::filesystem::file_size(path));
  ds::trace::DatasetRows none(Id(H5Dopen2(file.get(), "none", H5P_DEFAULT)), NumberFormat::f32, pf);
  ds::trace::DatasetRows deflate(Id(H5Dopen2(file.get(), "deflate", H5P_DEFAULT)),
                                 NumberFormat::f32, pf);
  ds::trace::DatasetRows sparse(Id(H5Dopen2(file.get(), "sparse", H5P_DEFAULT)), NumberFormat::f32,
                                pf);
  CHECK_FALSE(deflate.plain(0, rows).has_value());
  CHECK_FALSE(sparse.plain(0, rows).has_value());
  CHECK(sparse.plain(0, chunk).has_value());
  CHECK_FALSE(none.plain(0, rows + 1).has_value());
  const auto p = none.plain(3, rows - 3);
  REQUIRE(p.has_value());
  CHECK(p->begin() == 3);
  CHECK(p->end() == rows);
  // Read on a thread that makes no HDF5 call, over ranges inside and across chunks.
  std::vector<std::pair<int64_t, int64_t>> want_ranges;
  for (const auto& [b, n] : ranges(rows, chunk)) {
    if (b >= 3) want_ranges.emplace_back(b, n);
  }
  std::vector<std::vector<float>> got(want_ranges.size());
  std::thread t([&] {
    for (size_t i = 0; i < want_ranges.size(); ++i) {
      got[i].assign(static_cast<size_t>(want_ranges[i].second * width), -1.0f);
      p->read(want_ranges[i].first, want_ranges[i].second, got[i].data());
    }
  });
  t.join();
  for (size_t i = 0; i < want_ranges.size(); ++i) {
    const auto [b, n] = want_ranges[i];
    INFO("rows " << b << " + " << n);
    CHECK(std::equal(got[i].begin(), got[i].end(), f.begin() + b * width));
  }
  std::vector<float> out(static_cast<size_t>(rows * width));
  CHECK_THROWS_AS(p->read(0, 4, out.data()), ds::Error);  // before the rows it was made for
  // read() over every pipeline gives the same values (plain, inflated, and through HDF5)
  for (auto* d : {&none, &deflate, &sparse}) {
    std::fill(out.begin(), out.end(), -1.0f);
    d->read(0, chunk, out.data());
    CHECK(std::equal(out.begin(), out.begin() + chunk * width, f.begin()));
  }
}

TEST_CASE("dataset rows: located rows of a file cut short since are an error, not numbers",
          "[trace][read]") {
  ds::h5::silence_errors();
  ds::test::TempDir dir;
  const auto path = dir.path() / "cut.h5";
  const int64_t rows = 32, width = 64, chunk = 8;
  std::vector<float> f(static_cast<size_t>(rows * width), 1.5f);
  {
    Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    make(file.get(), "none", H5T_IEEE_F32LE, rows, width, chunk, Pipe::none, f.data(),
         H5T_NATIVE_FLOAT);
  }
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  ds::trace::DatasetRows d(Id(H5Dopen2(file.get(), "none", H5P_DEFAULT)), NumberFormat::f32);
  const auto p = d.plain(0, rows);
  REQUIRE(p.has_value());
  // Cut to the first chunk's bytes: the chunks behind are gone.
  std::filesystem::resize_file(path, 4096);
  std::vector<float> out(f.size());
  try {
    p->read(0, rows, out.data());
    FAIL("a read past the end of the file gave values");
  } catch (const ds::Error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("cannot be read"));
  }
  CHECK_THROWS_AS(d.read(0, rows, out.data()), ds::Error);  // through HDF5: an error too
}

TEST_CASE("dataset rows: a chunk whose filter mask skips deflate is read through HDF5",
          "[trace][read]") {
  ds::h5::silence_errors();
  ds::test::TempDir dir;
  const auto path = dir.path() / "mask.h5";
  Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const int64_t rows = 8, width = 4;
  std::vector<float> v(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i) - 3.0f;
  hsize_t dims[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(width)};
  Id space(H5Screate_simple(2, dims, nullptr));
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE));
  hsize_t chunk[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(width)};
  H5Pset_chunk(dcpl.get(), 2, chunk);
  H5Pset_shuffle(dcpl.get());
  H5Pset_deflate(dcpl.get(), 1);
  Id d(H5Dcreate2(file.get(), "m", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl.get(),
                  H5P_DEFAULT));
  // The chunk as the pipeline would leave it with deflate skipped (mask bit 1): shuffled only.
  const size_t n = v.size();
  std::vector<uint8_t> shuffled(n * 4);
  const auto* src = reinterpret_cast<const uint8_t*>(v.data());
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < 4; ++k) shuffled[k * n + i] = src[4 * i + k];
  hsize_t offset[2] = {0, 0};
  REQUIRE(H5Dwrite_chunk(d.get(), H5P_DEFAULT, 0x2, offset, shuffled.size(), shuffled.data()) >= 0);
  d.reset();
  file.reset();  // read as traces are read: a file opened afresh (HDF5 1.10.8 mishandles the
                 // mask of a chunk written by H5Dwrite_chunk that is still in its cache)
  file = Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  ds::trace::DatasetRows r(Id(H5Dopen2(file.get(), "m", H5P_DEFAULT)), NumberFormat::f32);
  CHECK(r.fast());
  std::vector<float> got(v.size());
  r.read(0, rows, got.data());
  CHECK(got == v);
}

TEST_CASE("dataset rows: a chunk overwritten with zeros is an error naming it", "[trace][read]") {
  ds::h5::silence_errors();
  ds::test::TempDir dir;
  const auto path = dir.path() / "bad.h5";
  const int64_t rows = 32, width = 16, chunk = 8;
  std::vector<float> v(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i));
  haddr_t at = 0;
  hsize_t size = 0;
  {
    Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    Id d = make(file.get(), "x", H5T_IEEE_F32LE, rows, width, chunk, Pipe::shuffle_deflate,
                v.data(), H5T_NATIVE_FLOAT);
    hsize_t offset[2] = {16, 0};
    unsigned mask = 0;
    REQUIRE(H5Dget_chunk_info_by_coord(d.get(), offset, &mask, &at, &size) >= 0);
  }
  {
    FILE* f = std::fopen(path.c_str(), "r+b");
    REQUIRE(f != nullptr);
    std::fseek(f, static_cast<long>(at), SEEK_SET);
    const std::vector<uint8_t> zeros(static_cast<size_t>(size), 0);
    std::fwrite(zeros.data(), 1, zeros.size(), f);
    std::fclose(f);
  }
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  ds::trace::DatasetRows r(Id(H5Dopen2(file.get(), "x", H5P_DEFAULT)), NumberFormat::f32);
  std::vector<float> got(v.size());
  // Rows of undamaged chunks still read; rows of the damaged one are an error, on both paths.
  r.read(0, 16, got.data());
  CHECK(std::memcmp(got.data(), v.data(), 16 * width * 4) == 0);
  try {
    r.read(8, 16, got.data());
    FAIL("read a damaged chunk without an error");
  } catch (const ds::Error& e) {
    CHECK(std::string(e.what()).find("chunk at row 16 of /x is damaged") != std::string::npos);
  }
  Id d(H5Dopen2(file.get(), "x", H5P_DEFAULT));
  CHECK_THROWS_AS(ds::h5::read_rows(d.get(), NumberFormat::f32, 16, 8, width, got.data()),
                  ds::Error);
}

// A damaged layout or chunk index may claim a chunk of gigabytes for a few stored bytes (a
// one-byte change to the chunk dimensions of a fuzzed trace image): the read buffers were sized
// from the claim before inflating (found by reading the code fuzz_trace_reader reaches). The
// claim is now checked against the stored bytes first. Here 64 stored bytes claim 16 MiB, more
// than deflate's 1032-fold expansion can give.
TEST_CASE("dataset rows: a chunk claiming more bytes than it stores is refused before reading",
          "[trace][read]") {
  ds::h5::silence_errors();
  ds::test::TempDir dir;
  const auto path = dir.path() / "claim.h5";
  const hsize_t width = hsize_t{1} << 20;
  {
    Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    hsize_t dims[2] = {4, width};
    Id space(H5Screate_simple(2, dims, nullptr));
    Id dcpl(H5Pcreate(H5P_DATASET_CREATE));
    H5Pset_chunk(dcpl.get(), 2, dims);
    H5Pset_shuffle(dcpl.get());
    H5Pset_deflate(dcpl.get(), 1);
    Id d(H5Dcreate2(file.get(), "big", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl.get(),
                    H5P_DEFAULT));
    REQUIRE(d);
    const std::vector<uint8_t> garbage(64, 0x5a);
    hsize_t offset[2] = {0, 0};
    REQUIRE(H5Dwrite_chunk(d.get(), H5P_DEFAULT, 0, offset, garbage.size(), garbage.data()) >= 0);
  }
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  ds::trace::DatasetRows r(Id(H5Dopen2(file.get(), "big", H5P_DEFAULT)), NumberFormat::f32);
  REQUIRE(r.fast());
  std::vector<float> got(width);
  try {
    r.read(0, 1, got.data());
    FAIL("read a chunk that cannot hold its size without an error");
  } catch (const ds::Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("chunk at row 0 of /big is damaged (64 bytes at offset") !=
          std::string::npos);
    CHECK(std::string(e.what()).find("cannot hold its 16777216 bytes)") != std::string::npos);
  }
}
