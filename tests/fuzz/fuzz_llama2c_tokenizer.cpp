// Fuzz target: a llama2.c tokenizer.bin (int32 max_token_length, then per token a float32 score,
// an int32 length and the bytes) loaded to its end, then used on a few fixed texts.
#include <string_view>

#include "src/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ds::fuzz::guarded([&] {
    const auto path = ds::fuzz::write_input({data, size}, "tokenizer.bin");
    const auto tok = ds::load_llama2c_tokenizer(path);
    const int32_t vocab = tok->vocab_size();
    for (std::string_view text : {"Once upon a time, there was a little girl.", " \n\t\xff\x80",
                                  "caf\u00e9 \U0001F600", ""}) {
      for (bool add_special : {false, true}) {
        const auto ids = tok->encode(text, add_special);
        for (int32_t id : ids) ds::fuzz::require(id >= 0 && id < vocab, "encode gives ids < vocab");
        (void)tok->decode(ids, false);
      }
    }
    for (int32_t id = 0; id < vocab && id < 4096; ++id) (void)tok->token_text(id);
    (void)tok->policy_json();
  });
}
