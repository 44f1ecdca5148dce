// Model loading entry point: picks the format from the path, finds tokenizers and the default
// model.
#include "src/model/model.h"

#include <fmt/format.h>
#include <unistd.h>

#include "common/error.h"
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
  if (fs::is_directory(path)) return load_hf_model(path);
  if (path.extension() == ".bin") return load_llama2c_model(path);
  if (path.filename() == "config.json" || path.extension() == ".safetensors") {
    return load_hf_model(path.parent_path());
  }
  throw Error(fmt::format("'{}' is neither a model directory nor a .bin file", path.string()),
              "give --model a Hugging Face model directory or a llama2.c .bin file");
}

fs::path find_tokenizer(const Model& model) {
  if (model.format == ModelFormat::HuggingFace) {
    fs::path p = model.path / "tokenizer.json";
    if (fs::exists(p)) return p;
    throw Error(fmt::format("no tokenizer.json in '{}'", model.path.string()),
                "pass --tokenizer PATH, or give the prompt as --prompt-ids");
  }
  const fs::path dir = model.path.parent_path().empty() ? fs::path(".") : model.path.parent_path();
  if (fs::exists(dir / "tokenizer.bin")) return dir / "tokenizer.bin";
  std::vector<fs::path> candidates;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("tok") && name.ends_with(".bin")) candidates.push_back(e.path());
  }
  if (candidates.size() == 1) return candidates[0];
  throw Error(fmt::format("no unique tokenizer.bin / tok*.bin beside '{}'", model.path.string()),
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

std::vector<const WeightTensor*> model_tensors(const Model& model) {
  const ModelWeights& w = model.weights;
  std::vector<const WeightTensor*> t{&w.embed};
  for (const LayerWeights& l : w.layers) {
    for (const WeightTensor* p : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.bq, &l.bk, &l.bv, &l.wo,
                                  &l.mlp_norm, &l.w_gate, &l.w_up, &l.w_down}) {
      if (!p->empty()) t.push_back(p);  // absent biases are empty
    }
  }
  t.push_back(&w.final_norm);
  if (!w.lm_head.empty()) t.push_back(&w.lm_head);
  return t;
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
