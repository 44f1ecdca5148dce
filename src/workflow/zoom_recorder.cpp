// The Python recorder's replay of one side of a zoom: its command rebuilt from the trace.
#include "src/workflow/zoom_recorder.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/json_integer.h"
#include "src/console/command_line.h"
#include "trace/summary.h"

namespace ds {
namespace {

constexpr const char* kRecorder = "driftscope-trace";

// The fields of a recorder trace's config_json and model_json the replay's options come from.
class Recorded {
 public:
  explicit Recorded(const trace::TraceReader& t)
      : path_(t.path().string()),
        config_(nlohmann::json::parse(t.config_json(), nullptr, false)),
        model_(nlohmann::json::parse(t.model_json(), nullptr, false)) {}

  const nlohmann::json& config() const { return config_; }
  const nlohmann::json& model() const { return model_; }

  // j[key] as the recorder's flag takes it (a string as is, a number as JSON writes it).
  std::string text(const nlohmann::json& j, const char* key, const char* where) const {
    if (j.is_object() && j.contains(key)) {
      const auto& v = j[key];
      if (v.is_string()) return v.get<std::string>();
      if (v.is_number()) return v.dump();
    }
    throw Error(fmt::format("trace '{}' records no {}.{}, which the recorder's replay needs", path_,
                            where, key),
                "zoom replays traces written by driftscope-trace run or llamacpp of this version");
  }
  const nlohmann::json& object(const nlohmann::json& j, const char* key) const {
    static const nlohmann::json empty = nlohmann::json::object();
    return j.is_object() && j.contains(key) && j[key].is_object() ? j[key] : empty;
  }

 private:
  std::string path_;
  nlohmann::json config_, model_;
};

// The options both recorders take as `driftscope run` names them: the choice of the next token
// and what the trace holds.
void add_common(const Recorded& r, std::vector<std::string>& o) {
  const auto& c = r.config();
  const auto& t = r.object(c, "trace");
  for (const auto& [flag, key] : {std::pair{"--tie-break", "tie_break"},
                                  {"--add-bos", "add_bos"},
                                  {"--repetition-penalty", "repetition_penalty"},
                                  {"--temperature", "temperature"},
                                  {"--top-p", "top_p"},
                                  {"--top-k", "top_k"},
                                  {"--seed", "seed"},
                                  {"-n", "max_new"}}) {
    o.insert(o.end(), {flag, r.text(c, key, "config_json")});
  }
  o.insert(o.end(), {"--hidden-dtype", r.text(t, "hidden_dtype", "config_json.trace"),
                     "--trace-topk", r.text(t, "topk", "config_json.trace")});
  if (t.contains("full_logits") && t["full_logits"] == true) o.push_back("--full-logits");
  const bool deflate = t.contains("compression") && t["compression"] != "none";
  o.insert(o.end(), {"--compression", deflate ? "deflate" : "none"});
}

// `name` as execv takes it: itself when it holds a '/', else its first executable on PATH.
std::string resolve(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return std::filesystem::absolute(candidate).string();
    }
  }
  return "";
}

}  // namespace

bool written_by_recorder(const trace::TraceReader& t) {
  return t.producer().rfind("driftscope_trace", 0) == 0;
}

