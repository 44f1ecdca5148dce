// Synthetic checkpoints of real shapes: parameter counts against the published ones, a tiny
// checkpoint that loads and runs, sharding, determinism.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

#include "common/error.h"
#include "src/model/model.h"
#include "src/model/sha256.h"
#include "src/model/synth.h"
#include "src/runtime/runtime.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"

TEST_CASE("synthetic shapes have the published parameter counts", "[synth]") {
  // Published totals (Hugging Face model cards / safetensors metadata of the real checkpoints).
  CHECK(ds::parameter_count(ds::synth_shape("llama2-7b").config) == 6738415616);
  CHECK(ds::parameter_count(ds::synth_shape("llama3-8b").config) == 8030261248);
  CHECK(ds::parameter_count(ds::synth_shape("qwen2-7b").config) == 7615616512);
  CHECK(ds::parameter_count(ds::synth_shape("mistral-7b").config) == 7241732096);
  CHECK(ds::parameter_count(ds::synth_shape("qwen2-0.5b").config) == 494032768);  // tied
  CHECK_THROWS_WITH(ds::synth_shape("gpt5"), Catch::Contains("unknown shape 'gpt5'"));
}

TEST_CASE("a synthetic checkpoint loads, validates and runs", "[synth]") {
  ds::test::TempDir dir;
  ds::SynthOptions o;
  o.seed = 3;
  ds::write_synthetic_checkpoint(ds::synth_shape("tiny"), o, dir.path() / "a");
  const ds::Model m = ds::load_model(dir.path() / "a");
  CHECK(m.weight_dtype == "BF16");
  CHECK(m.config.n_layers == 2);
  // Weights are bf16 values with standard deviation ~0.02; norms are exactly 1.
  double ss = 0;
  for (float v : m.weights.layers[0].wq.to_vector()) ss += double(v) * v;
  CHECK(std::abs(std::sqrt(ss / m.weights.layers[0].wq.size()) - 0.02) < 0.002);
  for (float v : m.weights.final_norm.to_vector()) REQUIRE(v == 1.0f);
  auto rt = ds::make_cpu_runtime(m, ds::DType::bf16, 8);
  std::vector<double> logits;
  rt->forward(std::vector<int32_t>{1, 5, 9}, 0, logits);
  for (double v : logits) REQUIRE(std::isfinite(v));
  // Same seed, same bytes; another seed, other bytes.
  ds::write_synthetic_checkpoint(ds::synth_shape("tiny"), o, dir.path() / "b");
  o.seed = 4;
  ds::write_synthetic_checkpoint(ds::synth_shape("tiny"), o, dir.path() / "c");
  const auto h = [&](const char* d) {
    return ds::sha256_file(dir.path() / d / "model.safetensors");
  };
  CHECK(h("a") == h("b"));
  CHECK(h("a") != h("c"));
  CHECK_THROWS_WITH(ds::write_synthetic_checkpoint(ds::synth_shape("tiny"), o, dir.path() / "a"),
                    Catch::Contains("not empty"));
}

TEST_CASE("large synthetic checkpoints are sharded with an index", "[synth]") {
  ds::test::TempDir dir;
  ds::SynthOptions o;
  o.shard_bytes = 100 * 1024;  // force several shards for the tiny shape
  o.dtype = ds::NumberFormat::f16;
  ds::write_synthetic_checkpoint(ds::synth_shape("tiny"), o, dir.path());
  CHECK(std::filesystem::exists(dir.path() / "model.safetensors.index.json"));
  const ds::Model m = ds::load_model(dir.path());
  CHECK(m.weight_files.size() > 2);
  CHECK(m.weight_dtype == "F16");
}

TEST_CASE("synth from the command line, then generate from it without a tokenizer",
          "[synth][cli]") {
  ds::test::TempDir dir;
  const auto out = (dir.path() / "tiny").string();
  auto w = ds::test::run_cli("synth --shape tiny --layers 1 -o " + out);
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  auto g = ds::test::run_cli("generate --model " + out + " --prompt-ids 1,7 -n 3 --ids -q");
  INFO(g.err);
  CHECK(g.exit_code == 0);
  CHECK(g.out.starts_with("1 7 "));
  CHECK(ds::test::run_cli("synth --shape nope -o " + out).exit_code == 2);
}

TEST_CASE("synth --force replaces links at its file names, never writes through them", "[synth]") {
  ds::test::TempDir dir;
  const auto out = dir.path() / "ck";
  std::filesystem::create_directories(out);
  // someone else's files, linked from the names synth writes
  const auto victim = dir.path() / "victim.txt";
  std::ofstream(victim) << "precious\n";
  for (const char* name : {"model.safetensors", "config.json"})
    std::filesystem::create_symlink(victim, out / name);
  ds::SynthOptions o;
  o.force = true;
  ds::write_synthetic_checkpoint(ds::synth_shape("tiny"), o, out);
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "precious\n");
  for (const char* name : {"model.safetensors", "config.json"}) {
    CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(out / name)));
  }
  CHECK(ds::load_model(out).config.n_layers == 2);
  // no hidden half-written file is left behind
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(out)) ++files;
  CHECK(files == 2);
}
