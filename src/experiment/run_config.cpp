// The run configuration's field table, its validation, runtime numerics and serialisations.
#include "src/experiment/run_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/error.h"
#include "src/experiment/perturb.h"
#include "src/runtime/cuda_loader.h"

namespace ds {
namespace {

using Kind = FieldValue::Kind;

std::string flag_name(std::string field) {
  for (char& ch : field) ch = ch == '_' ? '-' : ch;
  return field;
}

[[noreturn]] void bad(const std::string& field, const std::string& value,
                      const std::string& allowed) {
  throw Error(fmt::format("invalid {} '{}'", field, value),
              fmt::format("--{} takes {}", flag_name(field), allowed));
}

// A value a whole-number field cannot take: one with no digit at all ("ten") is said to be no
// number, as a command option's is (issue 45, cause 18); any other is out of what it takes.
[[noreturn]] void bad_whole(const RunConfigField& f, const std::string& value) {
  if (value.find_first_of("0123456789") != std::string::npos) bad(f.name, value, f.allowed);
  throw Error(fmt::format("invalid {} '{}': not a number", f.name, value),
              fmt::format("--{} takes {}", flag_name(f.name), f.allowed));
}

// A value of a kind the field's type does not take: a string for a number, or the reverse.
[[noreturn]] void wrong_kind(const RunConfigField& f, const FieldValue& v) {
  const bool number = v.kind == Kind::integer || v.kind == Kind::real;
  throw Error(fmt::format("invalid {} {}: {}", f.name,
                          v.kind == Kind::string ? "\"" + v.text + "\"" : v.text,
                          v.kind == Kind::boolean ? "a boolean"
                          : number                ? "a number, where the field takes text"
                                                  : "a string, where the field takes a number"),
              fmt::format("{} takes {}{}", f.name, f.allowed,
                          number                   ? ", quoted"
                          : v.kind == Kind::string ? ", unquoted"
                                                   : ""));
}

// A whole number written in decimal: an optional sign, then digits (leading zeros read as
// decimal: 010 is ten); nothing else, no space.
std::optional<long long> whole_number(std::string_view t) {
  if (t.starts_with('+')) t.remove_prefix(1);
  long long v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || t[0] == '+' || ec != std::errc() || end != t.data() + t.size()) {
    return std::nullopt;
  }
  return v;
}

// The names of an enumeration's values, as fields and messages spell them.
template <typename E>
struct Named {
  const char* name;
  E value;
};

// ---- the codecs: one per type of field, each reading a FieldValue into its member and writing
// it back canonical

// An enumeration (or bool) spelled by name; takes a word or a string.
template <auto Member, const auto& Names>
struct Choice {
  static FieldValue get(const RunConfig& c) {
    for (const auto& n : Names) {
      if (n.value == c.*Member) return {Kind::string, n.name};
    }
    return {Kind::string, "?"};
  }
  static void set(RunConfig& c, const RunConfigField& f, const FieldValue& v) {
    if (v.kind != Kind::word && v.kind != Kind::string) wrong_kind(f, v);
    for (const auto& n : Names) {
      if (v.text == n.name) {
        c.*Member = n.value;
        return;
      }
    }
    bad(f.name, v.text, f.allowed);
  }
};

// A whole number; takes a word or an integer (ranges are validate()'s).
template <auto Member>
struct Int {
  static FieldValue get(const RunConfig& c) { return {Kind::integer, std::to_string(c.*Member)}; }
  static void set(RunConfig& c, const RunConfigField& f, const FieldValue& v) {
    if (v.kind != Kind::word && v.kind != Kind::integer) wrong_kind(f, v);
    const auto n = whole_number(v.text);
    if (!n || *n < INT_MIN || *n > INT_MAX) bad_whole(f, v.text);
    c.*Member = static_cast<int>(*n);
  }
};

// "auto" (0) or a count N >= 1, written as text; takes a word, a string or an integer.
template <auto Member>
struct AutoOrCount {
  static FieldValue get(const RunConfig& c) {
    return {Kind::string, c.*Member == 0 ? "auto" : std::to_string(c.*Member)};
  }
  static void set(RunConfig& c, const RunConfigField& f, const FieldValue& v) {
    if (v.kind != Kind::word && v.kind != Kind::string && v.kind != Kind::integer) {
      wrong_kind(f, v);
    }
    if (v.kind != Kind::integer && v.text == "auto") {
      c.*Member = 0;
      return;
    }
    const auto n = whole_number(v.text);
    if (!n || *n < 1 || *n > INT_MAX) bad_whole(f, v.text);
    c.*Member = static_cast<int>(*n);
  }
};

// A real number; takes a word, an integer or a real (NaN and Inf parse; validate() refuses them).
template <auto Member>
struct Real {
  static FieldValue get(const RunConfig& c) { return {Kind::real, fmt::format("{}", c.*Member)}; }
  static void set(RunConfig& c, const RunConfigField& f, const FieldValue& v) {
    if (v.kind != Kind::word && v.kind != Kind::integer && v.kind != Kind::real) wrong_kind(f, v);
    std::string_view t = v.text;
    if (t.starts_with('+')) t.remove_prefix(1);
    double d = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
    if (t.empty() || t[0] == '+' || ec != std::errc() || end != t.data() + t.size()) {
      throw Error(fmt::format("invalid {} '{}': not a number", f.name, v.text),
                  fmt::format("--{} takes {}", flag_name(f.name), f.allowed));
    }
    c.*Member = d;
  }
};

// The seed: 0 .. 2^64-1 (parse_seed); takes a word or an integer.
struct Seed {
  static FieldValue get(const RunConfig& c) { return {Kind::integer, std::to_string(c.seed)}; }
  static void set(RunConfig& c, const RunConfigField& f, const FieldValue& v) {
    if (v.kind != Kind::word && v.kind != Kind::integer) wrong_kind(f, v);
    c.seed = parse_seed(v.text);
  }
};

// stop_token: "auto", "none" or a token id, written as text; takes a word, a string or an
// integer.
struct Stop {
  static FieldValue get(const RunConfig& c) {
    switch (c.stop_token.rule) {
      case StopToken::Rule::automatic:
        return {Kind::string, "auto"};
      case StopToken::Rule::none:
        return {Kind::string, "none"};
      case StopToken::Rule::id:
        break;
    }
    return {Kind::string, std::to_string(c.stop_token.id)};
  }
  static void set(RunConfig& c, const RunConfigField& f, const FieldValue& v) {
    if (v.kind != Kind::word && v.kind != Kind::string && v.kind != Kind::integer) {
      wrong_kind(f, v);
    }
    if (v.kind != Kind::integer && (v.text == "auto" || v.text == "none")) {
      c.stop_token = {v.text == "auto" ? StopToken::Rule::automatic : StopToken::Rule::none, 0};
      return;
    }
    const auto id = whole_number(v.text);
    if (!id || *id < 0 || *id > INT32_MAX) bad_whole(f, v.text);
    c.stop_token = {StopToken::Rule::id, static_cast<int32_t>(*id)};
  }
};

// kernel: comma-separated op=choice entries, each op at most once, "gemm=cublas|tiled" (GPU
// only; the CPU reference has one GEMM) and "attention=rowwise|tiled" (both backends); an op
// not named keeps its default. Written canonical: gemm first, attention only when not the
// default ("attention=tiled" and "gemm=cublas,attention=tiled" are one configuration).
struct Kernel {
  static FieldValue get(const RunConfig& c) {
    std::string t = c.kernel.gemm == GemmKernel::tiled ? "gemm=tiled" : "gemm=cublas";
    if (c.kernel.attention == AttnKernel::tiled) t += ",attention=tiled";
    return {Kind::string, t};
  }
  static void set(RunConfig& c, const RunConfigField& f, const FieldValue& v) {
    if (v.kind != Kind::word && v.kind != Kind::string) wrong_kind(f, v);
    KernelChoice k;
    bool gemm = false, attention = false;
    size_t at = 0;
    do {
      const size_t comma = v.text.find(',', at);
      const std::string item = v.text.substr(at, comma == std::string::npos ? comma : comma - at);
      at = comma == std::string::npos ? comma : comma + 1;
      if ((item == "gemm=cublas" || item == "gemm=tiled") && !gemm) {
        k.gemm = item == "gemm=tiled" ? GemmKernel::tiled : GemmKernel::cublas;
        gemm = true;
      } else if ((item == "attention=rowwise" || item == "attention=tiled") && !attention) {
        k.attention = item == "attention=tiled" ? AttnKernel::tiled : AttnKernel::rowwise;
        attention = true;
      } else {
        bad(f.name, v.text, f.allowed);
      }
    } while (at != std::string::npos);
    c.kernel = k;
  }
};

constexpr Named<Device> kDevices[] = {{"cpu", Device::cpu}, {"cuda", Device::cuda}};
const Named<DType> kDTypes[] = {
    {dtype_name(DType::fp64), DType::fp64},           {dtype_name(DType::fp32), DType::fp32},
    {dtype_name(DType::fp16), DType::fp16},           {dtype_name(DType::bf16), DType::bf16},
    {dtype_name(DType::layercast), DType::layercast},
};
constexpr Named<Accum> kAccums[] = {{"fp32", Accum::fp32}, {"fp16", Accum::fp16}};
constexpr Named<GemmPolicy> kGemmPolicies[] = {{"invariant", GemmPolicy::invariant},
                                               {"heuristic", GemmPolicy::heuristic}};
constexpr Named<ops::AllReduce> kAllReduces[] = {{"ring", ops::AllReduce::ring},
                                                 {"tree", ops::AllReduce::tree}};
constexpr Named<bool> kOffOn[] = {{"off", false}, {"on", true}};
constexpr Named<TieBreak> kTieBreaks[] = {{"lowest_id", TieBreak::lowest_id},
                                          {"highest_id", TieBreak::highest_id}};
constexpr Named<AddBos> kAddBos[] = {
    {"auto", AddBos::automatic}, {"on", AddBos::on}, {"off", AddBos::off}};

// Text checked by validate() (the test perturbation, whose op names depend on the model).
template <auto Member>
struct Text {
  static FieldValue get(const RunConfig& c) { return {Kind::string, c.*Member}; }
  static void set(RunConfig& c, const RunConfigField& f, const FieldValue& v) {
    if (v.kind != Kind::word && v.kind != Kind::string) wrong_kind(f, v);
    c.*Member = v.text;
  }
};

template <typename Codec>
constexpr RunConfigField field(const char* name, const char* flag, const char* type_name,
                               const char* allowed, const char* help, bool test_only = false) {
  return {name, flag, type_name, allowed, help, test_only, &Codec::get, &Codec::set};
}

// The field table: every knob once, in the order of --help, config files and config_json.
// Adding a knob: a member of RunConfig, a row here (its codec says how it is read and written),
// and its effect (numerics(), or where it is used) with a check in validate() if it has a range.
const RunConfigField kFields[] = {
    field<Choice<&RunConfig::device, kDevices>>(
        "device", "--device", "TEXT", "cpu, cuda",
        "backend: cpu (reference; emulates GPU numerics) or cuda"),
    field<Choice<&RunConfig::dtype, kDTypes>>(
        "dtype", "--dtype", "TEXT", "fp64, fp32, fp16, bf16, layercast",
        "precision: fp64 (oracle), fp32, fp16, bf16, layercast"),
    field<Choice<&RunConfig::accum, kAccums>>("accum", "--accum", "TEXT", "fp32, fp16",
                                              "GEMM/attention accumulation: fp32, fp16"),
    field<Int<&RunConfig::batch>>("batch", "--batch", "INT", "a whole number >= 1",
                                  "prompts co-batched in each forward pass"),
    field<Choice<&RunConfig::gemm_policy, kGemmPolicies>>(
        "gemm_policy", "--gemm-policy", "TEXT", "invariant, heuristic",
        "invariant (same reduction order for any batch) or heuristic (split-K from the GEMM "
        "shape, like BLAS libraries)"),
    field<AutoOrCount<&RunConfig::split_k>>("split_k", "--split-k", "TEXT",
                                            "auto or a whole number >= 1",
                                            "K-split of every GEMM: auto or N"),
    field<Int<&RunConfig::tp>>("tp", "--tp", "INT", "1..8",
                               "tensor-parallel degree (row-parallel layers reduce in tp shards)"),
    field<Choice<&RunConfig::allreduce, kAllReduces>>(
        "allreduce", "--allreduce", "TEXT", "ring, tree", "order of the tp all-reduce: ring, tree"),
    field<AutoOrCount<&RunConfig::attn_splits>>("attn_splits", "--attn-splits", "TEXT",
                                                "auto or a whole number >= 1",
                                                "split-KV attention chunks: auto or N"),
    field<Int<&RunConfig::prefill_chunk>>("prefill_chunk", "--prefill-chunk", "INT",
                                          "0 (whole prompt) or N >= 1",
                                          "prompt tokens per prefill pass; 0 = all"),
    field<Choice<&RunConfig::prefix_cache, kOffOn>>(
        "prefix_cache", "--prefix-cache", "TEXT", "off, on",
        "on: the prompt prefix's KV comes from an earlier pass of its own"),
    field<Choice<&RunConfig::tie_break, kTieBreaks>>("tie_break", "--tie-break", "TEXT",
                                                     "lowest_id, highest_id",
                                                     "greedy ties: lowest_id, highest_id"),
    field<Choice<&RunConfig::add_bos, kAddBos>>("add_bos", "--add-bos", "TEXT", "auto, on, off",
                                                "auto (tokenizer config), on, off"),
    field<Real<&RunConfig::repetition_penalty>>("repetition_penalty", "--repetition-penalty",
                                                "FLOAT", "a finite value > 0 (1 = off)", "1 = off"),
    field<Int<&RunConfig::max_new>>("max_new", "-n,--max-new", "INT", "N >= 0",
                                    "maximum number of new tokens per prompt"),
    field<Stop>("stop_token", "--stop-token", "TEXT",
                "auto (the model format's rule), none, or a token id",
                "token that ends a sequence: auto (llama2.c .bin: BOS, id 1, as llama2.c's run.c; "
                "Hugging Face: the EOS of tokenizer.json or config.json), none, or a token id"),
    field<Real<&RunConfig::temperature>>("temperature", "--temperature", "FLOAT",
                                         "a finite value >= 0 (0 = greedy)", "0 = greedy"),
    field<Real<&RunConfig::top_p>>("top_p", "--top-p", "FLOAT", "0 < p <= 1",
                                   "nucleus sampling mass, 0 < p <= 1"),
    field<Int<&RunConfig::top_k>>("top_k", "--top-k", "INT", ">= 0",
                                  "sample among the k most likely tokens; 0 = all"),
    field<Seed>("seed", "--seed", "UINT", "a whole number from 0 to 18446744073709551615",
                "seed of the sampling noise, drawn per (prompt, step) so runs share it"),
    field<Kernel>(
        "kernel", "--kernel", "TEXT",
        "comma-separated gemm=cublas|tiled (cuBLASLt, or the own kernel in the CPU reference's "
        "order) and attention=rowwise|tiled (whole-row softmax, or FlashAttention-2's 64-key "
        "tiles)",
        "op implementations, comma-separated: gemm=cublas (cuBLASLt) or gemm=tiled (own kernel in "
        "the CPU reference's reduction order), GPU only; attention=rowwise (whole-row softmax) or "
        "attention=tiled (FlashAttention-2's 64-key tiles, tensor cores on the GPU, emulated on "
        "the CPU)"),
    field<Choice<&RunConfig::tf32, kOffOn>>(
        "tf32", "--tf32", "TEXT", "off, on",
        "GPU only: TF32 tensor cores for fp32 cuBLAS GEMMs: off, on"),
    // Test-only: plants a cause at one op (src/experiment/perturb.h).
    field<Text<&RunConfig::test_perturb>>(
        "test_perturb", "--test-perturb", "TEXT", "<op>:<bf16|f16|+ulp|-ulp>",
        "test-only: perturb one op's output, <op>:<bf16|f16|+ulp|-ulp>", /*test_only=*/true),
};

// A test-only field at its default: left out of what to_json and to_toml write.
bool left_out(const RunConfigField& f, const RunConfig& c) {
  return f.test_only && f.get(c).text == f.get(RunConfig{}).text;
}

[[noreturn]] void unknown_field(std::string_view name) {
  throw Error(fmt::format("unknown run-config field '{}'", name),
              "fields: dtype, accum, batch, gemm_policy, split_k, tp, allreduce, attn_splits, "
              "prefill_chunk, prefix_cache, tie_break, ... (docs/configurations.md)");
}

// A field's value out of its range (a member set in code, or a number that parsed).
[[noreturn]] void out_of_range(const char* name, const std::string& value) {
  bad(name, value, find_run_config_field(name)->allowed);
}

}  // namespace