RecorderReplay recorder_replay(const trace::TraceReader& t) {
  const Recorded r(t);
  const auto& c = r.config();
  const auto& engine = r.object(c, "engine");
  RecorderReplay out;
  out.producer = t.producer();
  out.engine = engine.contains("name") && engine["name"].is_string()
                   ? engine["name"].get<std::string>()
                   : "";
  auto& o = out.options;
  if (out.engine == "transformers") {
    out.device = r.text(engine, "device", "config_json.engine");
    o = {"run", "-m", r.text(r.model(), "path", "model_json")};
    const auto& tok = r.object(r.model(), "tokenizer");
    if (tok.contains("path")) o.insert(o.end(), {"--tokenizer", r.text(tok, "path", "tokenizer")});
    o.insert(o.end(), {"--dtype", r.text(c, "dtype", "config_json"), "--device", out.device,
                       "--batch", r.text(c, "batch", "config_json"), "--attn-implementation",
                       r.text(engine, "attn_implementation", "config_json.engine"), "--threads",
                       r.text(engine, "threads", "config_json.engine")});
    out.batch = json_integer<int>(c.at("batch"), 1).value_or(1);  // there: text() found it
  } else if (out.engine == "llama.cpp") {
    out.device = "cpu";
    o = {"llamacpp", "-m", r.text(r.object(r.model(), "gguf"), "path", "model_json.gguf")};
    const auto& m = r.model();  // an object: text() found the gguf path in it
    if (!m.contains("format") || m["format"] != "gguf") {  // the Hugging Face source's identity
      o.insert(o.end(), {"--source-model", r.text(r.model(), "path", "model_json")});
    }
    o.insert(o.end(), {"--kv-type", r.text(engine, "kv_type", "config_json.engine"), "--threads",
                       r.text(engine, "threads", "config_json.engine")});
  } else {
    throw Error(fmt::format("trace '{}' was written by {} from engine '{}', which zoom cannot "
                            "replay",
                            t.path().string(), t.producer(), out.engine),
                "zoom replays traces of driftscope and of driftscope-trace's transformers and "
                "llama.cpp recorders");
  }
  add_common(r, o);
  return out;
}

std::vector<std::string> recorder_argv(const RecorderReplay& r,
                                       const std::filesystem::path& prompts,
                                       const std::filesystem::path& trace) {
  std::vector<std::string> argv =
      r.command.empty() ? std::vector<std::string>{kRecorder} : r.command;
  argv.insert(argv.end(), r.options.begin(), r.options.end());
  argv.insert(argv.end(), {"--prompts", prompts.string(), "--probes", "all", "-o", trace.string(),
                           "--force", "-q"});
  return argv;
}

void find_recorder(RecorderReplay& r, const std::string& source,
                   const std::filesystem::path& prompts, const std::filesystem::path& trace) {
  const char* env = std::getenv("DRIFTSCOPE_TRACE");
  if (env != nullptr && std::string(env).find_first_not_of(" \t") == std::string::npos) {
    env = nullptr;  // set but empty: as if unset
  }
  std::vector<std::string> words;
  std::istringstream in(env != nullptr ? env : kRecorder);
  for (std::string w; in >> w;) words.push_back(w);
  if (!words.empty()) words.front() = resolve(words.front());
  if (!words.empty() && !words.front().empty()) {
    r.command = words;
    return;
  }
  const std::string where =
      env != nullptr
          ? fmt::format("DRIFTSCOPE_TRACE='{}' names no executable", env)
          : fmt::format("{} is not on PATH (and DRIFTSCOPE_TRACE is not set)", kRecorder);
  const char* extra = r.engine == "llama.cpp" ? "llamacpp" : "transformers";
  throw Error(
      fmt::format("trace '{}' was written by {}: zoom replays it with that recorder, but {}",
                  source, r.producer, where),
      fmt::format("install it (pip install './python[{}]' in driftscope's source tree) or "
                  "set DRIFTSCOPE_TRACE to its command; its replay is: {}",
                  extra, shell_command(recorder_argv(r, prompts, trace))));
}

bool recorder_replay_done(const std::filesystem::path& trace, const RecorderReplay& r) {
  if (!std::filesystem::exists(trace)) return false;
  try {
    const auto t = trace::TraceReader::open(trace);
    if (!t.complete() || t.cut_short() || !written_by_recorder(t)) return false;
    const auto c = nlohmann::json::parse(t.config_json());
    if (c.value("trace", nlohmann::json::object()).value("probes", "") != "all") return false;
    if (recorder_replay(t).options != r.options) return false;
    trace::read_whole(t);  // every row read: a damaged replay is run again, never kept
    return true;
  } catch (const std::exception&) {
    return false;  // unreadable (e.g. killed mid-write): run it again
  }
}

}  // namespace ds
