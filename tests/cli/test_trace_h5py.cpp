// The trace format read by an independent reader: the documented h5py example
// (docs/examples/read_trace.py) run on a real trace, its numbers checked against our reader;
// with the default filters (shuffle + deflate) and with --compression none.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "trace/reader.h"

TEST_CASE(
    "the documented h5py example reads a trace (f32 and bf16 storage, with and without "
    "compression)",
    "[trace][h5py]") {
  ds::test::TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {"f32", "deflate"}, {"bf16", "deflate"}, {"f32", "none"}, {"bf16", "none"}};
  for (const auto& [hd, compression] : cases) {
    INFO(hd << " " << compression);
    const auto t = dir.path() / (std::string(hd) + "-" + compression + ".h5");
    REQUIRE(ds::test::run_cli("run --prompt 'Once upon a time' -n 20 -q --hidden-dtype " +
                              std::string(hd) + " --compression " + compression + " -o " +
                              t.string())
                .exit_code == 0);
    const std::string cmd = "/usr/bin/python3 " + ds::test::source_dir() +
                            "/docs/examples/read_trace.py " + t.string() + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string out;
    char buf[512];
    while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
    REQUIRE(pclose(p) == 0);
    INFO(out);
    // The same numbers through our reader.
    auto r = ds::trace::TraceReader::open(t);
    auto s = r.sequence(0);
    auto x = r.hidden(0, "L2/out", 5, 1);
    double norm = 0;
    for (float v : x) norm += double(v) * v;
    auto top = r.topk(0, 5, 1);
    auto lse = r.lse(0, 5, 1);
    std::ostringstream want;
    want << "fp32 (" << s.rows << ", " << x.size() << ") ";  // rows x the model's dim
    CHECK(out.starts_with(want.str()));
    const double printed = std::stod(out.substr(want.str().size()));
    CHECK(std::abs(printed - std::sqrt(norm)) < 1e-5 * std::sqrt(norm));
    CHECK(out.find("[(" + std::to_string(top.ids[0]) + ", ") != std::string::npos);
    CHECK(out.find("next: " + std::to_string(s.tokens[6])) != std::string::npos);
    (void)lse;
  }
}
