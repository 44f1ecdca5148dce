// Bad inputs fed to the real executable: every size from a file header is checked
// against the documented limits before anything is allocated; files a user names are read
// with a bound; each case ends in exit 2 with "driftscope: <message>" and a hint, never a
// crash (exit 3), an allocation failure or a number that overflowed on its way to the message.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

using ds::test::check_input_error;
using ds::test::has;
using ds::test::run_cli;

namespace fs = std::filesystem;

namespace {

// A config.json of a small Llama (dim 64, 2 layers, GQA, vocab 512) with `extra` fields replacing
// its own: `extra` is JSON members, e.g. R"("hidden_size": 2147483648)".
std::string llama_config(const std::string& extra = "") {
  nlohmann::json j = nlohmann::json::parse(R"({
    "model_type": "llama", "hidden_size": 64, "intermediate_size": 172,
    "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4,
    "vocab_size": 512, "max_position_embeddings": 512, "rms_norm_eps": 1e-05,
    "hidden_act": "silu", "tie_word_embeddings": true})");
  if (!extra.empty()) j.update(nlohmann::json::parse("{" + extra + "}"));
  return j.dump();
}

// A model directory holding config.json with `extra` (see llama_config) and nothing else.
fs::path config_only_model(const fs::path& dir, const std::string& extra) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << llama_config(extra);
  return dir;
}

// A .safetensors file from a header written by hand (so that it can say what a writer never
// would) and `data_bytes` zero bytes of data.
void write_raw_safetensors(const fs::path& path, const std::string& header, size_t data_bytes) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << std::string(data_bytes, '\0');
}

// A llama2.c .bin with this 7-int32 header and no weights.
fs::path llama2c_header(const fs::path& path, std::initializer_list<int32_t> h) {
  std::ofstream out(path, std::ios::binary);
  for (int32_t v : h) out.write(reinterpret_cast<const char*>(&v), 4);
  return path;
}

}  // namespace

TEST_CASE("safetensors tensors whose byte ranges overlap are refused", "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path m = config_only_model(dir.path() / "m", "");
  // 'a' holds bytes [0, 8) and 'b' bytes [4, 12): b's first float is a's second.
  write_raw_safetensors(m / "model.safetensors",
                        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        12);
  auto r = run_cli("generate --prompt-ids 1 --model " + m.string());
  check_input_error(r, "tensors 'a' and 'b' overlap (bytes [0, 8) and [4, 12)");
  CHECK(has(r.err, "corrupt safetensors file"));
}

TEST_CASE("a safetensors shape past any file size is refused before its product overflows",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path m = config_only_model(dir.path() / "m", "");
  // 2^40 x 2^40 elements: the product is 2^80, which wraps to 0 in 64 bits and would match the
  // empty byte range [0, 0).
  write_raw_safetensors(
      m / "model.safetensors",
      R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,0]}})", 0);
  auto r = run_cli("generate --prompt-ids 1 --model " + m.string());
  check_input_error(r,
                    "tensor 'w' of shape [1099511627776,1099511627776] has more elements "
                    "than the file's 0 data bytes");
  // A negative dimension and a fractional one are refused as such.
  write_raw_safetensors(m / "model.safetensors",
                        R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0);
  check_input_error(run_cli("generate --prompt-ids 1 --model " + m.string()),
                    "tensor 'w' has the dimension -1");
  write_raw_safetensors(m / "model.safetensors",
                        R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4);
  check_input_error(run_cli("generate --prompt-ids 1 --model " + m.string()),
                    "tensor 'w' has the dimension 1.5");
}

TEST_CASE("config.json sizes out of range are named with the number as written",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  struct Case {
    const char* extra;
    const char* message;
  };
  const Case cases[] = {
      {R"("num_hidden_layers": 1000000000)", "num_hidden_layers 1000000000 is outside 1..1024"},
      {R"("hidden_size": 1000000000000)", "hidden_size 1000000000000 is outside 1..65536"},
      {R"("hidden_size": 2147483648)", "hidden_size 2147483648 is outside 1..65536"},
      {R"("intermediate_size": 1000000000000)",
       "intermediate_size 1000000000000 is outside 1..262144"},
      {R"("vocab_size": 0)", "vocab_size 0 is outside 1..4194304"},
      {R"("max_position_embeddings": -5)", "max_position_embeddings -5 is outside 1..16777216"},
      {R"("head_dim": 4294967296)", "head_dim 4294967296 is outside 1..1024"},
      {R"("num_hidden_layers": 1e9)", "field 'num_hidden_layers' is 1000000000.0, not a whole"},
      {R"("rms_norm_eps": "small")", "field 'rms_norm_eps' is \"small\", not a number"},
      {R"("tie_word_embeddings": "yes")", "field 'tie_word_embeddings' is \"yes\", not a boolean"},
      {R"("eos_token_id": 4294967296)", "eos_token_id 4294967296 is outside 0..2147483647"},
  };
  int i = 0;
  for (const auto& c : cases) {
    INFO(c.extra);
    const fs::path m = config_only_model(dir.path() / std::to_string(i++), c.extra);
    check_input_error(run_cli("generate --prompt-ids 1 --model " + m.string()), c.message);
  }
}

