// Encoding speed of the Qwen3 tokenizer (byte-level BPE, 151k merges) on ~1 MB of text, printed
// beside the speed of reading the same file, so the ratio says what tokenization costs.
//   bench_tokenizer_speed [TEXT_FILE ...]
// Without arguments it makes two ~1 MB texts in the temp directory: "source" (this repository's
// C++ and Markdown, repeated: code and English, many recurring words) and "vocab-mix" (random Qwen
// tokens decoded: every script, few repeats, the hard case for the word cache).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "src/tokenizer/load.h"
#include "src/tokenizer/tokenizer.h"
#include "src/tokenizer/utf8.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kTargetBytes = 1 << 20;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("ds_bench_" + name + ".txt");
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// This repository's sources and docs, repeated up to ~1 MB.
std::string source_text() {
  std::vector<fs::path> files;
  for (const char* dir : {"src", "tests", "docs", "trace", "diff", "viewer", "kernels"}) {
    const fs::path root = fs::path(DRIFTSCOPE_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      const auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".cpp" || ext == ".h" || ext == ".md")) {
        files.push_back(e.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  std::string text;
  while (text.size() < kTargetBytes && !files.empty()) {
    for (const fs::path& f : files) {
      const std::string content = read_file(f);
      if (ds::utf8_is_valid(content)) text += content;
      if (text.size() >= kTargetBytes) break;
    }
  }
  return text;
}

// Random ids of the tokenizer's vocabulary, decoded, up to ~1 MB.
std::string vocab_mix_text(const ds::Tokenizer& tok) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(0, 151642);  // the BPE vocabulary, no added tokens
  std::string text;
  std::vector<int32_t> ids;
  while (text.size() < kTargetBytes) {
    ids.clear();
    for (int i = 0; i < 1000; ++i) ids.push_back(id(rng));
    text += tok.decode(ids);
  }
  return text;
}

// Reading the file into memory, as fast as it goes (best of several runs; page-cached).
double read_mb_per_s(const fs::path& path, size_t bytes) {
  double best = 1e9;
  for (int run = 0; run < 20; ++run) {
    const auto t0 = Clock::now();
    const std::string text = read_file(path);
    best = std::min(best, seconds_since(t0));
    if (text.size() != bytes) std::abort();
  }
  return bytes / 1e6 / best;
}

void bench(const ds::Tokenizer& tok, const std::string& name, const fs::path& path) {
  const size_t bytes = fs::file_size(path);
  const double read_speed = read_mb_per_s(path, bytes);
  const std::string text = read_file(path);

  // The first encode starts with the word cache of earlier texts only; later runs find every
  // word cached. Best of 3 for those.
  auto t0 = Clock::now();
  const size_t n_tokens = tok.encode(text, false).size();
  const double first = seconds_since(t0);
  double best = 1e9;
  for (int run = 0; run < 3; ++run) {
    t0 = Clock::now();
    tok.encode(text, false);
    best = std::min(best, seconds_since(t0));
  }
  const double encode_first = bytes / 1e6 / first, encode_warm = bytes / 1e6 / best;
  std::printf(
      "%-10s %8.2f MB %9zu tok %10.1f MB/s read %8.2f MB/s encode (first) %8.2f MB/s "
      "encode (warm cache) %7.0fx\n",
      name.c_str(), bytes / 1e6, n_tokens, read_speed, encode_first, encode_warm,
      read_speed / encode_first);
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path qwen = fs::path(DRIFTSCOPE_SOURCE_DIR) / "tests/data/tokenizers/qwen3";
  auto t0 = Clock::now();
  const auto tok = ds::load_tokenizer(qwen);
  const double load = seconds_since(t0);
  std::printf("Qwen3 tokenizer.json (%.1f MB): loaded in %.2f s\n",
              fs::file_size(qwen / "tokenizer.json") / 1e6, load);
  std::printf("%-10s %8s %13s %16s %24s %31s %8s\n", "text", "size", "tokens", "read", "encode", "",
              "read/encode");

  std::vector<std::pair<std::string, fs::path>> inputs;
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) inputs.emplace_back(fs::path(argv[i]).filename(), argv[i]);
  } else {
    inputs.emplace_back("source", write_temp("source", source_text()));
    inputs.emplace_back("vocab-mix", write_temp("vocab_mix", vocab_mix_text(*tok)));
  }
  for (const auto& [name, path] : inputs) bench(*tok, name, path);
  if (argc <= 1) {
    for (const auto& [name, path] : inputs) fs::remove(path);
  }
  return 0;
}
