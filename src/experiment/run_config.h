// The run configuration: every knob that can make two runs of the same model differ
// (docs/configurations.md). Settable by CLI flags (the field
// names with dashes) and config files; recorded in full in each trace's /meta config_json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "src/experiment/sampler.h"
#include "src/runtime/runtime.h"

namespace ds {

struct RunConfig {
  std::string device = "cpu";             // cpu | cuda
  std::string dtype = "fp32";             // fp64 | fp32 | fp16 | bf16 | layercast
  std::string accum = "fp32";             // fp32 | fp16 (GEMM / attention accumulation)
  int batch = 1;                          // prompts co-batched per forward pass
  std::string gemm_policy = "invariant";  // invariant | heuristic
  std::string split_k = "auto";           // auto | 1..N
  int tp = 1;                             // tensor-parallel degree (row-parallel reductions)
  std::string allreduce = "ring";         // ring | tree
  std::string attn_splits = "auto";       // auto | 1..N (split-KV partial softmax merge)
  int prefill_chunk = 0;                  // 0 = whole prompt in one pass, N = chunks of N tokens
  std::string prefix_cache = "off";       // off | on: prompt prefix KV from an earlier pass
  std::string tie_break = "lowest_id";    // lowest_id | highest_id (greedy argmax ties)
  std::string add_bos = "auto";           // auto (tokenizer config) | on | off
  double repetition_penalty = 1.0;        // 1 = off; HF rule: logit/p if > 0 else logit*p
  int max_new = 256;
  std::string stop_token = "auto";  // auto (the model format's rule) | none | a token id
  double temperature = 0.0;
  double top_p = 1.0;
  int top_k = 0;
  uint64_t seed = 0;
  // op implementations: "gemm=cublas|tiled" (GPU only), "attention=rowwise|tiled" (both),
  // comma-separated
  std::string kernel = "gemm=cublas";
  std::string tf32 = "off";  // GPU only
  // test-only: one op's output perturbed, "<op>:<how>" (perturb.h); empty: none. Recorded (and
  // written by to_json, to_toml) only when set.
  std::string test_perturb;

  SamplingParams sampling() const;
};

// The token that ends a sequence under `stop_token`: "auto" gives `format_default` (the model
// format's convention, resolved by the caller), "none" gives none, "N" gives N.
std::optional<int32_t> stop_token_id(const RunConfig& c, std::optional<int32_t> format_default);

// The seed written as `text`, all digits: throws ds::Error for a negative number or one beyond
// 2^64 - 1 (never wrapped or clamped to 2^64 - 1, as strtoull would) and for anything else.
uint64_t parse_seed(const std::string& text);

// Checks every field up front; throws ds::Error naming the field and the allowed values.
void validate(const RunConfig& c);
// Checks the fields that depend on the model (tp must divide heads, kv heads and MLP width; a
// test perturbation's layer).
void validate_for_model(const RunConfig& c, const ModelConfig& m);

// The runtime numerics the config selects.
Numerics numerics(const RunConfig& c);
// The runtime the config selects (device, numerics), with `slots` KV caches of `capacity`
// positions, and the test perturbation planted when test_perturb asks (perturb.h).
std::unique_ptr<Runtime> make_configured_runtime(const Model& model, const RunConfig& c,
                                                 int capacity, int slots = 1);

// Sets one field by its name (as in to_json) from text ("bf16", "8", "0.7"). Throws ds::Error
// for an unknown field or a number that does not parse; call validate() afterwards.
void set_field(RunConfig& c, const std::string& field, const std::string& value);

// {"device": "cpu", "dtype": "fp32", ...}: every field, in declaration order.
std::string to_json(const RunConfig& c);
// The config as a CLI11 TOML config file (what `--dry-run` prints; `--config` reads it back).
std::string to_toml(const RunConfig& c);

}  // namespace ds