std::span<const RunConfigField> run_config_fields() {
  return kFields;
}

const RunConfigField* find_run_config_field(std::string_view name) {
  for (const RunConfigField& f : kFields) {
    if (name.size() != std::string_view(f.name).size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = (name[i] == '-' ? '_' : name[i]) == f.name[i];
    }
    if (same) return &f;
  }
  return nullptr;
}

std::string field_text(const RunConfig& c, std::string_view name) {
  const RunConfigField* f = find_run_config_field(name);
  if (f == nullptr) unknown_field(name);
  return f->get(c).text;
}

void set_field(RunConfig& c, const std::string& field, const std::string& value) {
  const RunConfigField* f = find_run_config_field(field);
  if (f == nullptr) unknown_field(field);
  f->set(c, *f, {FieldValue::Kind::word, value});
}

SamplingParams RunConfig::sampling() const {
  SamplingParams p{temperature, top_p, top_k, seed};
  p.highest_id_ties = tie_break == TieBreak::highest_id;
  p.repetition_penalty = repetition_penalty;
  return p;
}

std::optional<int32_t> stop_token_id(const RunConfig& c, std::optional<int32_t> format_default) {
  switch (c.stop_token.rule) {
    case StopToken::Rule::automatic:
      return format_default;
    case StopToken::Rule::none:
      return std::nullopt;
    case StopToken::Rule::id:
      break;
  }
  if (c.stop_token.id < 0) out_of_range("stop_token", std::to_string(c.stop_token.id));
  return c.stop_token.id;
}

