// When two traces are comparable: model identity, run-config and tokenizer differences.
#include "diff/identity.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace ds::diff {
namespace {

using nlohmann::json;

// Invalid UTF-8 in a recorded string (a prompt's bytes) shows as U+FFFD instead of throwing.
std::string dump_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json parse_object(const std::string& text) {
  json j = json::parse(text.empty() ? std::string("{}") : text, nullptr, false);
  return j.is_object() ? j : json::object();
}

void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object() && (prefix.empty() || !j.empty())) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else {
    out[prefix] = j;
  }
}

// Every dotted field (under prefix) whose value differs between a and b, or is on one side only.
std::vector<ConfigDifference> differences(const json& a, const json& b, const std::string& prefix) {
  std::map<std::string, json> fa, fb;
  flatten(a, prefix, fa);
  flatten(b, prefix, fb);
  std::set<std::string> keys;
  for (const auto& [k, v] : fa) keys.insert(k);
  for (const auto& [k, v] : fb) keys.insert(k);
  std::vector<ConfigDifference> out;
  for (const auto& k : keys) {
    if (k.empty()) continue;
    const auto ia = fa.find(k), ib = fb.find(k);
    const bool ha = ia != fa.end(), hb = ib != fb.end();
    if (ha && hb && ia->second == ib->second) continue;
    out.push_back({k, ha ? dump_text(ia->second) : std::string(),
                   hb ? dump_text(ib->second) : std::string()});
  }
  return out;
}

}  // namespace

ModelIdentity model_identity(const std::string& model_json) {
  ModelIdentity m;
  const json j = parse_object(model_json);
  if (j.contains("files") && j["files"].is_array()) {
    for (const auto& f : j["files"]) {
      if (!f.is_object() || !f.contains("sha256") || !f["sha256"].is_string()) continue;
      const std::string sha = f["sha256"].get<std::string>();
      m.files.push_back(fmt::format("{} {}", f.value("name", std::string("?")), sha));
      m.hashes.push_back(sha);
    }
  }
  std::sort(m.hashes.begin(), m.hashes.end());
  m.known = !m.hashes.empty();
  if (j.contains("tokenizer") && j["tokenizer"].is_object()) {
    m.tokenizer = j["tokenizer"];
    m.tokenizer.erase("path");  // where the file lies says nothing about how it tokenizes
  }
  if (j.contains("config") && j["config"].is_object())
    m.n_layers = j["config"].value("n_layers", -1);
  return m;
}

std::string model_key(const ModelIdentity& m) {
  return fmt::format("{}", fmt::join(m.hashes, ","));
}

bool same_model(const ModelIdentity& a, const ModelIdentity& b) {
  return a.known && b.known && a.hashes == b.hashes;
}

std::vector<ConfigDifference> config_differences(const std::string& config_a,
                                                 const std::string& config_b) {
  return differences(parse_object(config_a), parse_object(config_b), "");
}

std::vector<ConfigDifference> tokenizer_differences(const ModelIdentity& a,
                                                    const ModelIdentity& b) {
  return differences(a.tokenizer, b.tokenizer, "model.tokenizer");
}

}  // namespace ds::diff
