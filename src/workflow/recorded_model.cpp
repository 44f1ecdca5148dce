// A trace's recorded model and tokenizer, found again and verified (recorded_model.h).
#include "src/workflow/recorded_model.h"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "common/error.h"
#include "common/json_integer.h"
#include "src/model/sha256.h"
#include "src/tokenizer/load.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

std::string string_at(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                : std::string();
}

// The digest of `path`, once per process (show and diff ask for the same tokenizer twice).
std::string cached_sha256(const fs::path& path) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  const std::string key = fs::absolute(path).lexically_normal().string();
  {
    std::lock_guard lock(mu);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const std::string digest = sha256_file(path);
  std::lock_guard lock(mu);
  return cache[key] = digest;
}

// "" when `f` is there and holds its recorded digest; else what is wrong with it.
std::string file_changed(const RecordedFile& f) {
  std::error_code ec;
  if (!fs::is_regular_file(f.path, ec)) {
    return fmt::format("'{}' is not there (or not a regular file)", f.path.string());
  }
  std::string now;
  try {
    now = cached_sha256(f.path);
  } catch (const Error& e) {
    return e.what();
  }
  if (now == f.sha256) return {};
  return fmt::format("'{}' has changed since the trace was written (sha256 {} recorded, {} now)",
                     f.path.string(), f.sha256.substr(0, 12), now.substr(0, 12));
}

}  // namespace

fs::path resolve_recorded_path(const std::string& path, const std::string& env_json) {
  if (path.empty()) return {};
  const fs::path p(path);
  if (p.is_absolute()) return p;
  const std::string cwd = string_at(nlohmann::json::parse(env_json, nullptr, false), "cwd");
  return (cwd.empty() ? fs::absolute(p) : fs::path(cwd) / p).lexically_normal();
}

RecordedModel recorded_model(const trace::TraceReader& t) {
  RecordedModel m;
  m.trace = t.path().string();
  const auto j = nlohmann::json::parse(t.model_json(), nullptr, false);
  if (!j.is_object()) return m;
  m.model = resolve_recorded_path(string_at(j, "path"), t.env_json());
  if (j.contains("config") && j["config"].is_object() && j["config"].contains("vocab_size")) {
    m.vocab_size = json_integer<int>(j["config"]["vocab_size"], 1, INT32_MAX).value_or(0);
  }
  // a weight file named in "files" lies in the model's folder (a Hugging Face directory), or is
  // the model file itself (a llama2.c .bin)
  const bool llama2c = string_at(j, "format") == "llama2c";
  const fs::path folder = llama2c ? m.model.parent_path() : m.model;
  if (j.contains("files") && j["files"].is_array() && !m.model.empty()) {
    for (const auto& f : j["files"]) {
      const std::string name = string_at(f, "name"), digest = string_at(f, "sha256");
      if (name.empty() || digest.empty()) continue;
      m.files.push_back({folder / fs::path(name).filename(), digest});
    }
  }
  if (j.contains("gguf") && j["gguf"].is_object()) {  // the llama.cpp recorder's model file
    const std::string path = string_at(j["gguf"], "path"), digest = string_at(j["gguf"], "sha256");
    if (!path.empty() && !digest.empty()) {
      m.gguf = RecordedFile{resolve_recorded_path(path, t.env_json()), digest};
    }
  }
  if (j.contains("tokenizer") && j["tokenizer"].is_object()) {
    const std::string path = string_at(j["tokenizer"], "path");
    const std::string digest = string_at(j["tokenizer"], "sha256");
    if (!path.empty())
      m.tokenizer = RecordedFile{resolve_recorded_path(path, t.env_json()), digest};
  }
  return m;
}

void verify_recorded_model(const RecordedModel& m, const std::string& hint) {
  if (m.files.empty()) {
    throw Error(fmt::format("trace '{}' records no model file digests, so its model cannot be "
                            "verified before it is reused",
                            m.trace),
                hint);
  }
  std::vector<RecordedFile> all = m.files;
  if (m.gguf) all.push_back(*m.gguf);
  for (const RecordedFile& f : all) {
    if (const std::string why = file_changed(f); !why.empty()) {
      throw Error(fmt::format("trace '{}' was recorded with the model '{}', and its file {}",
                              m.trace, m.model.string(), why),
                  hint);
    }
  }
}

void check_loaded_is_recorded(const RecordedModel& m, const Model& loaded,
                              const std::string& hint) {
  std::multiset<std::string> recorded, now;
  for (const auto& f : m.files) recorded.insert(f.sha256);
  if (recorded.empty()) return;
  for (const auto& f : loaded.weight_files) now.insert(cached_sha256(f));
  if (recorded != now) {
    throw Error(fmt::format("trace '{}' was recorded with other model files than the model "
                            "loaded ('{}'; the trace records '{}')",
                            m.trace, loaded.path.string(), m.model.string()),
                hint);
  }
}

std::string tokenizer_changed(const RecordedModel& m) {
  if (!m.tokenizer) return fmt::format("trace '{}' records no tokenizer", m.trace);
  if (m.tokenizer->sha256.empty()) {
    return fmt::format("trace '{}' records no digest of its tokenizer '{}'", m.trace,
                       m.tokenizer->path.string());
  }
  const std::string why = file_changed(*m.tokenizer);
  return why.empty() ? why : fmt::format("the tokenizer of trace '{}': {}", m.trace, why);
}

DecodingTokenizer decoding_tokenizer(const trace::TraceReader& t,
                                     const std::string& explicit_path) {
  const RecordedModel m = recorded_model(t);
  DecodingTokenizer d;
  if (!explicit_path.empty()) {  // asked for: loaded (or refused), and said when not the recorded
    d.tokenizer = m.vocab_size > 0 ? load_tokenizer(explicit_path, m.vocab_size)
                                   : load_tokenizer(explicit_path);
    std::error_code ec;  // a folder names its tokenizer.json, as load_tokenizer reads it
    const fs::path file = fs::is_directory(explicit_path, ec)
                              ? fs::path(explicit_path) / "tokenizer.json"
                              : fs::path(explicit_path);
    const bool same =
        m.tokenizer && !m.tokenizer->sha256.empty() && cached_sha256(file) == m.tokenizer->sha256;
    if (!same) {
      d.note = fmt::format(
          "decoding '{}' with --tokenizer '{}', not the tokenizer the trace "
          "records{}",
          m.trace, explicit_path, m.tokenizer ? " ('" + m.tokenizer->path.string() + "')" : "");
    }
    return d;
  }
  if (!m.tokenizer || m.vocab_size <= 0) return d;  // none recorded: ids, as recorded
  if (const std::string why = tokenizer_changed(m); !why.empty()) {
    d.note = why +
             ": tokens are shown as ids (--tokenizer PATH decodes them with a tokenizer "
             "you name)";
    return d;
  }
  try {
    d.tokenizer = load_tokenizer(m.tokenizer->path, m.vocab_size);
  } catch (const Error& e) {
    d.note = fmt::format(
        "the tokenizer of trace '{}' cannot be loaded ({}): tokens are shown as "
        "ids",
        m.trace, e.what());
  }
  return d;
}

}  // namespace ds
