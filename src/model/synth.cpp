// Streaming writer of synthetic Hugging Face checkpoints.
#include "src/model/synth.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/float_formats.h"
#include "common/output_file.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

ModelConfig shape_config(const std::string& arch, int dim, int hidden, int layers, int heads,
                         int kv_heads, int vocab, int ctx, double theta, bool bias) {
  ModelConfig c;
  c.architecture = arch;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = dim / heads;
  c.vocab_size = vocab;
  c.max_seq_len = ctx;
  c.rms_norm_eps = arch == "qwen2" ? 1e-6 : 1e-5;
  c.rope_theta = theta;
  c.qkv_bias = bias;
  c.bos_id = 1;
  c.eos_id = 2;
  return c;
}

ModelConfig tied(ModelConfig c) {
  c.tied_embeddings = true;
  return c;
}

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  enum Kind { weight, norm, bias } kind;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

std::vector<TensorSpec> tensors_of(const ModelConfig& c) {
  const int64_t D = c.dim, F = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim(), V = c.vocab_size;
  std::vector<TensorSpec> t;
  t.push_back({"model.embed_tokens.weight", {V, D}, TensorSpec::weight});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    t.push_back({p + "input_layernorm.weight", {D}, TensorSpec::norm});
    t.push_back({p + "self_attn.q_proj.weight", {Q, D}, TensorSpec::weight});
    t.push_back({p + "self_attn.k_proj.weight", {KV, D}, TensorSpec::weight});
    t.push_back({p + "self_attn.v_proj.weight", {KV, D}, TensorSpec::weight});
    if (c.qkv_bias) {
      t.push_back({p + "self_attn.q_proj.bias", {Q}, TensorSpec::bias});
      t.push_back({p + "self_attn.k_proj.bias", {KV}, TensorSpec::bias});
      t.push_back({p + "self_attn.v_proj.bias", {KV}, TensorSpec::bias});
    }
    t.push_back({p + "self_attn.o_proj.weight", {D, Q}, TensorSpec::weight});
    t.push_back({p + "post_attention_layernorm.weight", {D}, TensorSpec::norm});
    t.push_back({p + "mlp.gate_proj.weight", {F, D}, TensorSpec::weight});
    t.push_back({p + "mlp.up_proj.weight", {F, D}, TensorSpec::weight});
    t.push_back({p + "mlp.down_proj.weight", {D, F}, TensorSpec::weight});
  }
  t.push_back({"model.norm.weight", {D}, TensorSpec::norm});
  if (!c.tied_embeddings) t.push_back({"lm_head.weight", {V, D}, TensorSpec::weight});
  return t;
}

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

nlohmann::ordered_json config_json(const ModelConfig& c) {
  const char* cls = c.architecture == "qwen2"     ? "Qwen2ForCausalLM"
                    : c.architecture == "mistral" ? "MistralForCausalLM"
                                                  : "LlamaForCausalLM";
  nlohmann::ordered_json j;
  j["architectures"] = {cls};
  j["model_type"] = c.architecture;
  j["hidden_size"] = c.dim;
  j["intermediate_size"] = c.hidden_dim;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_seq_len;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = c.tied_embeddings;
  if (c.architecture == "llama") j["attention_bias"] = false;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  j["torch_dtype"] = "bfloat16";
  j["driftscope_synthetic"] = true;  // random weights: speed and memory only
  return j;
}

// The shape's config with --layers applied, after checking the options and that `dir` may be
// written.
ModelConfig checked_config(const SynthShape& shape, const SynthOptions& opt, const fs::path& dir) {
  ModelConfig c = shape.config;
  if (opt.layers < 0 || opt.layers > c.n_layers) {
    throw Error(
        fmt::format("layers {} outside 0..{} for shape {}", opt.layers, c.n_layers, shape.name),
        fmt::format("--layers takes 0 (all) .. {}", c.n_layers));
  }
  if (opt.layers > 0) c.n_layers = opt.layers;
  if (!storage_of(opt.dtype))
    parse_synth_dtype(traits(opt.dtype).name);  // throws: not bf16/f16/f32
  if (fs::exists(dir) && !fs::is_empty(dir) && !opt.force) {
    // named, hidden ones too: a folder `ls` shows empty is never "not empty" without saying why
    throw Error(fmt::format("'{}' exists and is not empty: it holds {}", dir.string(),
                            folder_entries_text(dir)),
                "pass --force to overwrite, or choose another -o");
  }
  return c;
}

// The tensors of each shard: in order, a new shard when the next tensor would pass shard_bytes.
std::vector<std::vector<size_t>> plan_shards(const std::vector<TensorSpec>& specs, size_t esize,
                                             int64_t shard_bytes) {
  std::vector<std::vector<size_t>> shards(1);
  int64_t bytes = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const int64_t b = specs[i].numel() * static_cast<int64_t>(esize);
    if (bytes > 0 && bytes + b > shard_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(i);
    bytes += b;
  }
  return shards;
}

