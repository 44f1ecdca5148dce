// Weights are used where they lie in the checkpoint file, in its format (F32, BF16, F16): views
// into the mapping, checked against the file's bytes read independently; copies only where the
// layout changes (llama2.c wq/wk, permuted to the half-split RoPE layout).
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>

#include "src/model/model.h"
#include "src/model/safetensors.h"
#include "tests/support/paths.h"
#include "tests/support/synthetic_checkpoint.h"
#include "tests/support/temp_dir.h"

namespace {

std::vector<char> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("llama2.c fp32 weights are mapped, wq and wk copied to permute their rows",
          "[model][mapping]") {
  const ds::Model m = ds::load_model(ds::test::model_bin());
  const auto bytes = file_bytes(ds::test::model_bin());
  const auto& c = m.config;
  // embed starts right after the 28-byte header; wv of layer 0 after embed, the attention norms,
  // every wq and every wk (llama2.c stores each kind for all layers together)
  const size_t D = c.dim, L = c.n_layers, V = c.vocab_size, Q = c.q_dim(), KV = c.kv_dim();
  const size_t wv0 = 28 + 4 * (V * D + L * D + L * Q * D + L * KV * D);
  CHECK(m.weights.embed.mapped());
  CHECK(m.weights.layers[0].wv.mapped());
  CHECK(m.weights.layers[1].w_down.mapped());
  CHECK(m.weights.final_norm.mapped());
  CHECK_FALSE(m.weights.layers[0].wq.mapped());
  CHECK_FALSE(m.weights.layers[0].wk.mapped());
  REQUIRE(bytes.size() > wv0 + 4 * KV * D);
  CHECK(std::memcmp(m.weights.embed.data(), bytes.data() + 28, 4 * V * D) == 0);
  CHECK(std::memcmp(m.weights.layers[0].wv.data(), bytes.data() + wv0, 4 * KV * D) == 0);
}

TEST_CASE("safetensors F32, BF16 and F16 weights are mapped in their stored format",
          "[model][mapping]") {
  ds::test::TempDir dir;
  ds::test::SyntheticSpec spec;
  spec.tied = false;
  for (auto dtype :
       {ds::test::StorageDtype::F32, ds::test::StorageDtype::BF16, ds::test::StorageDtype::F16}) {
    spec.dtype = dtype;
    const std::string name = ds::test::storage_dtype_name(dtype);
    INFO(name);
    const auto ref = ds::test::write_synthetic_checkpoint(dir.path() / name, spec);
    const ds::Model m = ds::load_model(dir.path() / name);
    const ds::Storage expect = dtype == ds::test::StorageDtype::F32    ? ds::Storage::native
                               : dtype == ds::test::StorageDtype::BF16 ? ds::Storage::bf16
                                                                       : ds::Storage::f16;
    for (const ds::WeightTensor* t : ds::model_tensors(m)) {
      CHECK(t->mapped());
      CHECK(t->format() == expect);
    }
    // widened values: those the test wrote (its own rounding, its own writer)
    CHECK(m.weights.layers[1].w_gate == ref.weights.layers[1].gate_proj);
    CHECK(m.weights.lm_head == ref.weights.lm_head);
    CHECK(m.weights.layers[0].attn_norm == ref.weights.layers[0].input_layernorm);
    // nothing held beyond the file's tensor bytes: their sum is the file minus its header
    const auto bytes = file_bytes(dir.path() / name / "model.safetensors");
    uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    CHECK(ds::model_weight_bytes(m) == bytes.size() - 8 - header);
  }
}

TEST_CASE("mapped weights outlive the model they were loaded into", "[model][mapping]") {
  ds::WeightTensor wv;
  {
    const ds::Model m = ds::load_model(ds::test::model_bin());
    wv = m.weights.layers[0].wv;
  }
  REQUIRE(wv.mapped());
  // read after the model (and its loader's mapping handle) is gone: the same values as a new load
  const ds::Model again = ds::load_model(ds::test::model_bin());
  CHECK(std::memcmp(wv.data(), again.weights.layers[0].wv.data(), 4 * wv.size()) == 0);
}

TEST_CASE("an empty safetensors tensor with huge other dimensions counts 0 elements",
          "[model][safetensors]") {
  ds::test::TempDir dir;
  // [2^62, 4, 0]: no elements and no bytes, but 2^62 * 4 overflows int64 if multiplied first
  // (found by reading the code the fuzz_safetensors target reaches).
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[4611686018427387904,4,0],"data_offsets":[0,0]}})";
  const auto path = dir.path() / "empty.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header;
  }
  const auto ck = ds::SafetensorsCheckpoint::open(path);
  const ds::TensorInfo& t = ck.get("w");
  CHECK(t.numel() == 0);
  CHECK(ds::SafetensorsCheckpoint::to_f32(t).empty());
}
