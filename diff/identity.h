// When two traces are comparable, one rule for diff and stats: the same model is the same set of
// model-file sha256 digests (in any order); runs differ by the flattened fields of their run
// configurations and of their tokenizers' recorded identities.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "diff/report.h"

namespace ds::diff {

// What a trace's model_json says about its model.
struct ModelIdentity {
  std::vector<std::string> files;   // "name sha256", in recorded order
  std::vector<std::string> hashes;  // sorted sha256 values
  nlohmann::json tokenizer;  // the recorded tokenizer identity (sha256, kind, BOS/EOS), no path
  int n_layers = -1;
  bool known = false;  // the trace records at least one file digest
};
ModelIdentity model_identity(const std::string& model_json);

// The key that traces of the same model share: their sorted digests ("" when none are recorded).
std::string model_key(const ModelIdentity& m);

// Both record digests, and the same ones.
bool same_model(const ModelIdentity& a, const ModelIdentity& b);

// The differing fields of two run-config JSON objects, flattened to dotted paths, sorted.
std::vector<ConfigDifference> config_differences(const std::string& config_a,
                                                 const std::string& config_b);

// The differing fields of two recorded tokenizer identities, as "model.tokenizer.<field>".
std::vector<ConfigDifference> tokenizer_differences(const ModelIdentity& a, const ModelIdentity& b);

}  // namespace ds::diff