// A shard's safetensors header: its length (u64 little-endian), then the JSON naming each tensor's
// dtype, shape and data offsets, padded with spaces so the data starts 8-byte aligned.
void write_shard_header(TempFile& out, const std::vector<TensorSpec>& specs,
                        const std::vector<size_t>& shard, NumberFormat dtype) {
  const char* st_dtype = traits(dtype).safetensors;
  const size_t esize = traits(dtype).bytes;
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t off = 0;
  for (size_t i : shard) {
    const uint64_t n = static_cast<uint64_t>(specs[i].numel()) * esize;
    header[specs[i].name] = {
        {"dtype", st_dtype}, {"shape", specs[i].shape}, {"data_offsets", {off, off + n}}};
    off += n;
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');
  const uint64_t hl = h.size();
  char len[8];
  for (int k = 0; k < 8; ++k) len[k] = static_cast<char>((hl >> (8 * k)) & 0xff);
  out.write(std::string_view(len, 8));
  out.write(h);
}

// Streams one tensor's values in blocks of 2^20 (weights ~ U(-a, a) from the tensor's own seeded
// stream, norms 1, biases 0), reporting progress after every block.
void write_tensor_values(TempFile& out, const TensorSpec& t, const SynthOptions& opt, size_t esize,
                         uint64_t total, uint64_t& written, std::vector<char>& block) {
  const double a = 0.02 * std::sqrt(3.0);  // U(-a, a) has standard deviation 0.02
  uint64_t state = opt.seed ^ std::hash<std::string>{}(t.name);
  const int64_t n = t.numel();
  for (int64_t b = 0; b < n; b += 1 << 20) {
    const int64_t m = std::min<int64_t>(1 << 20, n - b);
    block.resize(static_cast<size_t>(m) * esize);
    for (int64_t k = 0; k < m; ++k) {
      float v = t.kind == TensorSpec::norm ? 1.0f : 0.0f;
      if (t.kind == TensorSpec::weight) {
        const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;
        v = static_cast<float>((2 * u - 1) * a);
      }
      if (esize == 4) {
        std::memcpy(&block[k * 4], &v, 4);
      } else {
        uint16_t bits = 0;
        narrow(&v, &bits, 1, *storage_of(opt.dtype));
        std::memcpy(&block[k * 2], &bits, 2);
      }
    }
    out.write(std::string_view(block.data(), block.size()));
    written += block.size();
    if (opt.progress) opt.progress(written, total);
    if (opt.should_stop && opt.should_stop()) throw SynthInterrupted();  // `out` removes its file
  }
}

}  // namespace

NumberFormat parse_synth_dtype(const std::string& name) {
  const auto f = find_number_format(name, &NumberFormatTraits::name);
  if (!f || !storage_of(*f)) {
    throw Error(fmt::format("invalid dtype '{}'", name), "--dtype takes bf16, f16 or f32");
  }
  return *f;
}

const std::vector<SynthShape>& synth_shapes() {
  static const std::vector<SynthShape> shapes = {
      {"llama2-7b", shape_config("llama", 4096, 11008, 32, 32, 32, 32000, 4096, 1e4, false)},
      {"llama3-8b", shape_config("llama", 4096, 14336, 32, 32, 8, 128256, 8192, 5e5, false)},
      {"qwen2-7b", shape_config("qwen2", 3584, 18944, 28, 28, 4, 152064, 32768, 1e6, true)},
      {"mistral-7b", shape_config("mistral", 4096, 14336, 32, 32, 8, 32000, 32768, 1e6, false)},
      {"qwen2-0.5b", tied(shape_config("qwen2", 896, 4864, 24, 14, 2, 151936, 32768, 1e6, true))},
      {"stories110m", tied(shape_config("llama", 768, 2048, 12, 12, 12, 32000, 1024, 1e4, false))},
      {"tiny", shape_config("llama", 64, 172, 2, 8, 4, 512, 256, 1e4, false)},
  };
  return shapes;
}

const SynthShape& synth_shape(const std::string& name) {
  std::string known;
  for (const auto& s : synth_shapes()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw Error(fmt::format("unknown shape '{}'", name), "--shape takes one of: " + known);
}

int64_t parameter_count(const ModelConfig& c) {
  int64_t n = 0;
  for (const auto& t : tensors_of(c)) n += t.numel();
  return n;
}

void write_synthetic_checkpoint(const SynthShape& shape, const SynthOptions& opt,
                                const fs::path& dir) {
  const ModelConfig c = checked_config(shape, opt, dir);
  fs::create_directories(dir);
  const size_t esize = traits(opt.dtype).bytes;
  const auto specs = tensors_of(c);
  const auto shards = plan_shards(specs, esize, opt.shard_bytes);
  const uint64_t total = static_cast<uint64_t>(parameter_count(c)) * esize;
  uint64_t written = 0;
  nlohmann::ordered_json weight_map;
  std::vector<fs::path> committed;  // the shards of this invocation, removed when interrupted
  const auto remove_committed = [&] {
    std::error_code ec;
    for (const auto& f : committed) fs::remove(f, ec);
  };
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string file = shards.size() == 1 ? std::string("model.safetensors")
                                                : fmt::format("model-{:05d}-of-{:05d}.safetensors",
                                                              s + 1, shards.size());
    // written under a hidden name and moved onto `file` when complete (common/output_file.h):
    // a link planted at the name is replaced, never written through
    const fs::path target = dir / file;
    try {
      TempFile out(target);
      write_shard_header(out, specs, shards[s], opt.dtype);
      for (size_t i : shards[s]) weight_map[specs[i].name] = file;
      std::vector<char> block;
      for (size_t i : shards[s])
        write_tensor_values(out, specs[i], opt, esize, total, written, block);
      out.commit(target, /*replace=*/true);
      committed.push_back(target);
    } catch (const SynthInterrupted&) {
      remove_committed();
      throw;
    } catch (const std::system_error& e) {
      throw write_error(target, e);
    }
  }
  if (shards.size() > 1) {
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", parameter_count(c) * static_cast<int64_t>(esize)}};
    index["weight_map"] = weight_map;
    write_file_or_fail(dir / "model.safetensors.index.json", index.dump(2) + "\n");
  }
  write_file_or_fail(dir / "config.json", config_json(c).dump(2) + "\n");
}

}  // namespace ds
