// The run configuration: every knob that can make two runs of the same model differ
// (docs/configurations.md), typed, and its one field table: each field's name, member, type,
// values and help, which registers the CLI flags (the field names with dashes), reads and writes
// config files (TOML), sweep grids and recorded configurations (JSON), and validates. Recorded in
// full in each trace's /meta config_json.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/experiment/prompts.h"
#include "src/experiment/sampler.h"
#include "src/runtime/runtime.h"

namespace ds {

enum class Accum { fp32, fp16 };                // GEMM / attention accumulation
enum class TieBreak { lowest_id, highest_id };  // greedy argmax ties

// The token that ends a sequence: the model format's convention ("auto"), none, or a token id.
struct StopToken {
  enum class Rule { automatic, none, id };
  Rule rule = Rule::automatic;
  int32_t id = 0;  // with Rule::id
  bool operator==(const StopToken&) const = default;
};

// The op implementations (`kernel`): "gemm=cublas|tiled" (GPU only), "attention=rowwise|tiled"
// (both backends).
struct KernelChoice {
  GemmKernel gemm = GemmKernel::cublas;
  AttnKernel attention = AttnKernel::rowwise;
  bool operator==(const KernelChoice&) const = default;
};

struct RunConfig {
  Device device = Device::cpu;
  DType dtype = DType::fp32;
  Accum accum = Accum::fp32;
  int batch = 1;  // prompts co-batched per forward pass
  GemmPolicy gemm_policy = GemmPolicy::invariant;
  int split_k = 0;  // 0 = auto
  int tp = 1;       // tensor-parallel degree (row-parallel reductions)
  ops::AllReduce allreduce = ops::AllReduce::ring;
  int attn_splits = 0;        // 0 = auto (split-KV partial softmax merge)
  int prefill_chunk = 0;      // 0 = whole prompt in one pass, N = chunks of N tokens
  bool prefix_cache = false;  // on: prompt prefix KV from an earlier pass
  TieBreak tie_break = TieBreak::lowest_id;
  AddBos add_bos = AddBos::automatic;
  double repetition_penalty = 1.0;  // 1 = off; HF rule: logit/p if > 0 else logit*p
  int max_new = 256;
  StopToken stop_token;
  double temperature = 0.0;
  double top_p = 1.0;
  int top_k = 0;
  uint64_t seed = 0;
  KernelChoice kernel;
  bool tf32 = false;  // GPU only
  // test-only: one op's output perturbed, "<op>:<how>" (perturb.h); empty: none. Recorded (and
  // written by to_json, to_toml) only when set.
  std::string test_perturb;

  SamplingParams sampling() const;
  bool operator==(const RunConfig&) const = default;
};

// A field's value as given: a word of the command line or of a --grid (parsed by the field's
// type), or a value of a config file (TOML) or of a recorded configuration (JSON), typed as the
// file wrote it. A field takes only the kinds of its type: batch takes 8, not "8".
struct FieldValue {
  enum class Kind { word, string, integer, real, boolean };
  Kind kind = Kind::word;
  std::string text;  // the word or string; an integer or real as written, '_' and '+' dropped
};

// One field of the run configuration, a row of the field table.
struct RunConfigField {
  const char* name;       // the TOML / JSON key; the flag is --name with '_' as '-'
  const char* flag;       // CLI11's option name: "--max-new", "-n,--max-new"
  const char* type_name;  // what --help shows: TEXT, INT, FLOAT, UINT
  const char* allowed;    // the values, for messages: "auto or a whole number >= 1"
  const char* help;       // the flag's help
  // Test-only: no --help line, and written (TOML, JSON) only when set, so that every other
  // configuration reads as it did before the field existed.
  bool test_only;
  // The field of `c`, canonical (two configurations are equal when their values are), as TOML
  // and JSON write it: a string, an integer or a real.
  FieldValue (*get)(const RunConfig& c);
  // Parses `v` into the field of `c` (a value of the wrong kind or that does not parse is
  // refused with a ds::Error naming the field and its values; ranges are validate()'s).
  void (*set)(RunConfig& c, const RunConfigField& f, const FieldValue& v);
};

// Every field, in the order of --help, config files and config_json.
std::span<const RunConfigField> run_config_fields();
// The field named `name` ('-' read as '_'), or null.
const RunConfigField* find_run_config_field(std::string_view name);

// The canonical text of the field `name` of `c` ("cuda", "8", "gemm=cublas").
std::string field_text(const RunConfig& c, std::string_view name);

// Sets one field by its name (as in to_json) from a word ("bf16", "8", "0.7"), as the command
// line and --grid give it. Throws ds::Error for an unknown field or a value it does not take;
// call validate() afterwards.
void set_field(RunConfig& c, const std::string& field, const std::string& value);

// The token that ends a sequence under `stop_token`: "auto" gives `format_default` (the model
// format's convention, resolved by the caller), "none" gives none, "N" gives N.
std::optional<int32_t> stop_token_id(const RunConfig& c, std::optional<int32_t> format_default);

// The seed written as `text`, all digits: throws ds::Error for a negative number or one beyond
// 2^64 - 1 (never wrapped or clamped to 2^64 - 1, as strtoull would) and for anything else.
uint64_t parse_seed(const std::string& text);

// Checks every field up front; throws ds::Error naming the field and the allowed values.
void validate(const RunConfig& c);
// Checks the fields that depend on the model (tp must divide heads, kv heads and MLP width).
void validate_for_model(const RunConfig& c, const ModelConfig& m);

// The runtime numerics the config selects.
Numerics numerics(const RunConfig& c);
// The runtime the config selects (device, numerics), with `slots` KV caches of `capacity`
// positions, and the test perturbation planted when test_perturb asks (perturb.h).
std::unique_ptr<Runtime> make_configured_runtime(const Model& model, const RunConfig& c,
                                                 int capacity, int slots = 1);

// {"device": "cpu", "dtype": "fp32", ...}: every field, in declaration order.
std::string to_json(const RunConfig& c);
// The config as a TOML file, one `field=value` a line (what `--dry-run` prints; `--config`
// reads it back to the same configuration).
std::string to_toml(const RunConfig& c);

// `base` with the fields of a JSON object (sweep.json's base, a trace's config_json) set, keys
// in `skip` left out. Throws ds::Error for JSON that is no object, an unknown key, or a value
// its field does not take.
RunConfig config_from_json(const std::string& json, RunConfig base = {},
                           std::initializer_list<std::string_view> skip = {});

}  // namespace ds