uint64_t parse_seed(const std::string& text) {
  const std::string_view digits = std::string_view(text).substr(text.starts_with('-') ? 1 : 0);
  uint64_t seed = 0;
  const auto [stop, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seed);
  if (digits.empty() || stop != digits.data() + digits.size()) {
    throw Error(fmt::format("invalid seed '{}': not a number", text),
                "a seed is a whole number from 0 to 18446744073709551615");
  }
  if (ec == std::errc::result_out_of_range || text.starts_with('-')) {
    throw Error(fmt::format("seed {} is outside 0..18446744073709551615", text),
                "a seed is a whole number; a negative one is not wrapped, a larger one not "
                "clamped");
  }
  return seed;
}

void validate(const RunConfig& c) {
  if (c.accum == Accum::fp16 && c.kernel.attention == AttnKernel::tiled) {
    throw Error("accum fp16 does not go with attention=tiled",
                "the tiled attention accumulates in fp32 (tensor cores): use --accum fp32, or "
                "--kernel attention=rowwise");
  }
  if (c.accum == Accum::fp16 && c.dtype != DType::fp16 && c.dtype != DType::bf16) {
    throw Error(fmt::format("accum fp16 does not go with dtype {}", dtype_name(c.dtype)),
                "fp16 accumulation models pure-fp16 engines: use it with --dtype fp16 or bf16");
  }
  if (c.batch < 1) out_of_range("batch", std::to_string(c.batch));
  if (c.split_k < 0) out_of_range("split_k", std::to_string(c.split_k));
  if (c.tp < 1 || c.tp > 8) out_of_range("tp", std::to_string(c.tp));
  if (c.attn_splits < 0) out_of_range("attn_splits", std::to_string(c.attn_splits));
  if (c.prefill_chunk < 0) out_of_range("prefill_chunk", std::to_string(c.prefill_chunk));
  if (!(c.repetition_penalty > 0) || !std::isfinite(c.repetition_penalty)) {
    out_of_range("repetition_penalty", fmt::format("{}", c.repetition_penalty));
  }
  if (c.max_new < 0) out_of_range("max_new", std::to_string(c.max_new));
  stop_token_id(c, std::nullopt);
  validate(c.sampling());
  if (c.device == Device::cuda) {  // up front, before a model is loaded
    check_cuda_support(numerics(c));
  }
  parse_perturbation(c.test_perturb);  // test-only
}

