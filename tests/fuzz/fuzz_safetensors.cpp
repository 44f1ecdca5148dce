// Fuzz target: a .safetensors file (u64 header length, JSON header, data) through
// SafetensorsCheckpoint::open, then every tensor converted to float32.
#include "src/model/safetensors.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ds::fuzz::guarded([&] {
    const auto path = ds::fuzz::write_input({data, size}, "model.safetensors");
    const auto ck = ds::SafetensorsCheckpoint::open(path);
    for (const auto& [name, t] : ck.tensors()) {
      ds::fuzz::require(t.data.size() == static_cast<size_t>(t.numel()) * ds::traits(t.dtype).bytes,
                        "a tensor's bytes match its shape and dtype");
      const auto values = ds::SafetensorsCheckpoint::to_f32(t);
      ds::fuzz::require(values.size() == static_cast<size_t>(t.numel()),
                        "to_f32 gives numel values");
    }
  });
}