TEST_CASE("a model within the limits but too large for memory says how much it needs",
          "[cli][bad-input][memory]") {
  ds::test::TempDir dir;
  // Every size at its limit: dim D = 2^16, MLP F = 2^18, 2^10 layers, 512 heads of 128 (so
  // q_dim = kv_dim = 2^16), vocabulary V = 2^22, untied. Parameters: embedding and lm_head
  // 2 x V x D = 2^39; per layer 2 norms 2D = 2^17, q/k/v/o 4 x D x D = 2^34, MLP 3 x D x F =
  // 3 x 2^34, so 2^36 + 2^17, times 2^10 layers = 2^46 + 2^27; final norm 2^16. Before its
  // files are opened it needs at least 2 bytes a parameter = 2^47 + 2^40 + 2^28 + 2^17 bytes =
  // 129.0 TiB.
  const fs::path m =
      config_only_model(dir.path() / "m", R"("hidden_size": 65536, "intermediate_size": 262144,
      "num_hidden_layers": 1024, "num_attention_heads": 512, "num_key_value_heads": 512,
      "vocab_size": 4194304, "max_position_embeddings": 16777216, "tie_word_embeddings": false)");
  ::setenv("DRIFTSCOPE_MEM_AVAILABLE", "17179869184", 1);  // 16 GiB
  auto r = run_cli("generate --prompt-ids 1 --model " + m.string());
  ::unsetenv("DRIFTSCOPE_MEM_AVAILABLE");
  check_input_error(r, "needs 129.0 TiB of memory; 16.0 GiB is available");
}

TEST_CASE("llama2.c headers with sizes out of range are refused before any allocation",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  // dim 2^30 with one head: q_dim = 2^30, and dim x dim overflows 32-bit arithmetic.
  auto r = run_cli("generate --prompt-ids 1 --model " +
                   llama2c_header(dir.path() / "a.bin", {1 << 30, 64, 1, 1, 1, 32, 8}).string());
  check_input_error(r, "dim (hidden_size) 1073741824 is outside 1..65536");
  CHECK_FALSE(has(r.err, "=-"));  // no overflowed number anywhere in the message
  // vocab_size -2^31 (negative means untied; its negation does not fit 32 bits).
  check_input_error(
      run_cli("generate --prompt-ids 1 --model " +
              llama2c_header(dir.path() / "b.bin", {64, 64, 1, 8, 8, INT32_MIN, 8}).string()),
      "vocab_size -2147483648 is outside 1..4194304");
  check_input_error(
      run_cli("generate --prompt-ids 1 --model " +
              llama2c_header(dir.path() / "c.bin", {64, 64, 2000000000, 8, 8, 32, 8}).string()),
      "n_layers (num_hidden_layers) 2000000000 is outside 1..1024");
}

TEST_CASE("max-new 2147483647 generates up to the context, not past an int overflow",
          "[cli][bad-input]") {
  // kjv-llama's context is 512 positions: a 2-token prompt leaves 510 new tokens.
  auto r = run_cli("generate --prompt-ids 1,403 --max-new 2147483647 --stop-token none --ids");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.err, "prompt 2 tokens, generated 510 | stop: context"));
  CHECK(ds::test::count(r.out, " ") == 511);  // 512 ids on one line
  // The same for a traced run.
  ds::test::TempDir dir;
  const std::string trace = (dir.path() / "t.h5").string();
  auto t = run_cli("run --prompt-ids 1,403 --max-new 2147483647 --stop-token none -o " + trace);
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  CHECK(has(t.err, "510 generated tokens"));
}

