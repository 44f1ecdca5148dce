// The identity of a run for its trace: model (architecture, files with sha256, tokenizer) and
// environment (host, compiler, devices, library versions).
#pragma once

#include <filesystem>
#include <string>

#include "src/model/model.h"
#include "src/tokenizer/tokenizer.h"

namespace ds {

// JSON object: architecture, format, path, config fields, weight dtype, files [{name, bytes,
// sha256}], tokenizer {path, sha256, kind, bos_id, eos_id} (tokenizer may be null).
std::string model_identity_json(const Model& model, const Tokenizer* tok,
                                const std::filesystem::path& tokenizer_path);

// JSON object: host, os, compiler, driftscope version, HDF5 version, for a run on `device`
// "cuda" the CUDA device summary (CPU runs never load the CUDA module: "not used"), and the
// working folder "cwd" (relative recorded paths resolve against it).
std::string environment_json(const std::string& device);

}  // namespace ds
