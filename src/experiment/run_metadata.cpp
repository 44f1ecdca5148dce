// Model identity and environment descriptions recorded in traces.
#include "src/experiment/run_metadata.h"

#include <hdf5.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "src/model/sha256.h"
#include "src/runtime/cuda_loader.h"

namespace ds {

std::string model_identity_json(const Model& model, const Tokenizer* tok,
                                const std::filesystem::path& tokenizer_path) {
  const ModelConfig& c = model.config;
  nlohmann::ordered_json j;
  j["architecture"] = c.architecture;
  j["format"] = model.format == ModelFormat::Llama2c ? "llama2c" : "huggingface";
  j["path"] = model.path.string();
  j["weight_dtype"] = model.weight_dtype;
  j["config"] = {{"dim", c.dim},
                 {"hidden_dim", c.hidden_dim},
                 {"n_layers", c.n_layers},
                 {"n_heads", c.n_heads},
                 {"n_kv_heads", c.n_kv_heads},
                 {"head_dim", c.head_dim},
                 {"vocab_size", c.vocab_size},
                 {"max_seq_len", c.max_seq_len},
                 {"rms_norm_eps", c.rms_norm_eps},
                 {"rope_theta", c.rope_theta},
                 {"tied_embeddings", c.tied_embeddings},
                 {"qkv_bias", c.qkv_bias},
                 {"sliding_window", c.sliding_window}};
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const auto& f : model.weight_files) {
    files.push_back({{"name", f.filename().string()},
                     {"bytes", std::filesystem::file_size(f)},
                     {"sha256", sha256_file(f)}});
  }
  j["files"] = files;
  if (tok != nullptr) {
    j["tokenizer"] = {{"path", tokenizer_path.string()},
                      {"sha256", sha256_file(tokenizer_path)},
                      {"kind", tok->kind()},
                      {"bos_id", tok->bos_id() ? nlohmann::json(*tok->bos_id()) : nlohmann::json()},
                      {"eos_id", tok->eos_id() ? nlohmann::json(*tok->eos_id()) : nlohmann::json()},
                      {"policy", nlohmann::json::parse(tok->policy_json())}};
  } else {
    j["tokenizer"] = nullptr;
  }
  return j.dump();
}

std::string environment_json(const std::string& device) {
  nlohmann::ordered_json j;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  j["host"] = host;
  struct utsname u {};
  if (uname(&u) == 0) j["os"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  j["compiler"] = std::string("g++ ") + __VERSION__;
  j["driftscope_version"] = DRIFTSCOPE_VERSION;
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  j["hdf5_version"] = std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel);
  j["cuda"] = device == "cuda" ? cuda_device_summary() : "not used (device " + device + ")";
  // the working folder, against which the relative paths of model_json and the command line
  // resolve when the trace's model or tokenizer is reused (zoom, attribute, --force-tokens, show)
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (!ec) j["cwd"] = cwd.string();
  return j.dump();
}

}  // namespace ds
