// The observer proof's verdict and JSON (certificate.h).
#include "trace/certificate.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace ds::trace {
namespace {

std::string differs_text(int64_t seq, int64_t step, int64_t position, int64_t ulps,
                         bool token_differs) {
  return fmt::format("DIFFERS at seq {}, step {}, position {}: {}{}", seq, step, position,
                     ulps < 0 ? std::string("NaN on one side") : fmt::format("{} ulps", ulps),
                     token_differs ? ", another token chosen" : "");
}

}  // namespace

std::string Certificate::verdict() const {
  if (identical) return fmt::format("identical ({} logits rows, tapped and untapped)", rows);
  return differs_text(seq, step, position, ulps, token_differs);
}

std::string Certificate::json() const {
  nlohmann::ordered_json j{{"verdict", identical ? "identical" : "differs"}, {"rows", rows}};
  j["first"] = identical ? nlohmann::ordered_json()
                         : nlohmann::ordered_json{{"seq", seq},
                                                  {"step", step},
                                                  {"position", position},
                                                  {"ulps", ulps},
                                                  {"token_differs", token_differs}};
  return j.dump();
}

std::string certify_verdict(const std::string& certify_json) {
  if (certify_json.empty()) return {};
  const auto j = nlohmann::json::parse(certify_json, nullptr, false);
  try {
    if (j.at("verdict") == "identical") {
      return fmt::format("identical ({} logits rows, tapped and untapped)",
                         j.at("rows").get<int64_t>());
    }
    const auto& f = j.at("first");
    return differs_text(f.at("seq").get<int64_t>(), f.at("step").get<int64_t>(),
                        f.at("position").get<int64_t>(), f.at("ulps").get<int64_t>(),
                        f.at("token_differs").get<bool>());
  } catch (const std::exception&) {
    return "unreadable";
  }
}

}  // namespace ds::trace
