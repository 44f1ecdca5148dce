// Fuzz target: a Hugging Face tokenizer.json loaded (load_tokenizer: model, normalizer,
// pre-tokenizer, decoder, post-processor, added tokens), then used: a few fixed texts encoded
// under every option, the ids decoded, every token's text and the policy printed.
#include <string_view>

#include "src/tokenizer/load.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

constexpr std::string_view kTexts[] = {
    "Once upon a time, there was a little girl named Lily.",
    " leading space, two  spaces,\ttab\nnewline\r\n",
    "<s></s><unk><|im_start|>user<|im_end|><think>",
    "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \u4f60\u597d \U0001F600 123 4567 x=1;y=2",
    "",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ds::fuzz::guarded([&] {
    const auto path = ds::fuzz::write_input({data, size}, "tokenizer.json");
    const auto tok = ds::load_tokenizer(path);
    const int32_t vocab = tok->vocab_size();
    for (std::string_view text : kTexts) {
      for (bool add_special : {false, true}) {
        for (bool special_in_text : {false, true}) {
          const auto ids = tok->encode(text, ds::EncodeOptions{.add_special = add_special,
                                                               .special_in_text = special_in_text});
          for (int32_t id : ids)
            ds::fuzz::require(id >= 0 && id < vocab, "encode gives ids < vocab");
          (void)tok->decode(ids, false);
          (void)tok->decode(ids, true);
        }
      }
    }
    for (int32_t id = 0; id < vocab && id < 4096; ++id) (void)tok->token_text(id);
    (void)tok->policy_json();
  });
}