TEST_CASE("config or a grid file that is a directory, binary, /dev/zero or too large is refused",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  check_input_error(run_cli("run --dry-run --config " + dir.path().string()),
                    "config file '" + dir.path().string() + "' is a directory");
  std::ofstream(dir.path() / "binary.toml", std::ios::binary)
      << std::string("dtype = \"bf16\"\n\0\x7f", 17);  // a NUL after 15 bytes of text
  check_input_error(run_cli("run --dry-run --config " + (dir.path() / "binary.toml").string()),
                    "is not a text file (a NUL byte at offset 15)");
  check_input_error(run_cli("run --dry-run --config /dev/zero"),
                    "config file '/dev/zero' is larger than the limit of 1.0 MiB");
  {
    std::ofstream big(dir.path() / "big.toml");
    for (int i = 0; i < 70000; ++i) big << "# a comment line of some length\n";  // 2.2 MB
  }
  check_input_error(run_cli("run --dry-run --config " + (dir.path() / "big.toml").string()),
                    "is larger than the limit of 1.0 MiB");
  check_input_error(run_cli("run --dry-run --config " + (dir.path() / "none.toml").string()),
                    "cannot read config file");
  check_input_error(run_cli("sweep --dry-run --grid @/dev/zero -o " + dir.path().string()),
                    "grid file '/dev/zero' is larger than the limit of 1.0 MiB");
}

TEST_CASE("prompts file that is /dev/zero, a directory, binary or empty is refused",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const std::string out = " -o " + (dir.path() / "t.h5").string();
  check_input_error(run_cli("run --prompts /dev/zero" + out),
                    "prompts file '/dev/zero' is larger than the limit of 64.0 MiB");
  check_input_error(run_cli("run --prompts " + dir.path().string() + out), "is a directory");
  check_input_error(run_cli("run --prompts " + ds::test::exe() + out), "is not a text file");
  std::ofstream(dir.path() / "empty.txt").flush();
  check_input_error(run_cli("run --prompts " + (dir.path() / "empty.txt").string() + out),
                    "holds no prompt");
  // Ids that do not fit 32 bits are refused, not wrapped (2^32 + 1 would have become 1).
  std::ofstream(dir.path() / "ids.jsonl") << R"({"ids": [1, 4294967297]})"
                                          << "\n";
  check_input_error(run_cli("run --prompts " + (dir.path() / "ids.jsonl").string() + out),
                    "\"ids\" holds 4294967297, not a token id");
  CHECK_FALSE(fs::exists(dir.path() / "t.h5"));
}

TEST_CASE("a prompt far past the context is refused before its tokens are merged",
          "[cli][bad-input]") {
  // A 2 MB line used to be merged whole (a 10 MB one took 4.3 GB and 10 s) before the context
  // check refused it. Now encoding stops once the prompt certainly takes more than the context
  // (512 positions) + 1 ids: one piece of two million bytes (kjv-llama: no pre-tokenizer), and
  // a million short words (kjv-qwen2 splits them into pieces), as text and as JSONL, and -p.
  ds::test::TempDir dir;
  const auto t = dir.path() / "t.h5";
  std::ofstream(dir.path() / "one.txt") << std::string(2 << 20, 'x') << "\n";
  std::string words;
  for (int i = 0; i < (1 << 20); ++i) words += "a ";
  std::ofstream(dir.path() / "words.jsonl") << "{\"text\": \"In the beginning\"}\n"
                                            << "{\"text\": \"" << words << "\"}\n";
  const std::string more = "the prompt has more than 513 tokens, more than the context of 512";
  check_input_error(
      run_cli("run -n 2 --prompts " + (dir.path() / "one.txt").string() + " -o " + t.string()),
      "one.txt:1: " + more);
  check_input_error(run_cli("run -n 2 --model " + ds::test::qwen2_hf() + " --prompts " +
                            (dir.path() / "words.jsonl").string() + " -o " + t.string()),
                    "words.jsonl:2: " + more);
  check_input_error(run_cli("run -n 2 -p " + std::string(100000, 'x') + " -o " + t.string()), more);
  // an "ids" list is refused while it is parsed (20 million ids took 1 GB and 8 s to build)
  std::string ids = "{\"ids\": [1";
  for (int i = 0; i < (1 << 20); ++i) ids += ",400";
  std::ofstream(dir.path() / "ids.jsonl") << ids << "]}\n";
  check_input_error(
      run_cli("run -n 2 --prompts " + (dir.path() / "ids.jsonl").string() + " -o " + t.string()),
      "ids.jsonl:1: " + more);
  CHECK_FALSE(fs::exists(t));
}

