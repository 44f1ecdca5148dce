// Memory: a model that cannot fit is refused before loading, with what it needs and what is
// available (DRIFTSCOPE_MEM_AVAILABLE stands in for /proc/meminfo, docs/cli.md).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"

using ds::test::check_input_error;
using ds::test::run_cli;

namespace {

// Sets DRIFTSCOPE_MEM_AVAILABLE for the commands run while it lives (they inherit it).
struct AvailableMemory {
  explicit AvailableMemory(const std::string& bytes) {
    ::setenv("DRIFTSCOPE_MEM_AVAILABLE", bytes.c_str(), 1);
  }
  ~AvailableMemory() { ::unsetenv("DRIFTSCOPE_MEM_AVAILABLE"); }
};

}  // namespace

TEST_CASE("a Qwen2-7B-shaped model is refused before loading when memory is short",
          "[cli][memory]") {
  // Only config.json, no weights: the refusal comes before any weight file is opened.
  ds::test::TempDir dir;
  std::ofstream(dir.path() / "config.json") << R"({
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "hidden_act": "silu",
    "tie_word_embeddings": false, "bos_token_id": 151643, "eos_token_id": 151643})";
  AvailableMemory mem("8589934592");  // 8 GiB
  auto r = run_cli("generate --model " + dir.path().string() + " --prompt-ids 1");
  // Qwen2-7B has 7615616512 parameters (its checkpoint index: total_size 15231233024 bytes of
  // bf16). Weights are used where they lie, so even before the files say their format it needs
  // at least 2 bytes a value: 15231233024 bytes = 14.2 GiB. KV cache: 2 (k, v) x 28 layers x 512
  // (4 KV heads x 128) x 4 bytes = 112 KiB per token.
  check_input_error(r, "needs 14.2 GiB of memory; 8.0 GiB is available");
  CHECK(r.err.find("7615616512 parameters: 14.2 GiB of weights at the least") != std::string::npos);
  CHECK(r.err.find("112.0 KiB of KV cache per token") != std::string::npos);
}

TEST_CASE("the runtime's KV cache is checked before it is allocated", "[cli][memory]") {
  // kjv-llama (dim 128, hidden 256, 4 layers, 8 heads / 4 KV heads of 16, vocab 1024, tied):
  // 1024 x 128 + 4 x (2 x 128 + 2 x 128 x 128 + 2 x 64 x 128 + 3 x 256 x 128) + 128 = 722048
  // parameters (2888192 bytes as float32), mapped, plus the permuted copies of wq and wk
  // (4 x (128 + 64) x 128 x 4 = 393216 bytes): loading needs 3281408 bytes (3.1 MiB). An fp64
  // runtime
  // holds 5776384 bytes of weights plus a KV cache of 2 x 4 layers x 64 x 8 bytes = 4096 bytes
  // per position, for 1 + 500 positions: 2052096. 7828480 bytes = 7.5 MiB in all.
  {
    AvailableMemory mem(std::to_string(7 << 20));  // 7 MiB: loads, but no fp64 runtime
    auto r = run_cli("generate --prompt-ids 1 --max-new 500 --dtype fp64 -q");
    check_input_error(r, "needs 7.5 MiB of memory; 7.0 MiB is available");
    CHECK(r.err.find("501 positions x 1 sequences") != std::string::npos);
    // At fp32 it fits: 2888192 + 2048 x 501 bytes = 3.7 MiB.
    CHECK(run_cli("generate --prompt-ids 1 --max-new 500 -q").exit_code == 0);
  }
  {
    AvailableMemory mem(std::to_string(3000000));  // under the 3281408 bytes loading needs
    check_input_error(run_cli("generate --prompt-ids 1 -q"), "needs 3.1 MiB of memory");
  }
}

TEST_CASE("synth says how much memory a run of its checkpoint needs", "[cli][memory]") {
  ds::test::TempDir dir;
  // tiny: dim 64, hidden 172, 2 layers, 8 heads / 4 KV heads, vocab 512, untied:
  // 2 x 512 x 64 + 2 x (2 x 64 + 2 x 64 x 64 + 2 x 32 x 64 + 3 x 172 x 64) + 64 = 156480
  // parameters; bf16 (synth's default), used where they lie: x 2 bytes = 312960 bytes =
  // 305.6 KiB; KV 2 x 2 x 32 x 4 = 512 bytes a token.
  auto r = run_cli("synth --shape tiny -o " + (dir.path() / "m").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("156480 parameters") != std::string::npos);
  CHECK(r.err.find("a CPU run needs 305.6 KiB (the bf16 weights") != std::string::npos);
  CHECK(r.err.find("plus 0.5 KiB of KV cache per token") != std::string::npos);
}
