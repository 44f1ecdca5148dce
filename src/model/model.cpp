// Model loading entry point: picks the format from the path, finds tokenizers and the default
// model.
#include "src/model/model.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "common/error.h"
#include "common/work_pool.h"
#include "src/model/memory.h"
#include "src/model/synth.h"

namespace fs = std::filesystem;

namespace ds {

Model load_model(const fs::path& path) {
  if (!fs::exists(path)) {
    throw Error(fmt::format("model path '{}' does not exist", path.string()),
                "give --model a Hugging Face model directory or a llama2.c .bin file "
                "(without --model the bundled kjv-llama is used)");
  }
  auto checked = [](Model m) {
    check_finite_weights(m);
    return m;
  };
  if (fs::is_directory(path)) return checked(load_hf_model(path));
  if (path.extension() == ".bin") return checked(load_llama2c_model(path));
  if (path.filename() == "config.json" || path.extension() == ".safetensors") {
    return checked(load_hf_model(path.parent_path()));
  }
  throw Error(fmt::format("'{}' is neither a model directory nor a .bin file", path.string()),
              "give --model a Hugging Face model directory or a llama2.c .bin file");
}

ModelFormat model_format(const fs::path& path) {
  return path.extension() == ".bin" && !fs::is_directory(path) ? ModelFormat::Llama2c
                                                               : ModelFormat::HuggingFace;
}

ModelConfig read_model_config(const fs::path& path) {
  if (!fs::exists(path)) {
    throw Error(fmt::format("model path '{}' does not exist", path.string()),
                "give --model a Hugging Face model directory or a llama2.c .bin file "
                "(without --model the bundled kjv-llama is used)");
  }
  if (fs::is_directory(path)) return read_hf_config(path);
  if (path.extension() == ".bin") return read_llama2c_config(path);
  if (path.filename() == "config.json" || path.extension() == ".safetensors") {
    return read_hf_config(path.parent_path());
  }
  throw Error(fmt::format("'{}' is neither a model directory nor a .bin file", path.string()),
              "give --model a Hugging Face model directory or a llama2.c .bin file");
}

fs::path find_tokenizer(const Model& model) {
  return find_tokenizer(model.path, model.format);
}

fs::path find_tokenizer(const fs::path& model, ModelFormat format) {
  if (format == ModelFormat::HuggingFace) {
    fs::path p = model / "tokenizer.json";
    if (fs::exists(p)) return p;
    throw Error(fmt::format("no tokenizer.json in '{}'", model.string()),
                "pass --tokenizer PATH, or give the prompt as --prompt-ids");
  }
  const fs::path dir = model.parent_path().empty() ? fs::path(".") : model.parent_path();
  if (fs::exists(dir / "tokenizer.bin")) return dir / "tokenizer.bin";
  std::vector<fs::path> candidates;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("tok") && name.ends_with(".bin")) candidates.push_back(e.path());
  }
  if (candidates.size() == 1) return candidates[0];
  throw Error(fmt::format("no unique tokenizer.bin / tok*.bin beside '{}'", model.string()),
              "pass --tokenizer PATH, or give the prompt as --prompt-ids");
}

void check_load_memory(const ModelConfig& c, uint64_t weight_bytes, const std::string& held,
                       const std::string& source) {
  check_memory(fmt::format("running '{}' on the CPU ({} parameters: {} of weights {}, plus {} of "
                           "KV cache per token)",
                           source, parameter_count(c), format_bytes(weight_bytes), held,
                           format_bytes(kv_bytes_per_token(c, 4))),
               weight_bytes,
               "use a machine with more memory, or a smaller model (synth --layers N writes "
               "fewer layers)");
}

std::vector<std::pair<std::string, const WeightTensor*>> named_tensors(const Model& model) {
  const ModelWeights& w = model.weights;
  std::vector<std::pair<std::string, const WeightTensor*>> t{{"embed", &w.embed}};
  const char* names[] = {"attn_norm", "wq", "wk",       "wv",     "bq",   "bk",
                         "bv",        "wo", "mlp_norm", "w_gate", "w_up", "w_down"};
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    const WeightTensor* p[] = {&L.attn_norm, &L.wq, &L.wk,       &L.wv,     &L.bq,   &L.bk,
                               &L.bv,        &L.wo, &L.mlp_norm, &L.w_gate, &L.w_up, &L.w_down};
    for (size_t i = 0; i < std::size(p); ++i) {
      if (!p[i]->empty()) t.push_back({fmt::format("L{} {}", l, names[i]), p[i]});  // biases
    }
  }
  t.push_back({"final_norm", &w.final_norm});
  if (!w.lm_head.empty()) t.push_back({"lm_head", &w.lm_head});
  return t;
}

