// The CUPTI-free part of the kernel recorder: kernel records joined to the op labels of their
// launches, in launch order, and kernel names demangled.
#include <catch2/catch.hpp>

#include "trace/kernel_join.h"

using ds::trace::OpLabel;
using ds::trace::RawKernel;

TEST_CASE("kernel records take the label of their launch, in launch order",
          "[trace][kernel_join]") {
  const std::vector<OpLabel> labels = {
      {0, "L0/attn_out", "q_proj"}, {0, "L0/attn_out", "attention"}, {1, "logits", "lm_head"}};
  // CUPTI hands kernels over as they complete, not as they were launched.
  std::vector<RawKernel> kernels = {{40, "lm_head_gemm", {2, 1, 1}, {128, 1, 1}, 900},
                                    {11, "gemm_a", {4, 1, 3}, {256, 1, 1}, 100},
                                    {12, "splitk_reduce", {8, 1, 1}, {256, 1, 1}, 20},
                                    {25, "attention_chunk", {1, 4, 2}, {128, 1, 1}, 300},
                                    {30, "stray_memset_kernel", {1, 1, 1}, {32, 1, 1}, 5}};
  // launches 11 and 12 were inside op 1, 25 inside op 2, 40 inside op 3; 30 outside any op
  const std::unordered_map<uint32_t, uint64_t> external_of = {{11, 1}, {12, 1}, {25, 2}, {40, 3}};
  const auto r = ds::trace::join_kernel_records(kernels, external_of, labels);
  REQUIRE(r.size() == 5);
  CHECK(r[0].name == "gemm_a");
  CHECK(r[0].site == "L0/attn_out");
  CHECK(r[0].op == "q_proj");
  CHECK(r[0].grid == std::array<int32_t, 3>{4, 1, 3});
  CHECK(r[0].duration_ns == 100);
  CHECK(r[1].name == "splitk_reduce");
  CHECK(r[1].op == "q_proj");
  CHECK(r[2].op == "attention");
  CHECK(r[2].block == std::array<int32_t, 3>{128, 1, 1});
  CHECK(r[3].name == "stray_memset_kernel");
  CHECK(r[3].site.empty());
  CHECK(r[3].op.empty());
  CHECK(r[4].pass == 1);
  CHECK(r[4].site == "logits");
  CHECK(r[4].op == "lm_head");
}

TEST_CASE("an external id without a label leaves the kernel unlabelled", "[trace][kernel_join]") {
  const auto r = ds::trace::join_kernel_records({{7, "k", {}, {}, 1}, {8, "k2", {}, {}, 1}},
                                                {{7, 0}, {8, 5}}, {{0, "embed", "embedding"}});
  REQUIRE(r.size() == 2);
  CHECK(r[0].site.empty());
  CHECK(r[1].site.empty());
}

TEST_CASE("kernel names are demangled", "[trace][kernel_join]") {
  CHECK(ds::trace::demangle_kernel_name("_Z3addPfi") == "add(float*, int)");
  CHECK(ds::trace::demangle_kernel_name("_ZN2ds4cuda11rope_kernelIfEEvPT_iiiPKiPKfS7_") ==
        "void ds::cuda::rope_kernel<float>(float*, int, int, int, int const*, float const*, "
        "float const*)");
  CHECK(ds::trace::demangle_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32") ==
        "sm90_xmma_gemm_bf16bf16_bf16f32");  // cuBLAS names are not mangled
  CHECK(ds::trace::demangle_kernel_name(nullptr) == "?");
}
