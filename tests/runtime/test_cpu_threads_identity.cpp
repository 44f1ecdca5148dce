// The vectorised, threaded CPU backend gives the bits of the scalar one-thread loops:
// logits and every hidden site of a prefill of 13 rows (the GEMM's packed path: 4-row tiles and a
// remainder), a chunk of 5 rows (the in-register transposed path with a 4-row tile) and three
// decode steps (one row), on the bundled llama2.c model, a `synth` Hugging Face
// checkpoint and a qwen2 checkpoint with biases whose sizes are not multiples of 8, in every
// precision, with split-K, tp (ring and tree) and split-KV set, and with fp16 accumulation. The
// reference is CpuKernels::reference: the loops of ops_cpu.cpp as written, on one thread (whose
// own bits tests/runtime/test_refactor_hashes.cpp pins to digests recorded before this work).
#include <catch2/catch.hpp>
#include <cstdlib>

#include "kernels/cpu/cpu_exec.h"
#include "src/model/model.h"
#include "src/model/synth.h"
#include "src/runtime/runtime.h"
#include "tests/support/pass_outputs.h"
#include "tests/support/paths.h"
#include "tests/support/synthetic_checkpoint.h"
#include "tests/support/temp_dir.h"

namespace {

struct Knobs {
  const char* name;
  int split_k, tp, attn_splits;
  ds::ops::AllReduce order;
  bool accum_f16;
};

constexpr Knobs kKnobs[] = {
    {"defaults", 0, 1, 0, ds::ops::AllReduce::ring, false},
    {"split-k 3, tp 2 ring, split-kv 3", 3, 2, 3, ds::ops::AllReduce::ring, false},
    {"split-k 2, tp 2 tree, split-kv 2, fp16 accumulation", 2, 2, 2, ds::ops::AllReduce::tree,
     true},
};

struct Execution {
  ds::ops::CpuKernels kernels;
  int threads;
};
constexpr Execution kFast[] = {
    {ds::ops::CpuKernels::scalar, 2}, {ds::ops::CpuKernels::scalar, 3},
    {ds::ops::CpuKernels::simd, 1},   {ds::ops::CpuKernels::simd, 2},
    {ds::ops::CpuKernels::simd, 3},
};

// Restores the process-wide execution settings after a test.
struct ExecGuard {
  ~ExecGuard() {
    ds::ops::set_cpu_kernels(ds::ops::CpuKernels::simd);
    ds::ops::set_cpu_threads(0);
  }
};

void check_all_executions(const ds::Model& m) {
  ExecGuard guard;
  for (ds::DType dtype :
       {ds::DType::fp32, ds::DType::bf16, ds::DType::fp16, ds::DType::layercast, ds::DType::fp64}) {
    for (const Knobs& k : kKnobs) {
      ds::Numerics nx;
      nx.dtype = dtype;
      nx.split_k = k.split_k;
      nx.tp = k.tp;
      nx.attn_splits = k.attn_splits;
      nx.allreduce = k.order;
      nx.accum_f16 = k.accum_f16;
      ds::ops::set_cpu_kernels(ds::ops::CpuKernels::reference);
      ds::ops::set_cpu_threads(1);
      setenv("DRIFTSCOPE_PACK", "never", 1);  // the reference reads the weights where they lie
      const ds::test::PassOutputs ref = ds::test::run_passes(m, nx);
      unsetenv("DRIFTSCOPE_PACK");  // the fast kernels on packed matrices (small models: auto)
      // six sites per layer, embed, final_norm and logits
      REQUIRE(ref.hidden.size() == static_cast<size_t>(6 * m.config.n_layers + 3));
      for (const Execution& e : kFast) {
        ds::ops::set_cpu_kernels(e.kernels);
        ds::ops::set_cpu_threads(e.threads);
        INFO(ds::dtype_name(dtype) << ", " << k.name << ", "
                                   << (e.kernels == ds::ops::CpuKernels::simd ? "simd" : "scalar")
                                   << " kernels on " << e.threads << " threads");
        CHECK(ds::test::same_bits(ds::test::run_passes(m, nx), ref));
      }
    }
  }
}

}  // namespace

TEST_CASE("threaded and vectorised CPU kernels match the scalar loops bit for bit: kjv-llama",
          "[runtime][threads]") {
  check_all_executions(ds::load_model(ds::test::model_bin()));
}

TEST_CASE("threaded and vectorised CPU kernels match the scalar loops bit for bit: synth tiny",
          "[runtime][threads]") {
  ds::test::TempDir dir;
  ds::SynthOptions opt;
  opt.dtype = ds::NumberFormat::f32;
  opt.seed = 7;
  ds::write_synthetic_checkpoint(ds::synth_shape("tiny"), opt, dir.path() / "tiny");
  check_all_executions(ds::load_model(dir.path() / "tiny"));
}

TEST_CASE("threaded and vectorised CPU kernels match the scalar loops bit for bit: odd-sized qwen2",
          "[runtime][threads]") {
  ds::test::TempDir dir;
  ds::test::SyntheticSpec spec;
  spec.architecture = "qwen2";
  spec.qkv_bias = true;
  spec.dim = 76;  // K = 76: nine blocks of 8 and a remainder of 4; tp 2 gives K = 38 and 49
  spec.hidden = 98;
  spec.heads = 2;
  spec.kv_heads = 2;
  spec.vocab = 101;
  spec.tied = false;
  ds::test::write_synthetic_checkpoint(dir.path() / "qwen", spec);
  check_all_executions(ds::load_model(dir.path() / "qwen"));
}

TEST_CASE("threaded and vectorised CPU kernels match the scalar loops bit for bit: wide heads",
          "[runtime][threads]") {
  // head_dim 76: attention's P.V in lanes takes 64 d at once, then 8, then 4 one at a time
  ds::test::TempDir dir;
  ds::test::SyntheticSpec spec;
  spec.dim = 152;
  spec.hidden = 98;
  spec.heads = 2;
  spec.kv_heads = 2;
  spec.vocab = 101;
  ds::test::write_synthetic_checkpoint(dir.path() / "wide", spec);
  check_all_executions(ds::load_model(dir.path() / "wide"));
}
