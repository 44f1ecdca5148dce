// `driftscope generate` end to end: output on the default model, and bad input answered with a
// one-line error, a hint, and exit code 2 (never a crash).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/paths.h"
#include "tests/support/run_cli.h"

namespace fs = std::filesystem;
using ds::test::check_input_error;
using ds::test::run_cli;

namespace {

// A scratch copy of the bundled kjv-llama folder (Hugging Face files) that a test may damage.
struct ScratchModel {
  fs::path dir;
  ScratchModel() {
    dir = fs::temp_directory_path() /
          ("ds_scratch_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::remove_all(dir);
    fs::copy(ds::test::model_hf(), dir);
    for (const auto& e : fs::directory_iterator(dir)) {
      fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    }
  }
  ~ScratchModel() { fs::remove_all(dir); }
  static int& counter() {
    static int c = 0;
    return c;
  }
  void edit_config(const std::function<void(nlohmann::json&)>& f) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / "config.json"));
    f(j);
    std::ofstream(dir / "config.json") << j.dump(1);
  }
};

}  // namespace

TEST_CASE("generate runs the bundled model by default", "[cli]") {
  auto r = run_cli("generate --prompt 'In the beginning' --max-new 20");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.starts_with("In the beginning"));
  CHECK(r.err.find("kjv-llama.bin") != std::string::npos);
  CHECK(r.err.find("stop: max_new") != std::string::npos);
}

TEST_CASE("generate --ids prints prompt and generated ids", "[cli]") {
  auto r = run_cli("generate --prompt-ids 1 --max-new 5 --ids -q");
  REQUIRE(r.exit_code == 0);
  std::istringstream in(r.out);
  std::vector<int> ids;
  for (int id; in >> id;) ids.push_back(id);
  REQUIRE(ids.size() == 6);  // the prompt's BOS, then 5 generated ids
  CHECK(ids[0] == 1);
  for (int id : ids) CHECK((id >= 0 && id < 1024));
  CHECK(r.err.empty());
}

TEST_CASE("generate: fp64 and sampling options are accepted", "[cli]") {
  auto a = run_cli("generate --max-new 30 --temperature 0.8 --top-p 0.9 --seed 5 -q");
  auto b = run_cli("generate --max-new 30 --temperature 0.8 --top-p 0.9 --seed 5 -q");
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);  // same seed, same text
  CHECK(run_cli("generate --max-new 5 --dtype fp64 -q").exit_code == 0);
}

TEST_CASE("missing model path: clear error, exit 2", "[cli][errors]") {
  check_input_error(run_cli("generate --model /nonexistent/model.bin"), "does not exist");
}

TEST_CASE("truncated safetensors: clear error, exit 2", "[cli][errors]") {
  ScratchModel m;
  fs::resize_file(m.dir / "model.safetensors", fs::file_size(m.dir / "model.safetensors") / 2);
  check_input_error(run_cli("generate --model " + m.dir.string()), "corrupt safetensors");
}