std::vector<const WeightTensor*> model_tensors(const Model& model) {
  std::vector<const WeightTensor*> t;
  for (const auto& [name, p] : named_tensors(model)) t.push_back(p);
  return t;
}

namespace {

// The index of the first NaN or infinity among the stored values (their exponent all ones), or
// -1 (a plain loop over the bits the compiler vectorises).
template <typename U>
int64_t first_non_finite(const U* v, size_t n, U exponent) {
  constexpr size_t kBlock = 4096;
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    unsigned any = 0;  // not bool: GCC 12 vectorises an unsigned OR, not a bool one (4x slower)
    for (size_t i = b; i < e; ++i) any |= static_cast<unsigned>((v[i] & exponent) == exponent);
    if (!any) continue;
    for (size_t i = b; i < e; ++i)
      if ((v[i] & exponent) == exponent) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace

void check_finite_weights(const Model& model) {
  // pieces of at most 2^22 values, scanned by the threads the process started for its CPU work
  // (a 7B checkpoint's first touch of every page is this scan); the first bad piece in tensor
  // order names the same element as a scan in order would
  struct Piece {
    size_t tensor;  // index into named
    size_t begin, end;
  };
  constexpr size_t kPiece = size_t{1} << 22;
  const auto named = named_tensors(model);
  std::vector<Piece> pieces;
  for (size_t i = 0; i < named.size(); ++i) {
    const size_t n = named[i].second->size();
    for (size_t b = 0; b < n; b += kPiece) pieces.push_back({i, b, std::min(n, b + kPiece)});
  }
  std::vector<int64_t> first(pieces.size(), -1);
  WorkPool& pool = WorkPool::instance();
  pool.run(pieces.size(), pieces.size(), pool.workers() + 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const Piece& p = pieces[i];
      const WeightTensor& t = *named[p.tensor].second;
      const size_t n = p.end - p.begin;
      const int64_t at =
          t.format() == Storage::native
              ? first_non_finite(static_cast<const uint32_t*>(t.raw()) + p.begin, n, 0x7f800000u)
              : first_non_finite(
                    t.halves() + p.begin, n,
                    static_cast<uint16_t>(t.format() == Storage::bf16 ? 0x7f80 : 0x7c00));
      if (at >= 0) first[i] = static_cast<int64_t>(p.begin) + at;
    }
  });
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (first[i] < 0) continue;
    const auto& [name, t] = named[pieces[i].tensor];
    const float v = (*t)[static_cast<size_t>(first[i])];
    throw Error(fmt::format("weight tensor '{}' of '{}' holds {} at element {}", name,
                            model.path.string(), std::isnan(v) ? "NaN" : "an infinity", first[i]),
                "every weight must be a finite number: the checkpoint is damaged, or was saved "
                "from a run that diverged");
  }
}

uint64_t model_weight_bytes(const Model& model) {
  uint64_t bytes = 0;
  for (const WeightTensor* t : model_tensors(model)) bytes += t->bytes();
  return bytes;
}

void check_token_ids(std::span<const int32_t> ids, int vocab_size) {
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size) {
      throw Error(fmt::format("unknown token id {} (the vocabulary has {} tokens)", id, vocab_size),
                  fmt::format("token ids must lie in 0..{}", vocab_size - 1));
    }
  }
}

fs::path default_model_path() {
  const fs::path rel = fs::path("models") / "kjv-llama" / "kjv-llama.bin";
  std::vector<fs::path> roots;
  if (const char* home = std::getenv("DRIFTSCOPE_HOME")) roots.emplace_back(home);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    roots.push_back(exe.parent_path() / "..");                           // build/driftscope
    roots.push_back(exe.parent_path() / ".." / "share" / "driftscope");  // installed
  }
  roots.emplace_back(DRIFTSCOPE_SOURCE_DIR);
  for (const auto& r : roots) {
    if (fs::exists(r / rel)) return fs::weakly_canonical(r / rel);
  }
  throw Error("the bundled model models/kjv-llama/kjv-llama.bin was not found",
              "pass --model PATH, or set DRIFTSCOPE_HOME to the driftscope source folder");
}

}  // namespace ds
