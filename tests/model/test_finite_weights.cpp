// A NaN or an infinity in any weight is refused at load, naming the tensor and the element (a
// damaged checkpoint otherwise generates nothing, silently), in every stored
// format; and a llama3 rope_scaling factor outside 1..1024 (a denormal one divided frequencies
// into infinities) is refused from config.json.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/work_pool.h"
#include "src/model/model.h"
#include "src/model/safetensors.h"
#include "tests/support/synthetic_checkpoint.h"
#include "tests/support/temp_dir.h"

namespace {

// Overwrites element `i` of tensor `name` in dir/model.safetensors with the bytes of `bits`.
void poke(const std::filesystem::path& dir, const std::string& name, size_t i, uint32_t bits,
          size_t elem) {
  size_t offset = 0;
  {
    const auto ck = ds::SafetensorsCheckpoint::open(dir);
    const ds::TensorInfo& t = ck.get(name);
    offset = static_cast<size_t>(t.data.data() - ck.mapping_of(t)->bytes().data()) + i * elem;
  }
  std::fstream f(dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(reinterpret_cast<const char*>(&bits), static_cast<std::streamsize>(elem));
}

std::string load_error(const std::filesystem::path& dir) {
  try {
    (void)ds::load_model(dir);
  } catch (const ds::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a NaN or infinite weight is refused at load, naming tensor and element",
          "[model][finite]") {
  ds::test::TempDir dir;
  ds::test::SyntheticSpec spec;
  spec.tied = false;
  struct Case {
    ds::test::StorageDtype dtype;
    size_t elem;
    uint32_t nan, inf;
  };
  for (const Case& c : {Case{ds::test::StorageDtype::F32, 4, 0x7fc00000u, 0xff800000u},
                        Case{ds::test::StorageDtype::BF16, 2, 0x7fc0u, 0xff80u},
                        Case{ds::test::StorageDtype::F16, 2, 0x7e00u, 0x7c00u}}) {
    spec.dtype = c.dtype;
    const auto d = dir.path() / ds::test::storage_dtype_name(c.dtype);
    ds::test::write_synthetic_checkpoint(d, spec);
    INFO(ds::test::storage_dtype_name(c.dtype));
    REQUIRE(load_error(d).empty());  // as written: finite
    poke(d, "model.layers.1.self_attn.q_proj.weight", 5, c.nan, c.elem);
    CHECK_THAT(load_error(d), Catch::Contains("weight tensor 'L1 wq'") &&
                                  Catch::Contains("holds NaN at element 5"));
    poke(d, "model.layers.1.self_attn.q_proj.weight", 5, 0, c.elem);
    poke(d, "lm_head.weight", 4100, c.inf, c.elem);  // past the first block of 4096
    CHECK_THAT(load_error(d), Catch::Contains("weight tensor 'lm_head'") &&
                                  Catch::Contains("holds an infinity at element 4100"));
  }
}

TEST_CASE("the weights are scanned in pieces on the pool's threads: the first bad one in order",
          "[model][finite]") {
  // an embedding of 66000 x 64 values spans two pieces of 2^22; the scan runs on three threads
  ds::WorkPool::instance().start(2);
  ds::test::TempDir dir;
  ds::test::SyntheticSpec spec;
  spec.tied = false;
  spec.vocab = 66000;
  spec.dtype = ds::test::StorageDtype::BF16;
  ds::test::write_synthetic_checkpoint(dir.path(), spec);
  REQUIRE(load_error(dir.path()).empty());
  poke(dir.path(), "lm_head.weight", 3, 0x7f80u, 2);                   // a later tensor
  poke(dir.path(), "model.embed_tokens.weight", 4200000, 0x7fc0u, 2);  // the second piece
  poke(dir.path(), "model.embed_tokens.weight", 4194303, 0x3f80u, 2);  // 1.0: still finite
  CHECK_THAT(load_error(dir.path()), Catch::Contains("weight tensor 'embed'") &&
                                         Catch::Contains("holds NaN at element 4200000"));
  poke(dir.path(), "model.embed_tokens.weight", 4200000, 0, 2);
  CHECK_THAT(load_error(dir.path()), Catch::Contains("weight tensor 'lm_head'") &&
                                         Catch::Contains("holds an infinity at element 3"));
}

TEST_CASE("a llama3 rope_scaling factor outside 1..1024 is refused", "[model][finite]") {
  ds::test::TempDir dir;
  ds::test::SyntheticSpec spec;
  spec.rope_scaling = ds::test::RefLlama3Scaling{};
  const auto d = dir.path() / "m";
  ds::test::write_synthetic_checkpoint(d, spec);
  REQUIRE(load_error(d).empty());
  for (double factor : {5e-324, 0.5, 1e6}) {
    auto j = nlohmann::json::parse(std::ifstream(d / "config.json"));
    j["rope_scaling"]["factor"] = factor;
    std::ofstream(d / "config.json") << j.dump();
    INFO(factor);
    CHECK_THAT(load_error(d), Catch::Contains("rope_scaling needs 1 <= factor <= 1024"));
  }
}