TEST_CASE("corrupt safetensors header: clear error, exit 2", "[cli][errors]") {
  ScratchModel m;
  {
    std::fstream f(m.dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    const char huge[8] = {'\xff', '\xff', '\xff', '\x0f', 0, 0, 0, 0};
    f.write(huge, 8);
  }
  check_input_error(run_cli("generate --model " + m.dir.string()), "header length");
  {
    std::fstream f(m.dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    const char small[8] = {16, 0, 0, 0, 0, 0, 0, 0};
    f.write(small, 8);
  }
  check_input_error(run_cli("generate --model " + m.dir.string()), "not valid JSON");
}

TEST_CASE("tensor with the wrong shape: clear error, exit 2", "[cli][errors]") {
  ScratchModel m;
  m.edit_config([](nlohmann::json& j) { j["intermediate_size"] = 257; });
  check_input_error(run_cli("generate --model " + m.dir.string()), "has shape [256, 128]");
}

TEST_CASE("unknown architecture: clear error, exit 2", "[cli][errors]") {
  ScratchModel m;
  m.edit_config([](nlohmann::json& j) { j["model_type"] = "gpt2"; });
  check_input_error(run_cli("generate --model " + m.dir.string()), "unknown architecture 'gpt2'");
}

TEST_CASE("prompt longer than the context: clear error, exit 2", "[cli][errors]") {
  std::string ids = "1";
  for (int i = 0; i < 600; ++i) ids += ",400";
  check_input_error(run_cli("generate --prompt-ids " + ids), "more than the context of 512");
}

TEST_CASE("unknown token id: clear error, exit 2", "[cli][errors]") {
  check_input_error(run_cli("generate --prompt-ids 1,9999"), "unknown token id 9999");
  check_input_error(run_cli("generate --prompt-ids 1,x"), "not a token id");
}

TEST_CASE("bad option values: clear error, exit 2", "[cli][errors]") {
  check_input_error(run_cli("generate --dtype fp8"), "invalid dtype 'fp8'");
  check_input_error(run_cli("generate --top-p 1.5"), "top_p");
  auto r = run_cli("generate --no-such-flag");
  CHECK(r.exit_code == 2);
  auto h = run_cli("generate --help");
  CHECK(h.exit_code == 0);
  CHECK(h.out.find("--max-new") != std::string::npos);
}

TEST_CASE("generate on a checkpoint without a tokenizer prints ids from --prompt-ids", "[cli]") {
  ScratchModel m;
  const auto with_tokenizer =
      run_cli("generate --model " + m.dir.string() + " --prompt-ids 1 --max-new 5 --ids -q");
  REQUIRE(with_tokenizer.exit_code == 0);
  fs::remove(m.dir / "tokenizer.json");
  auto r = run_cli("generate --model " + m.dir.string() + " --prompt-ids 1 --max-new 5");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == with_tokenizer.out);  // the same ids as with the tokenizer
  CHECK(r.err.find("no tokenizer beside the model, printing token ids") != std::string::npos);
  // A text prompt still needs a tokenizer.
  check_input_error(run_cli("generate --model " + m.dir.string() + " --prompt 'The cat'"),
                    "no tokenizer.json");
}

// llama2.c's run.c ends a story at BOS (id 1): built from karpathy/llama2.c and run as
// `run stories260K.bin -z tok512.bin -t 0 -n 256 -i "The cat"`, it prints the text below and
// breaks when the token for position 213 is BOS. (The third-party stories260K, ../shared/models.)
TEST_CASE("generate from a llama2.c model stops at BOS as run.c does", "[cli]") {
  DS_REQUIRE_SHARED_MODELS();
  const std::string m = " -m " + ds::test::stories_bin();
  auto ids = run_cli("generate -p 'The cat' --max-new 256 --ids" + m);
  INFO(ids.err);
  REQUIRE(ids.exit_code == 0);
  std::vector<std::string> tokens;
  {
    std::istringstream in(ids.out);
    for (std::string t; in >> t;) tokens.push_back(t);
  }
  CHECK(tokens.size() == 214);  // positions 0..212, then the BOS that ends the story
  CHECK(tokens.back() == "1");
  CHECK(ids.err.find("stop: eos") != std::string::npos);
  auto text = run_cli("generate -p 'The cat' --max-new 256 -q" + m);
  CHECK(text.out.starts_with("The cat and a boy were playing in the park."));
  CHECK(text.out.ends_with("Tim and the boy were happy. They played together every day.\n"));
  // --stop-token none overrides the convention: 4 prompt tokens (BOS and three for "The cat")
  // + 256 generated.
  auto all = run_cli("generate -p 'The cat' --max-new 256 --ids -q --stop-token none" + m);
  std::istringstream in(all.out);
  size_t n = 0;
  for (std::string t; in >> t;) ++n;
  CHECK(n == 260);
  check_input_error(run_cli("generate --stop-token eos"), "invalid stop_token 'eos'");
}

TEST_CASE("the Hugging Face stories260K stops at its EOS, not at BOS", "[cli]") {
  DS_REQUIRE_SHARED_MODELS();
  // Its tokenizer.json declares EOS </s> (id 2): from "The cat" it runs past the BOS where the
  // llama2.c file stops (position 213) to the limit.
  auto r =
      run_cli("generate --model " + ds::test::stories_hf() + " -p 'The cat' --max-new 256 --ids");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> tokens;
  std::istringstream in(r.out);
  for (std::string t; in >> t;) tokens.push_back(t);
  REQUIRE(tokens.size() > 214);
  CHECK(tokens[213] == "1");  // the same BOS as the .bin's, and generation went on
}