TEST_CASE("a prompts file of more than 100000 prompts is refused by its line", "[cli][bad-input]") {
  // 15 million one-letter lines fit the 64 MiB limit and took 3.8 GB; the count is bounded.
  ds::test::TempDir dir;
  std::string lines;
  for (int i = 0; i < 100001; ++i) lines += "a\n";
  std::ofstream(dir.path() / "many.txt") << lines;
  const auto t = dir.path() / "t.h5";
  check_input_error(
      run_cli("run -n 1 --prompts " + (dir.path() / "many.txt").string() + " -o " + t.string()),
      "many.txt' holds more than 100000 prompts (line 100001)");
  CHECK_FALSE(fs::exists(t));
}

TEST_CASE("a config.json that is a directory or never ends is refused", "[cli][bad-input]") {
  ds::test::TempDir dir;
  fs::create_directories(dir.path() / "a" / "config.json");
  check_input_error(run_cli("generate --prompt-ids 1 --model " + (dir.path() / "a").string()),
                    "config.json' is a directory");
  fs::create_directories(dir.path() / "b");
  fs::create_symlink("/dev/zero", dir.path() / "b" / "config.json");
  check_input_error(run_cli("generate --prompt-ids 1 --model " + (dir.path() / "b").string()),
                    "config.json' is not a regular file");  // never read: a model's own file
  fs::create_directories(dir.path() / "c");
  std::ofstream(dir.path() / "c" / "config.json").flush();  // empty
  check_input_error(run_cli("generate --prompt-ids 1 --model " + (dir.path() / "c").string()),
                    "config.json: not valid JSON");
}

TEST_CASE("a sharded index whose weight_map names no file is refused", "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path m = config_only_model(dir.path() / "m", "");
  std::ofstream(m / "model.safetensors.index.json") << R"({"weight_map": {"w": 7}})";
  check_input_error(run_cli("generate --prompt-ids 1 --model " + m.string()),
                    "tensor 'w' maps to 7, not a file name");
}

TEST_CASE("a model path that is a FIFO is refused without waiting for a writer",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path fifo = dir.path() / "model.bin";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_input_error(run_cli("generate --prompt-ids 1 --model " + fifo.string()),
                    "is not a regular file");
}

TEST_CASE("synth --force -o FILE refuses to replace a file", "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path file = dir.path() / "notes.txt";
  std::ofstream(file) << "keep me\n";
  check_input_error(run_cli("synth --shape tiny --force -o " + file.string()),
                    "'" + file.string() + "' exists and is not a folder");
  CHECK(ds::test::slurp(file) == "keep me\n");
}

TEST_CASE("negative seeds are refused, not stored as 2^64 - 1", "[cli][bad-input]") {
  auto r = run_cli("generate --seed -1 --dry-run");
  check_input_error(r, "--seed");
  CHECK_FALSE(has(r.out, "seed=18446744073709551615"));
  check_input_error(run_cli("synth --shape tiny --seed -1 -o /nonexistent/x"), "--seed");
  ds::test::TempDir dir;
  std::ofstream(dir.path() / "s.toml") << "seed = -1\n";
  check_input_error(run_cli("run --dry-run --config " + (dir.path() / "s.toml").string()),
                    "bad value for 'seed'");
}

TEST_CASE("numeric run options out of range are refused", "[cli][bad-input]") {
  check_input_error(run_cli("generate --prompt-ids 1 --repetition-penalty inf"),
                    "invalid repetition_penalty 'inf'");
  // The kjv-llama vocabulary has 1024 tokens: a stop token past it could never stop anything.
  auto r = run_cli("generate --prompt-ids 1 --stop-token 99999");
  check_input_error(r, "invalid stop_token '99999'");
  CHECK(has(r.err, "(0..1023)"));
  check_input_error(run_cli("generate --prompt-ids 1 --max-new 2147483648"), "--max-new");
}

