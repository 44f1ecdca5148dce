// The locating driver (trace/locating_driver.h): a chunk's address in one step must be the address
// HDF5's chunk index gives (H5Dget_chunk_info_by_coord, independent of the driver's capture), for
// both chunk indexes a trace uses (extensible array: unlimited rows, as the writer makes them;
// fixed array), and nothing for chunks that are not plain; everything else the driver forwards to
// sec2 must read as sec2 reads.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "tests/support/temp_dir.h"
#include "trace/dataset_rows.h"
#include "trace/h5.h"
#include "trace/locating_driver.h"

namespace {

using ds::h5::Id;

constexpr int64_t kRows = 37, kWidth = 24, kChunk = 8;

// A [kRows, kWidth] float dataset in kChunk-row chunks, written whole; `unlimited` rows make HDF5
// index its chunks with an extensible array (libver v110), fixed rows with a fixed array.
void make(hid_t file, const char* name, bool unlimited, bool deflate, const std::vector<float>& f) {
  hsize_t dims[2] = {kRows, kWidth}, maxdims[2] = {H5S_UNLIMITED, kWidth};
  Id space(H5Screate_simple(2, dims, unlimited ? maxdims : nullptr));
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE));
  hsize_t chunk[2] = {kChunk, kWidth};
  H5Pset_chunk(dcpl.get(), 2, chunk);
  if (deflate) H5Pset_deflate(dcpl.get(), 4);
  Id d(H5Dcreate2(file, name, H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  REQUIRE(d);
  REQUIRE(H5Dwrite(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, f.data()) >= 0);
}

uint64_t index_address(hid_t dset, int64_t chunk) {
  hsize_t offset[2] = {static_cast<hsize_t>(chunk * kChunk), 0}, size = 0;
  haddr_t addr = HADDR_UNDEF;
  unsigned mask = 0;
  REQUIRE(H5Dget_chunk_info_by_coord(dset, offset, &mask, &addr, &size) >= 0);
  return static_cast<uint64_t>(addr);
}

}  // namespace

TEST_CASE("locating driver: a chunk's address in one step is the chunk index's", "[trace][read]") {
  ds::h5::silence_errors();
  ds::test::TempDir dir;
  const auto path = dir.path() / "chunks.h5";
  std::vector<float> f(static_cast<size_t>(kRows * kWidth));
  for (size_t i = 0; i < f.size(); ++i) f[i] = 0.25f * static_cast<float>(i) - 7.0f;
  {
    Id fapl(H5Pcreate(H5P_FILE_ACCESS));
    H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110);
    Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
    make(file.get(), "extensible", true, false, f);
    make(file.get(), "fixed", false, false, f);
    make(file.get(), "deflate", true, true, f);
  }
  const uint64_t chunk_bytes = kChunk * kWidth * 4;
  const int64_t chunks = (kRows + kChunk - 1) / kChunk;

  const Id fapl = ds::trace::locating_fapl();
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()));
  REQUIRE(file);
  const ds::trace::PlainFile pf = ds::trace::plain_file(file.get());
  CHECK(pf.locating);
  REQUIRE(pf.fd >= 0);
  CHECK(pf.size == std::filesystem::file_size(path));
  for (const char* name : {"extensible", "fixed"}) {
    INFO(name);
    Id d(H5Dopen2(file.get(), name, H5P_DEFAULT));
    for (int64_t c = 0; c < chunks; ++c) {
      INFO("chunk " << c);
      hsize_t offset[2] = {static_cast<hsize_t>(c * kChunk), 0};
      const auto a = ds::trace::chunk_address(d.get(), offset, chunk_bytes);
      REQUIRE(a.has_value());
      CHECK(*a == index_address(d.get(), c));
      CHECK_FALSE(ds::trace::chunk_address(d.get(), offset, chunk_bytes - 4).has_value());
    }
    hsize_t past[2] = {static_cast<hsize_t>(chunks * kChunk), 0};  // no such chunk
    CHECK_FALSE(ds::trace::chunk_address(d.get(), past, chunk_bytes).has_value());
    // The rows read through those addresses, and through HDF5 with the driver's reads forwarded
    ds::trace::DatasetRows rows(Id(H5Dopen2(file.get(), name, H5P_DEFAULT)), ds::NumberFormat::f32,
                                pf);
    const auto p = rows.plain(0, kRows);
    REQUIRE(p.has_value());
    std::vector<float> got(f.size(), -1.0f), via_hdf5(f.size(), -1.0f);
    p->read(0, kRows, got.data());
    CHECK(got == f);
    REQUIRE(H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, via_hdf5.data()) >=
            0);
    CHECK(via_hdf5 == f);
  }
  {
    Id d(H5Dopen2(file.get(), "deflate", H5P_DEFAULT));  // filtered: not a plain chunk
    hsize_t offset[2] = {0, 0};
    CHECK_FALSE(ds::trace::chunk_address(d.get(), offset, chunk_bytes).has_value());
  }

  // Under HDF5's default driver nothing is captured (the chunk is read into scratch): no answer.
  Id plain(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  CHECK_FALSE(ds::trace::plain_file(plain.get()).locating);
  Id d(H5Dopen2(plain.get(), "extensible", H5P_DEFAULT));
  hsize_t offset[2] = {kChunk, 0};
  CHECK_FALSE(ds::trace::chunk_address(d.get(), offset, chunk_bytes).has_value());
}
