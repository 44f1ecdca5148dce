// Synthetic Hugging Face checkpoints (seeded random weights, every architecture and storage
// format) loaded with ds::load_model and run on the CPU runtime, against the independent fp64
// oracle of tests/support/ref_forward; and the loader's errors for broken checkpoints.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <numbers>
#include <random>

#include "common/error.h"
#include "src/model/model.h"
#include "src/runtime/runtime.h"
#include "tests/support/compare.h"
#include "tests/support/ref_forward.h"
#include "tests/support/synthetic_checkpoint.h"

namespace fs = std::filesystem;
using namespace ds::test;

namespace {

// Tolerances on max|runtime - oracle| / max|oracle| per logits row.
// fp64: the runtime and the oracle evaluate the same formulas in double on the same weights and
//   may differ only in summation order and in how the rotation and the softmax are arranged,
//   each worth a few ulp (1.1e-16) per operation; over sums of <= 128 terms and a few layers that
//   stays far below 1e-12. (Today the orders happen to coincide and the error is exactly 0; the
//   test must not rely on that.) 1e-10 leaves room for a reordering while any wrong weight,
//   index or formula shows up at 1e-3 or more.
constexpr double kTolFp64 = 1e-10;
// fp32: every activation is rounded to float (epsilon 6e-8) and dot products accumulate up to
//   128 terms in float, so each layer adds a relative error of order 128 * 6e-8 = 8e-6 in the
//   worst case (typically sqrt(128) * 6e-8 = 7e-7); two to three layers plus the lm_head stay
//   well under 1e-4.
constexpr double kTolFp32 = 1e-4;

std::vector<int32_t> random_tokens(uint32_t seed, int n, int vocab) {
  std::mt19937 gen(seed);
  std::vector<int32_t> t(n);
  for (auto& id : t) id = static_cast<int32_t>(gen() % static_cast<uint32_t>(vocab));
  return t;
}

// The worst row: max over rows of max_rel_error(row of a, row of ref).
double worst_row_error(const std::vector<double>& a, const std::vector<double>& ref, int vocab) {
  if (a.size() != ref.size()) return INFINITY;
  double worst = 0;
  for (size_t r = 0; r * vocab < ref.size(); ++r) {
    worst = std::max(worst, max_rel_error(std::span(a).subspan(r * vocab, vocab),
                                          std::span(ref).subspan(r * vocab, vocab)));
  }
  return worst;
}

// All positions in one batched prefill.
std::vector<double> run_prefill(const ds::Model& m, ds::DType dtype,
                                const std::vector<int32_t>& tokens) {
  auto rt = ds::make_cpu_runtime(m, dtype, static_cast<int>(tokens.size()));
  std::vector<double> logits;
  rt->forward(tokens, 0, logits);
  return logits;
}

// A prefill of the first `prefill` tokens, then one token per call through the KV cache.
std::vector<double> run_stepwise(const ds::Model& m, ds::DType dtype,
                                 const std::vector<int32_t>& tokens, int prefill) {
  auto rt = ds::make_cpu_runtime(m, dtype, m.config.max_seq_len);
  std::vector<double> all, logits;
  rt->forward(std::span(tokens).first(prefill), 0, logits);
  all = logits;
  for (int p = prefill; p < static_cast<int>(tokens.size()); ++p) {
    rt->forward(std::span(tokens).subspan(p, 1), p, logits);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

// The sequence co-batched with another one in a second KV-cache slot (the other sequence's rows
// first), in a single forward call; returns the logits rows of `tokens` only.
std::vector<double> run_cobatched(const ds::Model& m, ds::DType dtype,
                                  const std::vector<int32_t>& tokens,
                                  const std::vector<int32_t>& other) {
  auto rt = ds::make_cpu_runtime(m, dtype, m.config.max_seq_len, 2);
  std::vector<ds::BatchRow> rows;
  for (size_t i = 0; i < other.size(); ++i) rows.push_back({1, static_cast<int>(i), other[i]});
  for (size_t i = 0; i < tokens.size(); ++i) rows.push_back({0, static_cast<int>(i), tokens[i]});
  std::vector<double> logits;
  rt->forward(rows, logits);
  const size_t skip = other.size() * m.config.vocab_size;
  return std::vector<double>(logits.begin() + static_cast<std::ptrdiff_t>(skip), logits.end());
}

// The loader hands back exactly the values the checkpoint holds (bf16/f16 decoded exactly).
void check_loaded_weights(const ds::Model& m, const SyntheticModel& s) {
  const ds::ModelWeights& w = m.weights;
  const RefWeights& r = s.weights;
  CHECK(w.embed == r.embed_tokens);
  CHECK(w.final_norm == r.norm);
  CHECK(w.lm_head == r.lm_head);  // both empty when tied
  REQUIRE(w.layers.size() == r.layers.size());
  for (size_t l = 0; l < r.layers.size(); ++l) {
    INFO("layer " << l);
    const ds::LayerWeights& a = w.layers[l];
    const RefLayer& b = r.layers[l];
    CHECK(a.attn_norm == b.input_layernorm);
    CHECK(a.wq == b.q_proj);
    CHECK(a.wk == b.k_proj);
    CHECK(a.wv == b.v_proj);
    CHECK(a.bq == b.q_bias);
    CHECK(a.bk == b.k_bias);
    CHECK(a.bv == b.v_bias);
    CHECK(a.wo == b.o_proj);
    CHECK(a.mlp_norm == b.post_attention_layernorm);
    CHECK(a.w_gate == b.gate_proj);
    CHECK(a.w_up == b.up_proj);
    CHECK(a.w_down == b.down_proj);
  }
}

struct CaseResult {
  ds::Model model;
  SyntheticModel synth;
  std::vector<int32_t> tokens;
  std::vector<double> reference;   // (T, vocab) from the oracle
  std::vector<double> fp64, fp32;  // (T, vocab) from the runtime, batched prefill
};

// Writes the checkpoint, loads it, checks config and weights, then compares both runtime dtypes
// on both paths with the oracle.
CaseResult run_case(const SyntheticSpec& spec, int n_tokens, int prefill) {
  TempDir tmp("driftscope-synthetic");
  CaseResult res;
  res.synth = write_synthetic_checkpoint(tmp.path() / "model", spec);
  res.model = ds::load_model(tmp.path() / "model");
  const ds::ModelConfig& c = res.model.config;

  CHECK(c.architecture == spec.architecture);
  CHECK(c.dim == spec.dim);
  CHECK(c.hidden_dim == spec.hidden);
  CHECK(c.n_layers == spec.layers);
  CHECK(c.n_heads == spec.heads);
  CHECK(c.n_kv_heads == spec.kv_heads);
  CHECK(c.head_dim == spec.dim / spec.heads);
  CHECK(c.vocab_size == spec.vocab);
  CHECK(c.max_seq_len == spec.max_pos);
  CHECK(c.rms_norm_eps == spec.rms_norm_eps);
  CHECK(c.rope_theta == spec.rope_theta);
  CHECK(c.tied_embeddings == spec.tied);
  CHECK(c.qkv_bias == res.synth.config.qkv_bias);
  CHECK(c.sliding_window == res.synth.config.sliding_window);
  CHECK(c.rope_scaling.has_value() == spec.rope_scaling.has_value());
  if (c.rope_scaling && spec.rope_scaling) {
    CHECK(c.rope_scaling->type == "llama3");
    CHECK(c.rope_scaling->factor == spec.rope_scaling->factor);
    CHECK(c.rope_scaling->low_freq_factor == spec.rope_scaling->low_freq_factor);
    CHECK(c.rope_scaling->high_freq_factor == spec.rope_scaling->high_freq_factor);
    CHECK(c.rope_scaling->original_max_position_embeddings ==
          spec.rope_scaling->original_max_position_embeddings);
  }
  CHECK(c.bos_id == 1);
  CHECK(c.eos_id == 2);
  CHECK(res.model.weight_dtype == storage_dtype_name(spec.dtype));
  CHECK(res.model.weight_files.size() == static_cast<size_t>(spec.shards));
  check_loaded_weights(res.model, res.synth);

  res.tokens = random_tokens(spec.seed + 1000, n_tokens, spec.vocab);
  res.reference = ref_forward(res.synth.config, res.synth.weights, res.tokens);
  REQUIRE(res.reference.size() == static_cast<size_t>(n_tokens) * spec.vocab);

  for (ds::DType dtype : {ds::DType::fp64, ds::DType::fp32}) {
    const double tol = dtype == ds::DType::fp64 ? kTolFp64 : kTolFp32;
    const std::vector<double> batched = run_prefill(res.model, dtype, res.tokens);
    const std::vector<double> stepwise = run_stepwise(res.model, dtype, res.tokens, prefill);
    const double err_batched = worst_row_error(batched, res.reference, spec.vocab);
    const double err_stepwise = worst_row_error(stepwise, res.reference, spec.vocab);
    INFO(ds::dtype_name(dtype) << ": worst row rel error, prefill " << err_batched << ", stepwise "
                               << err_stepwise << " (tolerance " << tol << ")");
    CHECK(err_batched <= tol);
    CHECK(err_stepwise <= tol);
    // Bitwise equal by construction: the CPU reference computes every row with the same loops in
    // the same order whatever the number of rows in the call (matmul, rmsnorm, rope and the
    // attention of a row never look at another row), and a key/value written to the cache in a
    // prefill is the same value as one written by a single-token step. So batching and the KV
    // cache must not change a single bit; a difference means state leaks between rows or steps.
    CHECK(batched == stepwise);
    // Likewise for co-batching with another sequence in another slot: rows only meet in the
    // per-row loops, and attention reads only the row's own slot, so not a bit may change.
    const std::vector<int32_t> other =
        random_tokens(spec.seed + 2000, n_tokens / 2 + 3, spec.vocab);
    CHECK(run_cobatched(res.model, dtype, res.tokens, other) == batched);
    (dtype == ds::DType::fp64 ? res.fp64 : res.fp32) = batched;
  }
  return res;
}

// Error checks: the call must throw ds::Error; returns its message (empty when it did not throw).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ds::Error& e) {
    return e.what();
  }
  FAIL_CHECK("expected ds::Error, nothing was thrown");
  return {};
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

SyntheticSpec small_spec() {
  SyntheticSpec s;
  s.dim = 16;
  s.hidden = 24;
  s.heads = 4;
  s.kv_heads = 2;
  s.layers = 2;
  s.vocab = 13;
  s.max_pos = 32;
  s.tied = false;
  s.seed = 7;
  return s;
}

}  // namespace

TEST_CASE("synthetic llama, GQA, tied embeddings, F32", "[model][synthetic]") {
  SyntheticSpec s;
  s.architecture = "llama";
  s.dim = 64, s.hidden = 96, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.vocab = 101;
  s.max_pos = 64;
  s.tied = true;
  s.seed = 11;
  run_case(s, 32, 5);
}

TEST_CASE("synthetic qwen2, q/k/v bias, untied lm_head, F32", "[model][synthetic]") {
  SyntheticSpec s;
  s.architecture = "qwen2";
  s.dim = 64, s.hidden = 128, s.layers = 2, s.heads = 8, s.kv_heads = 2, s.vocab = 97;
  s.max_pos = 64;
  s.rope_theta = 1000000.0;
  s.rms_norm_eps = 1e-6;
  s.tied = false;
  s.qkv_bias = true;
  s.seed = 12;
  CaseResult r = run_case(s, 28, 4);
  // The case exercises the biases: without them the oracle is far from the runtime.
  RefConfig no_bias = r.synth.config;
  no_bias.qkv_bias = false;
  CHECK(worst_row_error(r.fp64, ref_forward(no_bias, r.synth.weights, r.tokens), s.vocab) > 1e-3);
}

TEST_CASE("synthetic llama with llama3 rope_scaling, all three frequency bands",
          "[model][synthetic]") {
  SyntheticSpec s;
  s.architecture = "llama";
  s.dim = 64, s.hidden = 96, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.vocab = 89;
  s.max_pos = 64;
  s.rope_theta = 100.0;  // head_dim 16: wavelengths 2*pi*10^(i/4) = 6.3, 11.2, 19.9, 35.3, ...
  s.rope_scaling = RefLlama3Scaling{.factor = 4.0,
                                    .low_freq_factor = 0.5,
                                    .high_freq_factor = 2.0,
                                    .original_max_position_embeddings = 16.0};
  s.tied = false;
  s.seed = 13;
  const int T = 40;  // positions 0..39, beyond the original 16

  // The chosen parameters put at least one frequency in each band of the llama3 rule:
  // high (wavelength < 16/2 = 8: kept), low (> 16/0.5 = 32: divided by factor), medium between.
  const int hd = s.dim / s.heads;
  int high = 0, medium = 0, low = 0;
  for (int i = 0; i < hd / 2; ++i) {
    const double wavelen = 2 * std::numbers::pi * std::pow(s.rope_theta, 2.0 * i / hd);
    const double orig = s.rope_scaling->original_max_position_embeddings;
    if (wavelen < orig / s.rope_scaling->high_freq_factor) {
      ++high;
    } else if (wavelen > orig / s.rope_scaling->low_freq_factor) {
      ++low;
    } else {
      ++medium;
    }
  }
  INFO("bands: high " << high << ", medium " << medium << ", low " << low);
  REQUIRE(high >= 1);
  REQUIRE(medium >= 1);
  REQUIRE(low >= 1);
  REQUIRE(T > s.rope_scaling->original_max_position_embeddings);

  CaseResult r = run_case(s, T, 6);
  // The scaling matters here: the oracle without it is far from the runtime.
  RefConfig unscaled = r.synth.config;
  unscaled.rope_scaling.reset();
  CHECK(worst_row_error(r.fp64, ref_forward(unscaled, r.synth.weights, r.tokens), s.vocab) > 1e-3);
}

TEST_CASE("synthetic llama in 3 safetensors shards with an index", "[model][synthetic]") {
  SyntheticSpec s;
  s.architecture = "llama";
  s.dim = 48, s.hidden = 80, s.layers = 3, s.heads = 6, s.kv_heads = 3, s.vocab = 71;
  s.max_pos = 48;
  s.tied = false;
  s.shards = 3;
  s.seed = 14;
  run_case(s, 24, 3);
}

TEST_CASE("synthetic llama with BF16 tensors", "[model][synthetic]") {
  SyntheticSpec s;
  s.architecture = "llama";
  s.dim = 64, s.hidden = 96, s.layers = 2, s.heads = 4, s.kv_heads = 1, s.vocab = 83;
  s.max_pos = 64;
  s.tied = false;
  s.dtype = StorageDtype::BF16;
  s.seed = 15;
  CaseResult r = run_case(s, 30, 5);
  // The weights really were rounded: bf16 keeps 8 significant bits.
  const float w = r.synth.weights.layers[0].q_proj[0];
  CHECK((std::bit_cast<uint32_t>(w) & 0xffffu) == 0);
}

TEST_CASE("synthetic qwen2 with F16 tensors", "[model][synthetic]") {
  SyntheticSpec s;
  s.architecture = "qwen2";
  s.dim = 64, s.hidden = 96, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.vocab = 79;
  s.max_pos = 64;
  s.tied = true;
  s.dtype = StorageDtype::F16;
  s.seed = 16;
  CaseResult r = run_case(s, 30, 5);
  // f16 keeps 11 significant bits (13 low float bits zero) for normal values; small weights land
  // on the f16 subnormal grid (multiples of 2^-24), and the loader decoded those exactly too.
  int subnormal = 0;
  for (float v : r.synth.weights.embed_tokens) {
    if (v != 0 && std::fabs(v) < 0x1p-14f) ++subnormal;
  }
  INFO(subnormal << " f16 subnormal embedding values");
  CHECK((std::bit_cast<uint32_t>(r.synth.weights.layers[0].q_proj[0]) & 0x1fffu) == 0);
}

TEST_CASE("synthetic mistral with a sliding window shorter than the sequence",
          "[model][synthetic]") {
  SyntheticSpec s;
  s.architecture = "mistral";
  s.dim = 64, s.hidden = 96, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.vocab = 67;
  s.max_pos = 64;
  s.tied = false;
  s.sliding_window = 8;
  s.seed = 17;
  const int T = 30;
  REQUIRE(s.sliding_window < T);
  CaseResult r = run_case(s, T, 4);
  // The window matters here: the oracle with full causal attention is far from the runtime,
  // and agrees with it on the rows before the window is full.
  RefConfig full = r.synth.config;
  full.sliding_window = 0;
  const std::vector<double> unwindowed = ref_forward(full, r.synth.weights, r.tokens);
  CHECK(worst_row_error(r.fp64, unwindowed, s.vocab) > 1e-3);
  const size_t inside = static_cast<size_t>(s.sliding_window) * s.vocab;
  CHECK(max_rel_error(std::span(r.fp64).first(inside), std::span(unwindowed).first(inside)) <=
        kTolFp64);
}

TEST_CASE("synthetic checkpoint errors: a tensor with the wrong shape", "[model][synthetic]") {
  TempDir tmp("driftscope-synthetic");
  const SyntheticSpec s = small_spec();
  SyntheticModel m = make_synthetic_model(s);
  std::vector<SyntheticTensor> tensors = hf_tensors(m);
  for (auto& t : tensors) {
    if (t.name == "model.layers.1.mlp.up_proj.weight") {
      t.shape = {s.hidden, s.dim - 1};  // one input column short
      t.values.resize(static_cast<size_t>(s.hidden) * (s.dim - 1));
    }
  }
  write_hf_directory(tmp.path(), hf_config_json(s), tensors, s.dtype, 1);
  const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
  CHECK_THAT(msg, Catch::Contains("model.layers.1.mlp.up_proj.weight") &&
                      Catch::Contains("shape [24, 15]") && Catch::Contains("[24, 16]"));
}

TEST_CASE("synthetic checkpoint errors: a missing tensor", "[model][synthetic]") {
  TempDir tmp("driftscope-synthetic");
  const SyntheticSpec s = small_spec();
  const SyntheticModel m = make_synthetic_model(s);
  SECTION("a layer norm") {
    std::vector<SyntheticTensor> tensors = hf_tensors(m);
    std::erase_if(tensors, [](const SyntheticTensor& t) {
      return t.name == "model.layers.0.post_attention_layernorm.weight";
    });
    write_hf_directory(tmp.path(), hf_config_json(s), tensors, s.dtype, 1);
    const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
    CHECK_THAT(msg, Catch::Contains("model.layers.0.post_attention_layernorm.weight") &&
                        Catch::Contains("missing"));
  }
  SECTION("lm_head of an untied model") {
    std::vector<SyntheticTensor> tensors = hf_tensors(m);
    std::erase_if(tensors, [](const SyntheticTensor& t) { return t.name == "lm_head.weight"; });
    write_hf_directory(tmp.path(), hf_config_json(s), tensors, s.dtype, 1);
    const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
    CHECK_THAT(msg, Catch::Contains("lm_head.weight") && Catch::Contains("missing"));
  }
  SECTION("a tensor in a sharded checkpoint") {
    std::vector<SyntheticTensor> tensors = hf_tensors(m);
    std::erase_if(tensors, [](const SyntheticTensor& t) {
      return t.name == "model.layers.1.self_attn.k_proj.weight";
    });
    write_hf_directory(tmp.path(), hf_config_json(s), tensors, s.dtype, 3);
    const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
    CHECK_THAT(msg, Catch::Contains("model.layers.1.self_attn.k_proj.weight") &&
                        Catch::Contains("missing"));
  }
}

TEST_CASE("synthetic checkpoint errors: unknown architecture", "[model][synthetic]") {
  TempDir tmp("driftscope-synthetic");
  const SyntheticSpec s = small_spec();
  nlohmann::json config = hf_config_json(s);
  config["model_type"] = "gpt2";
  write_hf_directory(tmp.path(), config, hf_tensors(make_synthetic_model(s)), s.dtype, 1);
  const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
  CHECK_THAT(msg, Catch::Contains("unknown architecture") && Catch::Contains("gpt2"));
}

TEST_CASE("synthetic checkpoint errors: truncated safetensors file", "[model][synthetic]") {
  TempDir tmp("driftscope-synthetic");
  const SyntheticSpec s = small_spec();
  write_synthetic_checkpoint(tmp.path(), s);
  const fs::path file = tmp.path() / "model.safetensors";
  const std::string bytes = read_bytes(file);
  SECTION("cut in half: tensors point past the end") {
    write_bytes(file, bytes.substr(0, bytes.size() / 2));
    const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
    CHECK_THAT(msg, Catch::Contains("model.safetensors") && Catch::Contains("corrupt") &&
                        Catch::Contains("outside the file"));
  }
  SECTION("cut inside the header") {
    write_bytes(file, bytes.substr(0, 40));
    const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
    CHECK_THAT(msg,
               Catch::Contains("model.safetensors") && Catch::Contains("exceeds the file size 40"));
  }
  SECTION("cut inside the length prefix") {
    write_bytes(file, bytes.substr(0, 5));
    const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
    CHECK_THAT(msg, Catch::Contains("model.safetensors") && Catch::Contains("too short"));
  }
}

TEST_CASE("synthetic checkpoint errors: corrupt safetensors header", "[model][synthetic]") {
  TempDir tmp("driftscope-synthetic");
  const SyntheticSpec s = small_spec();
  write_synthetic_checkpoint(tmp.path(), s);
  const fs::path file = tmp.path() / "model.safetensors";
  std::string bytes = read_bytes(file);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[i]);
  REQUIRE(header_len + 8 < bytes.size());
  SECTION("header length bigger than the file") {
    const uint64_t n = bytes.size() + 100;
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    write_bytes(file, bytes);
    const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
    CHECK_THAT(msg, Catch::Contains("model.safetensors") &&
                        Catch::Contains("header length " + std::to_string(n)) &&
                        Catch::Contains("exceeds the file size"));
  }
  SECTION("header is not JSON") {
    for (uint64_t i = 0; i < header_len; ++i) bytes[8 + i] = '#';
    write_bytes(file, bytes);
    const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
    CHECK_THAT(msg, Catch::Contains("model.safetensors") && Catch::Contains("not valid JSON"));
  }
}

TEST_CASE("synthetic checkpoint errors: heads not divisible by key/value heads",
          "[model][synthetic]") {
  TempDir tmp("driftscope-synthetic");
  const SyntheticSpec s = small_spec();
  nlohmann::json config = hf_config_json(s);
  config["num_attention_heads"] = 4;
  config["num_key_value_heads"] = 3;
  write_hf_directory(tmp.path(), config, hf_tensors(make_synthetic_model(s)), s.dtype, 1);
  const std::string msg = error_of([&] { ds::load_model(tmp.path()); });
  CHECK_THAT(msg, Catch::Contains("config.json") &&
                      Catch::Contains("4 attention heads is not a multiple of 3 key/value heads"));
}