TEST_CASE("command-line parser errors have the driftscope form and a hint", "[cli][bad-input]") {
  struct Case {
    const char* args;
    const char* message;
    const char* hint;
  };
  const Case cases[] = {
      {"generate --bogus", "driftscope: The following argument was not expected: --bogus",
       "hint: see driftscope generate --help"},
      {"generate --max-new", "--max-new", "hint: see driftscope generate --help"},
      // a run-configuration field's value: the field's own hint first
      {"run --batch many", "driftscope: --batch: invalid batch 'many'",
       "hint: --batch takes a whole number >= 1; see driftscope run --help"},
      {"diff only-one.h5", "b is required", "hint: see driftscope diff --help"},
      {"nonsense", "driftscope: unknown command 'nonsense'", "hint: commands: generate, "},
      {"", "driftscope: no command given", "hint: driftscope --help lists the commands"},
      {"--bogus", "driftscope: no command given (the first argument is '--bogus')",
       "hint: options go after the command"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    auto r = run_cli(c.args);
    check_input_error(r, c.message);
    CHECK(has(r.err, c.hint));
    CHECK_FALSE(has(r.err, "Run with --help"));
  }
  // --help and --version still print to stdout and exit 0.
  auto h = run_cli("generate --help");
  CHECK(h.exit_code == 0);
  CHECK(has(h.out, "--max-new"));
  CHECK(run_cli("--version").exit_code == 0);
}

TEST_CASE("error messages of run's own options carry a hint", "[cli][bad-input]") {
  ds::test::TempDir dir;
  ds::test::write_prompts(dir.path() / "p.txt", 1);
  check_input_error(run_cli("run --prompt-ids 1 --prompts " + (dir.path() / "p.txt").string() +
                            " -o " + (dir.path() / "t.h5").string()),
                    "--prompts cannot be combined with --prompt or --prompt-ids");
}

TEST_CASE("a model without a tokenizer beside it asks for one or for --prompt-ids",
          "[cli][bad-input]") {
  ds::test::TempDir dir;
  const fs::path m = dir.path() / "m";
  REQUIRE(run_cli("synth --shape tiny -o " + m.string()).exit_code == 0);
  check_input_error(run_cli("generate --prompt hello --model " + m.string()),
                    "no tokenizer.json in '" + m.string() + "'");
  check_input_error(run_cli("tokenize --text hello --tokenizer " + m.string()),
                    "has no tokenizer.json");
}

TEST_CASE("control characters in echoed names are shown escaped", "[cli][bad-input]") {
  // ESC from a file name, a command name or a recorded model path used to reach the terminal
  // raw ("\033[31m" turned the rest of the terminal red).
  ds::test::TempDir dir;
  const std::string esc = "\x1b[31m";
  auto no_raw_esc = [](const ds::test::CliResult& r) {
    CHECK(r.err.find('\x1b') == std::string::npos);
    CHECK(r.out.find('\x1b') == std::string::npos);
  };
  auto missing = run_cli("show '" + (dir.path() / ("x" + esc + "red.h5")).string() + "'");
  check_input_error(missing, "x\\e[31mred.h5");
  no_raw_esc(missing);
  auto command = run_cli("'" + esc + "run'");
  check_input_error(command, "unknown command '\\e[31mrun'");
  no_raw_esc(command);
  // a model reached through a folder whose name holds ESC, and a trace named with one
  const fs::path model = dir.path() / ("m" + esc + "odel");
  fs::create_directory_symlink(fs::absolute(ds::test::model_hf()), model);
  const fs::path t = dir.path() / ("t" + esc + ".h5");
  auto run = run_cli("run -n 2 --prompt-ids 1,400 --model '" + model.string() + "' -o '" +
                     t.string() + "'");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  no_raw_esc(run);
  CHECK(has(run.err, "t\\e[31m.h5"));
  auto show = run_cli("show '" + t.string() + "'");
  REQUIRE(show.exit_code == 0);
  no_raw_esc(show);
  CHECK(has(show.out, "m\\e[31model"));
  auto diff = run_cli("diff --color never '" + t.string() + "' '" + t.string() + "'");
  REQUIRE(diff.exit_code == 0);
  no_raw_esc(diff);
  CHECK(has(diff.out, "t\\e[31m.h5"));
}

TEST_CASE("file errors name the path and the reason with a hint for it", "[cli][bad-input]") {
  // "folder '...' does not exist" had no hint; a file where a folder belongs gave
  // "filesystem error: cannot create directories: Not a directory [...]" and a generic hint.
  ds::test::TempDir dir;
  const fs::path file = dir.path() / "p.txt";
  ds::test::write_prompts(file, 2);
  auto missing =
      run_cli("run -n 2 --prompt-ids 1,400 -o " + (dir.path() / "no" / "such" / "t.h5").string());
  check_input_error(missing,
                    "folder '" + (dir.path() / "no" / "such").string() + "' does not exist");
  CHECK(has(missing.err, "hint: create it first"));
  auto sweep =
      run_cli("sweep --grid dtype=fp32 -n 2 --prompts " + file.string() + " -o " + file.string());
  check_input_error(sweep, "-o '" + file.string() + "' is not a folder");
  CHECK_FALSE(has(sweep.err, "filesystem error"));
  CHECK_FALSE(has(sweep.err, "[" + file.string() + "]"));
  CHECK(has(sweep.err, "hint: sweep writes its files into a folder"));
}
