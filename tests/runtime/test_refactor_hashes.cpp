// A change detector: traces of the 32 stories260K prompts under seven configurations hold the
// numbers they held before the src/ reorganisation and the one forward skeleton. The digests
// below were produced by driftscope itself (the commit before the move, dc3cb9e) with
//   driftscope run --config configs/<name>.toml --prompts <prompts> \
//                  --max-new 24 --probes all --full-logits -q -o <name>.h5
// and tests/support/trace_digest.cpp (tokens, every hidden site, top-K, lse, full logits; raw
// bits), on the then-bundled stories260K, now the third-party fixture in ../shared/models, with
// its prompts, now tests/data/stories260K-prompts.txt (skipped where ../shared is absent). They
// prove nothing about correctness; a refactor of the runtime that changes one bit of any of them
// fails here by name.
#include <catch2/catch.hpp>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/trace_digest.h"

namespace {

struct Recorded {
  const char* config;
  const char* digest;
};

constexpr Recorded kRecorded[] = {
    {"fp32", "e85f70030d2858c542ab9545f6c9a9edcdd8579efa0a5df68e97bd77317a34c4"},
    {"bf16-bs8", "eaf7793bb8ae03d5800ac88aeea8f83c95185b8623312bff97e12a9096fe5772"},
    {"bf16-tp4", "7e00b73d6be1417058335c181ef6736add0f6ee78dc2d533eb2f0820ba285fd5"},
    {"layercast-tp4", "a464244a1bb755693bae3638e65031fab86dc6eaac469244cf8d5e21bd3e96de"},
    {"fp16-pure", "a11e3060ac667f959a44b44e7148af58d44218f5df958f06c16a103880618b30"},
    {"bf16-flashdecode", "e750f34a641a847362ce9b5d7b23808ac42235f089eaf6a1d0620136c7693963"},
    {"fp64-oracle", "78e5cb40ce2b8d8be7ed3d4fc4bf9e4f283d3df49269c3b65a39e977a4d011c0"},
};

}  // namespace

TEST_CASE("traces are bit-identical to those recorded before the runtime refactor") {
  DS_REQUIRE_SHARED_MODELS();
  ds::test::TempDir dir;
  for (const Recorded& rec : kRecorded) {
    SECTION(rec.config) {
      const std::string out = (dir.path() / (std::string(rec.config) + ".h5")).string();
      const auto r = ds::test::run_cli("run --config " + ds::test::source_dir() + "/configs/" +
                                       rec.config + ".toml -m " + ds::test::stories_bin() +
                                       " --prompts " + ds::test::stories_prompts() +
                                       " --max-new 24 --probes all --full-logits -q -o " + out);
      REQUIRE(r.exit_code == 0);
      CHECK(ds::test::trace_digest(out) == rec.digest);
    }
  }
}
