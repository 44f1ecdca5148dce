// Validation, runtime numerics and serialisations of the run configuration.
#include "src/experiment/run_config.h"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>
#include <type_traits>

#include "common/error.h"
#include "src/experiment/perturb.h"
#include "src/runtime/cuda_loader.h"
#include "src/runtime/policy.h"

namespace ds {
namespace {

[[noreturn]] void bad(const std::string& field, const std::string& value,
                      const std::string& allowed) {
  throw Error(fmt::format("invalid {} '{}'", field, value), fmt::format(
                                                                "--{} takes {}",
                                                                [&] {
                                                                  std::string f = field;
                                                                  for (char& ch : f)
                                                                    ch = ch == '_' ? '-' : ch;
                                                                  return f;
                                                                }(),
                                                                allowed));
}

void one_of(const std::string& field, const std::string& v, std::initializer_list<const char*> ok) {
  std::string allowed;
  for (const char* o : ok) {
    if (v == o) return;
    allowed += (allowed.empty() ? "" : ", ") + std::string(o);
  }
  bad(field, v, allowed);
}

// "auto" -> 0, "N" -> N >= 1.
int auto_or_count(const std::string& field, const std::string& v) {
  if (v == "auto") return 0;
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || n < 1) bad(field, v, "auto or a whole number >= 1");
  return n;
}

// The op implementations of `kernel`: comma-separated op=choice entries, each op at most once,
// "gemm=cublas|tiled" (GPU only; the CPU reference has one GEMM) and "attention=rowwise|tiled"
// (both backends); an op not named keeps its default (gemm=cublas, attention=rowwise).
struct KernelChoice {
  GemmKernel gemm = GemmKernel::cublas;
  AttnKernel attention = AttnKernel::rowwise;
};
KernelChoice parse_kernel(const std::string& v) {
  const char* allowed =
      "comma-separated gemm=cublas|tiled (cuBLASLt, or the own kernel in the CPU reference's "
      "order) and attention=rowwise|tiled (whole-row softmax, or FlashAttention-2's 64-key tiles)";
  KernelChoice k;
  bool gemm = false, attention = false;
  size_t at = 0;
  do {
    const size_t comma = v.find(',', at);
    const std::string item = v.substr(at, comma == std::string::npos ? comma : comma - at);
    at = comma == std::string::npos ? comma : comma + 1;
    if ((item == "gemm=cublas" || item == "gemm=tiled") && !gemm) {
      k.gemm = item == "gemm=tiled" ? GemmKernel::tiled : GemmKernel::cublas;
      gemm = true;
    } else if ((item == "attention=rowwise" || item == "attention=tiled") && !attention) {
      k.attention = item == "attention=tiled" ? AttnKernel::tiled : AttnKernel::rowwise;
      attention = true;
    } else {
      bad("kernel", v, allowed);
    }
  } while (at != std::string::npos);
  return k;
}

}  // namespace

SamplingParams RunConfig::sampling() const {
  SamplingParams p{temperature, top_p, top_k, seed};
  p.highest_id_ties = tie_break == "highest_id";
  p.repetition_penalty = repetition_penalty;
  return p;
}

