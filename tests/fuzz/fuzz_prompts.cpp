// Fuzz target: a prompts file (plain lines or JSONL {"text"} / {"ids"}) read with the bundled
// llama2.c and tokenizer.json tokenizers and without one, then the add_bos policies applied.
#include <memory>
#include <optional>
#include <string_view>

#include "src/experiment/prompts.h"
#include "src/tokenizer/load.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto llama2c =
      ds::load_tokenizer(ds::fuzz::source_file("models/kjv-llama/tokenizer.bin"), 1024);
  static const auto hf = ds::load_tokenizer(ds::fuzz::source_file("models/kjv-llama"));
  const auto path = ds::fuzz::write_input({data, size}, "prompts.txt");
  const ds::Tokenizer* const tokenizers[] = {nullptr, llama2c.get(), hf.get()};
  for (const ds::Tokenizer* tok : tokenizers) {
    for (bool special_in_text : {true, false}) {
      ds::fuzz::guarded([&] {
        auto prompts = ds::read_prompts_file(path, tok, special_in_text);
        ds::fuzz::require(!prompts.empty(), "a prompts file that reads holds a prompt");
        for (const auto& p : prompts) ds::fuzz::require(!p.ids.empty(), "every prompt has tokens");
        for (const ds::AddBos policy : {ds::AddBos::automatic, ds::AddBos::on, ds::AddBos::off}) {
          auto copy = prompts;
          ds::apply_add_bos(copy, policy,
                            tok != nullptr ? tok->bos_id() : std::optional<int32_t>(1));
          if (policy == ds::AddBos::on) {
            for (const auto& p : copy)
              ds::fuzz::require(!p.ids.empty(), "add_bos on keeps a token");
          }
        }
      });
    }
  }
  return 0;
}
