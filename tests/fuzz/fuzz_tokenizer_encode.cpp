// Fuzz target: text through the bundled tokenizers (kjv-llama's tokenizer.bin and tokenizer.json,
// Mistral and Qwen3): the first byte picks the tokenizer and the options, the
// rest is the text. Encoded ids must lie in the vocabulary and decode without error.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/tokenizer/load.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

const std::vector<std::unique_ptr<ds::Tokenizer>>& tokenizers() {
  static const auto all = [] {
    std::vector<std::unique_ptr<ds::Tokenizer>> t;
    t.push_back(ds::load_tokenizer(ds::fuzz::source_file("models/kjv-llama/tokenizer.bin"), 1024));
    t.push_back(ds::load_tokenizer(ds::fuzz::source_file("models/kjv-llama")));
    t.push_back(ds::load_tokenizer(ds::fuzz::source_file("tests/data/tokenizers/mistral")));
    t.push_back(ds::load_tokenizer(ds::fuzz::source_file("tests/data/tokenizers/qwen3")));
    return t;
  }();
  return all;
}

}  // namespace

// libFuzzer calls this once before the first input, outside the per-input timeout (loading the
// Qwen3 tokenizer.json, 11 MB, takes seconds under the sanitizers); the replay driver does not,
// and the first input loads them instead.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& toks = tokenizers();  // loaded outside guarded(): a bundled file must load
  if (size == 0) return 0;
  const ds::Tokenizer& tok = *toks[data[0] % toks.size()];
  const ds::EncodeOptions options{.add_special = (data[0] & 4) != 0,
                                  .special_in_text = (data[0] & 8) != 0};
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  return ds::fuzz::guarded([&] {
    const auto ids = tok.encode(text, options);
    for (int32_t id : ids)
      ds::fuzz::require(id >= 0 && id < tok.vocab_size(), "encode gives ids < vocab");
    (void)tok.decode(ids, false);
    (void)tok.decode(ids, true);
  });
}