void validate_for_model(const RunConfig& c, const ModelConfig& m) {
  if (m.n_heads % c.tp != 0 || m.n_kv_heads % c.tp != 0 || m.hidden_dim % c.tp != 0) {
    throw Error(fmt::format("invalid tp {}: it must divide the model's {} heads, {} key/value "
                            "heads and MLP width {}",
                            c.tp, m.n_heads, m.n_kv_heads, m.hidden_dim),
                "--tp takes a divisor of all three");
  }
  parse_perturbation(c.test_perturb, m.n_layers);
  if (const auto id = stop_token_id(c, std::nullopt); id && *id >= m.vocab_size) {
    bad("stop_token", std::to_string(*id),
        fmt::format("auto, none, or a token id of the model's vocabulary (0..{})",
                    m.vocab_size - 1));
  }
}

Numerics numerics(const RunConfig& c) {
  Numerics n;
  n.dtype = c.dtype;
  n.accum_f16 = c.accum == Accum::fp16;
  n.gemm_policy = c.gemm_policy;
  n.split_k = c.split_k;
  n.tp = c.tp;
  n.allreduce = c.allreduce;
  n.attn_splits = c.attn_splits;
  n.device = c.device;
  n.gemm_kernel = c.kernel.gemm;
  n.attn_kernel = c.kernel.attention;
  n.tf32 = c.tf32;
  return n;
}

