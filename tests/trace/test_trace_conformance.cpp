// Traces from another producer (a `producer` root attribute other than driftscope's) are
// validated on open: a conforming one opens, each kind of defect is named precisely.
#include <hdf5.h>

#include <catch2/catch.hpp>
#include <functional>

#include "common/error.h"
#include "src/experiment/traced_run.h"
#include "src/model/model.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "trace/h5.h"
#include "trace/reader.h"
#include "trace/schema.h"

namespace {

// A trace of driftscope's own writer, relabelled as written by another producer, then changed.
std::filesystem::path foreign_trace(const std::filesystem::path& dir, const std::string& name,
                                    const std::function<void(hid_t)>& change) {
  const ds::Model m = ds::load_model(ds::test::model_bin());
  ds::TracedRunOptions o;
  o.config.max_new = 4;
  o.sites = ds::trace::default_sites(m.config.n_layers);
  o.writer.path = dir / name;
  ds::run_traced(m, {{std::nullopt, {1, 403}}}, o);
  hid_t f = H5Fopen(o.writer.path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ds::h5::write_attr(f, "producer", std::string("other-engine 1.0"));
  change(f);
  H5Fclose(f);
  return o.writer.path;
}

std::string open_error(const std::filesystem::path& p) {
  try {
    ds::trace::TraceReader::open(p);
  } catch (const ds::Error& e) {
    return e.what();
  }
  return "";
}

void cut_rows(hid_t f, const char* path, hsize_t rows) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  H5Dset_extent(d, &rows);  // rank 2 datasets: only the first dimension is read
  H5Dclose(d);
}

// A defect made in a valid foreign trace by `change`, and the words its open error must hold.
struct Case {
  const char* name;
  std::function<void(hid_t)> change;
  const char* expected;
};

// Each case in its own section: the trace opens with an error naming the producer and the defect.
void check_defects(const ds::test::TempDir& dir, const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    SECTION(c.name) {
      const std::string err =
          open_error(foreign_trace(dir.path(), std::string(c.name) + ".h5", c.change));
      INFO(err);
      CHECK_THAT(err,
                 Catch::Contains("written by other-engine 1.0") && Catch::Contains(c.expected));
    }
  }
}

}  // namespace

TEST_CASE("conformance: a foreign trace that follows format v1 opens", "[trace][conformance]") {
  ds::test::TempDir dir;
  const auto p = foreign_trace(dir.path(), "ok.h5", [](hid_t) {});
  const auto r = ds::trace::TraceReader::open(p);
  CHECK(r.producer() == "other-engine 1.0");
  CHECK(r.sequence(0).rows == 5);
}

TEST_CASE("conformance: driftscope's own traces report driftscope as producer",
          "[trace][conformance]") {
  ds::test::TempDir dir;
  const ds::Model m = ds::load_model(ds::test::model_bin());
  ds::TracedRunOptions o;
  o.config.max_new = 2;
  o.writer.path = dir.path() / "own.h5";
  ds::run_traced(m, {{std::nullopt, {1}}}, o);
  CHECK(ds::trace::TraceReader::open(o.writer.path).producer().starts_with("driftscope "));
}

