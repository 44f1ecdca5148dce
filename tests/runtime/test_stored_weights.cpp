// A bf16 or fp16 checkpoint computed from its 16-bit weights where they lie (mapped, widened as
// they are read) gives the bits of the same checkpoint converted to float32 safetensors, written
// by the test's own writer from the same values: every logit and every hidden site of prefill,
// chunk and decode passes, in fp32, bf16, fp16 and layercast, with split-K, tp (ring and tree),
// split-KV and fp16 accumulation, at 1, 2 and 3 threads; and whole traces (`driftscope run`:
// tokens, every site, top-K, lse, full logits) digest the same. GEMM matrices packed at set-up
// and read where they lie (DRIFTSCOPE_PACK) give the same bits too.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "kernels/cpu/cpu_exec.h"
#include "src/model/model.h"
#include "src/runtime/runtime.h"
#include "tests/support/pass_outputs.h"
#include "tests/support/run_cli.h"
#include "tests/support/synthetic_checkpoint.h"
#include "tests/support/temp_dir.h"
#include "tests/support/trace_digest.h"

namespace {

// An odd-sized qwen2 (biases, untied head; K = 76 leaves a remainder of 4 after nine blocks of 8)
// in `dtype`, at dir/<dtype>, and the same values as F32 at dir/f32-of-<dtype>.
ds::test::SyntheticSpec odd_qwen2(ds::test::StorageDtype dtype) {
  ds::test::SyntheticSpec spec;
  spec.architecture = "qwen2";
  spec.qkv_bias = true;
  spec.dim = 76;
  spec.hidden = 98;
  spec.heads = 2;
  spec.kv_heads = 2;
  spec.vocab = 101;
  spec.tied = false;
  spec.dtype = dtype;
  spec.seed = 5;
  return spec;
}

struct Pair {
  std::filesystem::path stored, f32;
};

Pair write_pair(const std::filesystem::path& dir, ds::test::StorageDtype dtype) {
  const auto spec = odd_qwen2(dtype);
  const std::string name = ds::test::storage_dtype_name(dtype);
  Pair p{dir / name, dir / ("f32-of-" + name)};
  const auto m = ds::test::write_synthetic_checkpoint(p.stored, spec);
  ds::test::write_hf_directory(p.f32, ds::test::hf_config_json(spec), ds::test::hf_tensors(m),
                               ds::test::StorageDtype::F32, 1);
  return p;
}

struct ExecGuard {
  ~ExecGuard() {
    ds::ops::set_cpu_kernels(ds::ops::CpuKernels::simd);
    ds::ops::set_cpu_threads(0);
  }
};

}  // namespace

TEST_CASE("16-bit weights as stored give the bits of their float32 conversion in every pass",
          "[runtime][stored]") {
  ExecGuard guard;
  ds::test::TempDir dir;
  for (auto dtype : {ds::test::StorageDtype::BF16, ds::test::StorageDtype::F16}) {
    const Pair p = write_pair(dir.path(), dtype);
    const ds::Model m16 = ds::load_model(p.stored), m32 = ds::load_model(p.f32);
    REQUIRE(m16.weights.layers[0].wq.format() != ds::Storage::native);
    REQUIRE(m16.weights.layers[0].wq.mapped());
    REQUIRE(m32.weights.layers[0].wq.format() == ds::Storage::native);
    for (ds::DType mode :
         {ds::DType::fp32, ds::DType::bf16, ds::DType::fp16, ds::DType::layercast}) {
      for (int knobs = 0; knobs < 3; ++knobs) {
        ds::Numerics nx;
        nx.dtype = mode;
        if (knobs > 0) {
          nx.split_k = knobs == 1 ? 3 : 2;
          nx.tp = 2;
          nx.attn_splits = knobs == 1 ? 3 : 2;
          nx.allreduce = knobs == 1 ? ds::ops::AllReduce::ring : ds::ops::AllReduce::tree;
          nx.accum_f16 = knobs == 2;
        }
        for (int threads : {1, 2, 3}) {
          ds::ops::set_cpu_threads(threads);
          INFO(ds::test::storage_dtype_name(dtype)
               << " checkpoint, " << ds::dtype_name(mode) << ", knob set " << knobs << ", "
               << threads << " threads");
          CHECK(ds::test::same_bits(ds::test::run_passes(m16, nx), ds::test::run_passes(m32, nx)));
        }
      }
    }
  }
}

TEST_CASE("traces of a 16-bit checkpoint and of its float32 conversion digest the same",
          "[runtime][stored][cli]") {
  ds::test::TempDir dir;
  const char* kModes[] = {
      "--dtype fp32",
      "--dtype bf16 --split-k 3 --tp 2 --attn-splits 3",
      "--dtype fp16 --tp 2 --allreduce tree --attn-splits 2",
      "--dtype layercast --split-k 2 --batch 2",
  };
  const auto prompts = dir.path() / "prompts.jsonl";
  std::ofstream(prompts) << "{\"ids\": [1, 7, 30]}\n{\"ids\": [4, 2]}\n";
  int i = 0;
  for (auto dtype : {ds::test::StorageDtype::BF16, ds::test::StorageDtype::F16}) {
    const Pair p = write_pair(dir.path(), dtype);
    for (const char* mode : kModes) {
      for (int threads : {1, 2, 3}) {
        std::string digest[2];
        for (int side = 0; side < 2; ++side) {
          const auto out = dir.path() / ("t" + std::to_string(i++) + ".h5");
          const auto r = ds::test::run_cli(
              fmt::format("run -m {} --prompts {} -n 6 --probes all --full-logits {} --threads {} "
                          "-q -o {}",
                          (side == 0 ? p.stored : p.f32).string(), prompts.string(), mode, threads,
                          out.string()));
          REQUIRE(r.exit_code == 0);
          digest[side] = ds::test::trace_digest(out);
        }
        INFO(ds::test::storage_dtype_name(dtype)
             << " checkpoint, " << mode << ", " << threads << " threads");
        CHECK(digest[0] == digest[1]);
      }
    }
  }
}
