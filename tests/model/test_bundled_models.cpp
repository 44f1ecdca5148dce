// The bundled models are the files scripts/make_models made: every file under models/ is listed in
// models/PROVENANCE.md with its size and sha256, and matches them. (CI does not retrain; this is
// what ties the committed bytes to the recorded training run.)
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "src/model/sha256.h"
#include "tests/support/paths.h"

namespace fs = std::filesystem;

namespace {

struct Listed {
  uintmax_t bytes;
  std::string sha256;
};

// "- `kjv-llama/config.json` — 666 bytes, sha256 <64 hex>" lines, by path.
std::map<std::string, Listed> provenance_lines() {
  std::ifstream in(ds::test::models_dir() + "/PROVENANCE.md");
  REQUIRE(in);
  const std::regex line(R"(^- `([^`]+)` — ([0-9,]+) bytes, sha256 ([0-9a-f]{64})$)");
  std::map<std::string, Listed> listed;
  for (std::string s; std::getline(in, s);) {
    std::smatch m;
    if (!std::regex_match(s, m, line)) continue;
    std::string digits = m[2].str();
    std::erase(digits, ',');
    listed[m[1].str()] = {std::stoull(digits), m[3].str()};
  }
  return listed;
}

}  // namespace

TEST_CASE("every file under models/ is listed in PROVENANCE.md with its size and sha256",
          "[model][provenance]") {
  const auto listed = provenance_lines();
  REQUIRE(listed.size() >= 10);
  const fs::path root = ds::test::models_dir();
  size_t seen = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file() || e.path().filename() == "PROVENANCE.md") continue;
    const std::string rel = fs::relative(e.path(), root).generic_string();
    INFO(rel);
    ++seen;
    const auto it = listed.find(rel);
    REQUIRE(it != listed.end());
    CHECK(fs::file_size(e.path()) == it->second.bytes);
    CHECK(ds::sha256_file(e.path()) == it->second.sha256);
  }
  CHECK(seen == listed.size());  // and nothing listed is missing
}

TEST_CASE("the bundled models: three families, each file at most 3 MB, the default in both formats",
          "[model][provenance]") {
  for (const auto& e : fs::recursive_directory_iterator(ds::test::models_dir())) {
    if (e.is_regular_file()) CHECK(fs::file_size(e.path()) <= 3'000'000);
  }
  for (const std::string name : {"kjv-llama", "kjv-qwen2", "kjv-mistral"}) {
    INFO(name);
    CHECK(fs::exists(ds::test::models_dir() + "/" + name + "/config.json"));
    CHECK(fs::exists(ds::test::models_dir() + "/" + name + "/model.safetensors"));
    CHECK(fs::exists(ds::test::models_dir() + "/" + name + "/tokenizer.json"));
  }
  CHECK(fs::exists(ds::test::model_bin()));
  CHECK(fs::exists(ds::test::model_tok()));
}
