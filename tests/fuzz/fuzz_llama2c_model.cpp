// Fuzz target: a llama2.c checkpoint (.bin: 7-int32 header, then float32 weights) through
// load_llama2c_model.
#include "src/model/model.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ds::fuzz::guarded([&] {
    const auto path = ds::fuzz::write_input({data, size}, "model.bin");
    const ds::Model m = ds::load_llama2c_model(path);
    ds::fuzz::require(m.weights.layers.size() == static_cast<size_t>(m.config.n_layers),
                      "one weight set per layer");
    ds::fuzz::require(
        m.classifier().size() == static_cast<size_t>(m.config.vocab_size) * m.config.dim,
        "the classifier has vocab x dim values");
  });
}
