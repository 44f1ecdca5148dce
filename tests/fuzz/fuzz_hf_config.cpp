// Fuzz target: a Hugging Face config.json through the whole loader (load_hf_model), beside the
// bundled kjv-llama weights: config parsing and validation, the memory check, and the
// loader's tensor lookups and shape checks against whatever the config claims.
#include <filesystem>

#include "src/model/model.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    const fs::path d = ds::fuzz::scratch_dir() / "hf_model";
    fs::create_directories(d);
    fs::create_symlink(ds::fuzz::source_file("models/kjv-llama/model.safetensors"),
                       d / "model.safetensors");
    return d;
  }();
  return ds::fuzz::guarded([&] {
    ds::fuzz::write_input({data, size}, "hf_model/config.json");
    const ds::Model m = ds::load_hf_model(dir);
    ds::fuzz::require(m.config.dim > 0 && m.config.n_layers > 0 && m.config.vocab_size > 0,
                      "a loaded config has positive sizes");
    ds::fuzz::require(
        m.weights.embed.size() == static_cast<size_t>(m.config.vocab_size) * m.config.dim,
        "the embedding has vocab x dim values");
    (void)ds::describe(m.config);
  });
}
