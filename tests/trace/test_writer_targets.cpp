// Where the trace writer may write (trace/swmr_file.h, common/output_file.h): never over a
// trace another writer still holds (also with --force), never over anything that is not a
// regular file, never through a link planted where its hidden file used to be named, and two
// writers of one new path never share a file: the second is refused and the first stays whole.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace fs = std::filesystem;
using Catch::Contains;

namespace {

ds::trace::WriterOptions options(const fs::path& p, bool force = false) {
  ds::trace::WriterOptions w;
  w.path = p;
  w.topk = 2;
  w.force = force;
  return w;
}

// Writes one sequence of `n` embed rows and finishes the trace.
void write_one(ds::trace::TraceWriter& w, int n) {
  w.begin_sequence(0, {1, 2});
  ds::trace::StepRecord s;
  s.n_rows = n;
  s.hidden.push_back({"embed", 2, std::vector<float>(static_cast<size_t>(2 * n), 0.5f)});
  s.new_tokens = {3};
  w.append(std::move(s));
  w.end_sequence(0, "max_new");
  REQUIRE(w.finish(true, "finished"));
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("writer: --force never replaces a trace another writer is still writing",
          "[trace][errors]") {
  ds::test::TempDir dir;
  const fs::path path = dir.path() / "live.h5";
  ds::trace::TraceWriter a(options(path), {});  // at its path from here on, and locked
  CHECK_THROWS_WITH(ds::trace::TraceWriter(options(path, true), {}),
                    Contains("is being written by another run"));
  CHECK_THROWS_WITH(ds::trace::TraceWriter(options(path), {}), Contains("already exists"));
  write_one(a, 2);
  const auto r = ds::trace::TraceReader::open(path);
  CHECK(r.complete());
  CHECK(r.stop_reason() == "finished");
  // Once the writer is done, --force replaces the finished trace.
  ds::trace::TraceWriter b(options(path, true), {});
  write_one(b, 3);
  CHECK(ds::trace::TraceReader::open(path).complete());
}

TEST_CASE("writer: -o naming a folder, a FIFO or a link is refused, also with --force",
          "[trace][errors]") {
  ds::test::TempDir dir;
  const fs::path fifo = dir.path() / "fifo", sub = dir.path() / "sub", link = dir.path() / "l.h5";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_directory(sub);
  fs::create_symlink(dir.path() / "elsewhere.h5", link);  // dangling
  for (const auto& p : {fifo, sub, link}) {
    INFO(p);
    CHECK_THROWS_WITH(ds::trace::TraceWriter(options(p), {}), Contains("already exists"));
    CHECK_THROWS_WITH(ds::trace::TraceWriter(options(p, true), {}),
                      Contains("is not a regular file"));
  }
  CHECK(fs::is_fifo(fifo));
  CHECK(fs::is_directory(sub));
  CHECK(fs::is_symlink(link));
  CHECK(!fs::exists(dir.path() / "elsewhere.h5"));
}

TEST_CASE("writer: a link planted at the old hidden name is never written through",
          "[trace][errors]") {
  ds::test::TempDir dir;
  const fs::path victim = dir.path() / "victim.txt", out = dir.path() / "out.h5";
  std::ofstream(victim) << "precious\n";
  fs::create_symlink(victim, dir.path() / ".out.h5.creating");
  {
    ds::trace::TraceWriter w(options(out), {});
    write_one(w, 1);
  }
  CHECK(slurp(victim) == "precious\n");
  CHECK(fs::is_regular_file(fs::symlink_status(out)));
  CHECK(ds::trace::TraceReader::open(out).complete());
}