std::optional<int32_t> stop_token_id(const RunConfig& c, std::optional<int32_t> format_default) {
  if (c.stop_token == "auto") return format_default;
  if (c.stop_token == "none") return std::nullopt;
  size_t used = 0;
  long long id = -1;
  try {
    id = std::stoll(c.stop_token, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != c.stop_token.size() || id < 0 || id > INT32_MAX) {
    bad("stop_token", c.stop_token, "auto (the model format's rule), none, or a token id");
  }
  return static_cast<int32_t>(id);
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
  one_of("device", c.device, {"cpu", "cuda"});
  one_of("dtype", c.dtype, {"fp64", "fp32", "fp16", "bf16", "layercast"});
  parse_kernel(c.kernel);
  one_of("tf32", c.tf32, {"off", "on"});
  one_of("accum", c.accum, {"fp32", "fp16"});
  if (c.accum == "fp16" && parse_kernel(c.kernel).attention == AttnKernel::tiled) {
    throw Error("accum fp16 does not go with attention=tiled",
                "the tiled attention accumulates in fp32 (tensor cores): use --accum fp32, or "
                "--kernel attention=rowwise");
  }
  if (c.accum == "fp16" && c.dtype != "fp16" && c.dtype != "bf16") {
    throw Error(fmt::format("accum fp16 does not go with dtype {}", c.dtype),
                "fp16 accumulation models pure-fp16 engines: use it with --dtype fp16 or bf16");
  }
  if (c.batch < 1) bad("batch", std::to_string(c.batch), "a whole number >= 1");
  one_of("gemm_policy", c.gemm_policy, {"invariant", "heuristic"});
  auto_or_count("split_k", c.split_k);
  if (c.tp < 1 || c.tp > 8) bad("tp", std::to_string(c.tp), "1..8");
  one_of("allreduce", c.allreduce, {"ring", "tree"});
  auto_or_count("attn_splits", c.attn_splits);
  if (c.prefill_chunk < 0)
    bad("prefill_chunk", std::to_string(c.prefill_chunk), "0 (whole prompt) or N >= 1");
  one_of("prefix_cache", c.prefix_cache, {"off", "on"});
  one_of("tie_break", c.tie_break, {"lowest_id", "highest_id"});
  one_of("add_bos", c.add_bos, {"auto", "on", "off"});
  if (!(c.repetition_penalty > 0) || !std::isfinite(c.repetition_penalty)) {
    bad("repetition_penalty", fmt::format("{}", c.repetition_penalty),
        "a finite value > 0 (1 = off)");
  }
  if (c.max_new < 0) bad("max_new", std::to_string(c.max_new), "N >= 0");
  stop_token_id(c, std::nullopt);
  validate(c.sampling());
  if (c.device == "cuda") {  // up front, before a model is loaded
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
    bad("stop_token", c.stop_token,
        fmt::format("auto, none, or a token id of the model's vocabulary (0..{})",
                    m.vocab_size - 1));
  }
}

Numerics numerics(const RunConfig& c) {
  Numerics n;
  n.dtype = parse_dtype(c.dtype);
  n.accum_f16 = c.accum == "fp16";
  n.gemm_policy = c.gemm_policy == "heuristic" ? GemmPolicy::heuristic : GemmPolicy::invariant;
  n.split_k = auto_or_count("split_k", c.split_k);
  n.tp = c.tp;
  n.allreduce = c.allreduce == "tree" ? ops::AllReduce::tree : ops::AllReduce::ring;
  n.attn_splits = auto_or_count("attn_splits", c.attn_splits);
  n.device = c.device == "cuda" ? Device::cuda : Device::cpu;
  const KernelChoice k = parse_kernel(c.kernel);
  n.gemm_kernel = k.gemm;
  n.attn_kernel = k.attention;
  n.tf32 = c.tf32 == "on";
  return n;
}

std::unique_ptr<Runtime> make_configured_runtime(const Model& model, const RunConfig& c,
                                                 int capacity, int slots) {
  auto rt = make_runtime(model, numerics(c), capacity, slots);
  const OpPerturb perturb = parse_perturbation(c.test_perturb, model.config.n_layers);
  if (perturb.active()) rt->set_plan(NumericsPlan(PlanSide{numerics(c), {}, perturb}));
  return rt;
}

namespace {

// Every field with its name, in declaration order; C is RunConfig or const RunConfig.
template <typename C, typename F>
void for_each_field(C& c, F&& f) {
  f("device", c.device);
  f("dtype", c.dtype);
  f("accum", c.accum);
  f("batch", c.batch);
  f("gemm_policy", c.gemm_policy);
  f("split_k", c.split_k);
  f("tp", c.tp);
  f("allreduce", c.allreduce);
  f("attn_splits", c.attn_splits);
  f("prefill_chunk", c.prefill_chunk);
  f("prefix_cache", c.prefix_cache);
  f("tie_break", c.tie_break);
  f("add_bos", c.add_bos);
  f("repetition_penalty", c.repetition_penalty);
  f("max_new", c.max_new);
  f("stop_token", c.stop_token);
  f("temperature", c.temperature);
  f("top_p", c.top_p);
  f("top_k", c.top_k);
  f("seed", c.seed);
  f("kernel", c.kernel);
  f("tf32", c.tf32);
  f("test_perturb", c.test_perturb);  // written only when set (unset_test_field)
}

// Whether field `name` is the test-only perturbation, unset: left out of to_json and to_toml, so
// that every other run's configuration reads as it did before the field existed.
template <typename V>
bool unset_test_field(const char* name, const V& v) {
  if constexpr (std::is_same_v<V, std::string>) {
    return std::string_view(name) == "test_perturb" && v.empty();
  } else {
    return false;
  }
}

}  // namespace

void set_field(RunConfig& c, const std::string& field, const std::string& value) {
  bool found = false;
  for_each_field(c, [&](const char* name, auto& v) {
    if (field != name) return;
    found = true;
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, std::string>) {
      v = value;
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      v = parse_seed(value);  // the one unsigned field, with its own messages
    } else {
      size_t used = 0;
      T parsed{};
      try {
        if constexpr (std::is_same_v<T, double>) {
          parsed = std::stod(value, &used);
        } else {
          parsed = static_cast<T>(std::stoi(value, &used));
        }
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != value.size()) {
        throw Error(fmt::format("invalid {} '{}': not a number", field, value),
                    fmt::format("{} takes a number (docs/configurations.md)", field));
      }
      v = parsed;
    }
  });
  if (!found) {
    throw Error(fmt::format("unknown run-config field '{}'", field),
                "fields: dtype, accum, batch, gemm_policy, split_k, tp, allreduce, attn_splits, "
                "prefill_chunk, prefix_cache, tie_break, ... (docs/configurations.md)");
  }
}

std::string to_json(const RunConfig& c) {
  nlohmann::ordered_json j;
  for_each_field(c, [&](const char* name, const auto& v) {
    if (!unset_test_field(name, v)) j[name] = v;
  });
  return j.dump();
}

std::string to_toml(const RunConfig& c) {
  std::string out;
  for_each_field(c, [&](const char* name, const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if (unset_test_field(name, v)) return;
    if constexpr (std::is_same_v<V, std::string>) {
      out += fmt::format("{}=\"{}\"\n", name, v);
    } else {
      out += fmt::format("{}={}\n", name, v);
    }
  });
  return out;
}

}  // namespace ds
