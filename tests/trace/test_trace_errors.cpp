// Files that are not (readable) traces get clear errors, never a crash.
#include <hdf5.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "common/error.h"
#include "src/experiment/trace_recorder.h"
#include "src/experiment/traced_run.h"
#include "src/model/model.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

namespace {

std::filesystem::path small_trace(const std::filesystem::path& dir) {
  const ds::Model m = ds::load_model(ds::test::model_bin());
  ds::TracedRunOptions o;
  o.config.max_new = 5;
  o.writer.path = dir / "small.h5";
  ds::run_traced(m, {{std::nullopt, {1}}}, o);
  return o.writer.path;
}

}  // namespace

TEST_CASE("reader: missing file, non-HDF5 file, foreign HDF5 file", "[trace][errors]") {
  ds::test::TempDir dir;
  CHECK_THROWS_WITH(ds::trace::TraceReader::open(dir.path() / "nope.h5"),
                    Catch::Contains("does not exist"));
  std::ofstream(dir.path() / "text.h5") << "this is not HDF5\n";
  CHECK_THROWS_WITH(ds::trace::TraceReader::open(dir.path() / "text.h5"),
                    Catch::Contains("not an HDF5 file"));
  const auto foreign = dir.path() / "foreign.h5";
  hid_t f = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t g = H5Gcreate2(f, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(g);
  H5Fclose(f);
  CHECK_THROWS_WITH(ds::trace::TraceReader::open(foreign),
                    Catch::Contains("not a driftscope trace"));
}

TEST_CASE("reader: unknown format_version is refused with a hint", "[trace][errors]") {
  ds::test::TempDir dir;
  const auto path = small_trace(dir.path());
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
  const int64_t v = 2;
  H5Awrite(a, H5T_NATIVE_INT64, &v);
  H5Aclose(a);
  H5Fclose(f);
  try {
    ds::trace::TraceReader::open(path);
    FAIL("no error");
  } catch (const ds::Error& e) {
    CHECK(std::string(e.what()).find("format_version 2") != std::string::npos);
    CHECK(!e.hint().empty());
  }
}

TEST_CASE("reader: a truncated trace file is refused", "[trace][errors]") {
  ds::test::TempDir dir;
  const auto path = small_trace(dir.path());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 3);
  CHECK_THROWS_AS(
      [&] {
        auto r = ds::trace::TraceReader::open(path);
        for (int i : r.sequence_indices()) {
          auto s = r.sequence(i);
          for (const auto& site : s.sites) r.hidden(i, site.name, 0, s.rows);
        }
      }(),
      ds::Error);
}

TEST_CASE("writer: refuses to overwrite without force", "[trace][errors]") {
  ds::test::TempDir dir;
  const auto path = small_trace(dir.path());
  const ds::Model m = ds::load_model(ds::test::model_bin());
  ds::TracedRunOptions o;
  o.config.max_new = 5;
  o.writer.path = path;
  CHECK_THROWS_WITH(ds::run_traced(m, {{std::nullopt, {1}}}, o), Catch::Contains("already exists"));
  o.writer.force = true;
  CHECK(ds::run_traced(m, {{std::nullopt, {1}}}, o).complete);
}