TEST_CASE("conformance: each defect is named", "[trace][conformance]") {
  ds::test::TempDir dir;
  const std::vector<Case> cases = {
      {"rows",
       [](hid_t f) {
         hsize_t dims[2] = {4, 128};  // kjv-llama's dim is 128
         hid_t d = H5Dopen2(f, "seq/0/hidden/L2/out", H5P_DEFAULT);
         H5Dset_extent(d, dims);
         H5Dclose(d);
       },
       "/seq/0/hidden/L2/out has 4 rows"},
      {"lse", [](hid_t f) { cut_rows(f, "seq/0/logits/lse", 3); }, "/seq/0/logits/lse has 3 rows"},
      {"complete", [](hid_t f) { ds::h5::write_attr(f, "complete", int64_t{7}); },
       "/@complete is 7"},
      {"stop",
       [](hid_t f) {
         H5Adelete(f, "stop_reason");
         ds::h5::write_attr(f, "stop_reason", std::string("done"));
       },
       "/@stop_reason is 'done'"},
      {"meta",
       [](hid_t f) {
         hid_t m = H5Gopen2(f, "meta", H5P_DEFAULT);
         H5Adelete(m, "config_json");
         ds::h5::write_attr(m, "config_json", std::string("[1, 2]"));
         H5Gclose(m);
       },
       "/meta@config_json is not a JSON object"},
      {"gen_len",
       [](hid_t f) {
         hid_t g = H5Gopen2(f, "seq/0", H5P_DEFAULT);
         ds::h5::write_attr(g, "gen_len", int64_t{9});
         H5Gclose(g);
       },
       "/seq/0/tokens holds 6 tokens, prompt_len + gen_len = 11"},
      {"site",
       [](hid_t f) {
         H5Lmove(f, "seq/0/hidden/L1/out", f, "seq/0/hidden/L1/output", H5P_DEFAULT, H5P_DEFAULT);
       },
       "/seq/0/hidden/L1/output is not a site"},
      {"missing", [](hid_t f) { H5Ldelete(f, "seq/0/logits/topk_logits", H5P_DEFAULT); },
       "/seq/0/logits/topk_logits is missing"},
      {"tokens",
       [](hid_t f) {
         H5Ldelete(f, "seq/0/tokens", H5P_DEFAULT);
         hid_t g = H5Gopen2(f, "seq/0", H5P_DEFAULT);
         ds::h5::create_growing(g, "tokens", ds::NumberFormat::f32, 0, 16, 0);
         H5Gclose(g);
       },
       "/seq/0/tokens holds float32 values"},
  };
  check_defects(dir, cases);
}

// Sizes a 40 kB image can declare in a few bytes (datasets of fill values): a tokens count or a
// logits width of 2^40 sized the reader's vectors (std::length_error / bad_alloc escaping), a
// top-k K of 2^32 + 1 was truncated to 1 in an int and the read of its rows overran a buffer of
// that width, prompt_len + gen_len overflowed int64. They are refused by the limits of the models
// driftscope runs (found by reading the code fuzz_trace_reader reaches).
TEST_CASE("conformance: sizes past the model limits are refused before anything is allocated",
          "[trace][conformance]") {
  ds::test::TempDir dir;
  // Replaces the dataset `path` with a [rows, width] one of `type` that holds no data.
  const auto replace = [](hid_t f, const char* path, hid_t type, hsize_t rows, hsize_t width) {
    H5Ldelete(f, path, H5P_DEFAULT);
    hsize_t dims[2] = {rows, width};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t d = H5Dcreate2(f, path, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(space);
  };
  const std::vector<Case> cases = {
      {"gen_len",
       [](hid_t f) {
         hid_t g = H5Gopen2(f, "seq/0", H5P_DEFAULT);
         ds::h5::write_attr(g, "gen_len", int64_t{9223372036854775807});
         H5Gclose(g);
       },
       "/seq/0@prompt_len 2 / gen_len 9223372036854775807 out of range"},
      {"tokens",
       [](hid_t f) {
         hid_t g = H5Gopen2(f, "seq/0", H5P_DEFAULT);
         ds::h5::write_attr(g, "stop_reason", std::string("running"));
         H5Gclose(g);
         cut_rows(f, "seq/0/tokens", hsize_t{1} << 40);
       },
       "/seq/0/tokens holds 1099511627776 tokens, more than the 16777216 of the longest context"},
      {"topk",
       [&](hid_t f) {
         replace(f, "seq/0/logits/topk_ids", H5T_STD_I32LE, 5, (hsize_t{1} << 32) + 1);
         replace(f, "seq/0/logits/topk_logits", H5T_IEEE_F32LE, 5, (hsize_t{1} << 32) + 1);
       },
       "/seq/0/logits/topk_ids has K = 4294967297, more than the 4194304 of the largest "
       "vocabulary"},
      {"full",
       [&](hid_t f) { replace(f, "seq/0/logits/full", H5T_IEEE_F32LE, 5, hsize_t{1} << 23); },
       "/seq/0/logits/full has 8388608 columns, more than the 4194304 of the largest vocabulary"},
      {"hidden",
       [&](hid_t f) { replace(f, "seq/0/hidden/embed", H5T_IEEE_F32LE, 5, hsize_t{1} << 17); },
       "/seq/0/hidden/embed is 131072 wide, more than the 65536 of the widest model"},
  };
  check_defects(dir, cases);
}
