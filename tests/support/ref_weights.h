// Test-side reading of a float32 Hugging Face directory into the fp64 oracle's weights, with its
// own minimal safetensors parser (independent of src/model/safetensors.cpp and
// src/model/loader_hf.cpp).
#pragma once

#include <filesystem>

#include "tests/support/ref_forward.h"

namespace ds::test {

struct RefModel {
  RefConfig config;
  RefWeights weights;
};

// Only what kjv-llama needs: Llama, F32 tensors, one model.safetensors.
RefModel read_ref_model(const std::filesystem::path& hf_dir);

}  // namespace ds::test