std::unique_ptr<Runtime> make_configured_runtime(const Model& model, const RunConfig& c,
                                                 int capacity, int slots) {
  auto rt = make_runtime(model, numerics(c), capacity, slots);
  const OpPerturb perturb = parse_perturbation(c.test_perturb, model.config.n_layers);
  if (perturb.active()) rt->set_plan(NumericsPlan(PlanSide{numerics(c), {}, perturb}));
  return rt;
}

std::string to_json(const RunConfig& c) {
  nlohmann::ordered_json j;
  for (const RunConfigField& f : kFields) {
    if (left_out(f, c)) continue;
    const FieldValue v = f.get(c);
    switch (v.kind) {
      case Kind::integer:
        j[f.name] = nlohmann::json::parse(v.text);  // int, or a seed past int64
        break;
      case Kind::real:
        j[f.name] = std::stod(v.text);  // the shortest text that reads back to the same double
        break;
      default:
        j[f.name] = v.text;
    }
  }
  return j.dump();
}

std::string to_toml(const RunConfig& c) {
  std::string out;
  for (const RunConfigField& f : kFields) {
    if (left_out(f, c)) continue;
    const FieldValue v = f.get(c);
    out += v.kind == Kind::string ? fmt::format("{}=\"{}\"\n", f.name, v.text)
                                  : fmt::format("{}={}\n", f.name, v.text);
  }
  return out;
}

RunConfig config_from_json(const std::string& json, RunConfig base,
                           std::initializer_list<std::string_view> skip) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) throw Error("a run configuration is a JSON object of its fields");
  for (const auto& [key, value] : j.items()) {
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    const RunConfigField* f = find_run_config_field(key);
    if (f == nullptr || key != f->name) unknown_field(key);  // JSON keys are exact
    FieldValue v;
    if (value.is_string()) {
      v = {Kind::string, value.get<std::string>()};
    } else if (value.is_number_integer()) {
      v = {Kind::integer, value.dump()};
    } else if (value.is_number_float()) {
      v = {Kind::real, value.dump()};
    } else if (value.is_boolean()) {
      v = {Kind::boolean, value.dump()};
    } else {
      throw Error(fmt::format("invalid {} {}: not a string or a number", key, value.dump()),
                  fmt::format("{} takes {}", key, f->allowed));
    }
    f->set(base, *f, v);
  }
  return base;
}

}  // namespace ds
