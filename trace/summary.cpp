// Trace summaries for `show`.
#include "trace/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace ds::trace {
namespace {

// Reads every recorded row of a sequence (and drops it), a block of rows at a time, so that a
// sequence of a file cut short is named as damaged when any of its data lies past the cut.
void read_every_row(const TraceReader& r, const SequenceInfo& q) {
  constexpr int64_t kBlock = 256;  // rows: memory stays small whatever the trace's size
  std::vector<float> buffer;
  for (int64_t b = 0; b < q.rows; b += kBlock) {
    const int64_t n = std::min(kBlock, q.rows - b);
    for (const auto& site : q.sites) r.hidden(q.index, site.name, b, n, buffer);
    if (q.topk > 0) {
      r.topk(q.index, b, n);
      r.lse(q.index, b, n);
    }
    if (q.has_full_logits) r.full_logits(q.index, b, n, buffer);
  }
}

}  // namespace

void read_whole(const TraceReader& r) {
  if (const auto& cut = r.cut_short()) {
    throw Error(fmt::format("trace '{}' is damaged: cut short ({} of {} bytes on disk)",
                            r.path().string(), cut->on_disk, cut->expected),
                "record it again");
  }
  for (int i : r.sequence_indices()) read_every_row(r, r.sequence(i));
  if (r.has_kernels()) r.kernels();
}

TraceSummary summarize(const TraceReader& r) {
  TraceSummary s;
  s.path = r.path().string();
  s.file_bytes = r.file_size();
  s.format_version = r.format_version();
  s.tool_version = r.tool_version();
  s.producer = r.producer();
  s.complete = r.complete();
  s.stop_reason = r.stop_reason();
  s.config_json = r.config_json();
  s.model_json = r.model_json();
  s.env_json = r.env_json();
  s.command_line = r.command_line();
  s.certify_json = r.certify_json();
  s.cut_short = r.cut_short();
  for (int i : r.sequence_indices()) {
    try {
      s.sequences.push_back(r.sequence(i));
      if (s.cut_short) read_every_row(r, s.sequences.back());
    } catch (const Error& e) {
      if (!s.sequences.empty() && s.sequences.back().index == i) s.sequences.pop_back();
      s.damaged.emplace_back(i, e.what());
    }
  }
  return s;
}

std::string to_json(const TraceSummary& s) {
  auto parse = [](const std::string& text) {
    auto j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    return j.is_discarded() ? nlohmann::ordered_json(text) : j;
  };
  nlohmann::ordered_json j;
  j["path"] = s.path;
  j["file_bytes"] = s.file_bytes;
  j["format_version"] = s.format_version;
  j["tool_version"] = s.tool_version;
  j["producer"] = s.producer;
  j["complete"] = s.complete;
  j["stop_reason"] = s.stop_reason;
  if (s.cut_short) {
    j["cut_short"] = {{"bytes_on_disk", s.cut_short->on_disk},
                      {"bytes_expected", s.cut_short->expected}};
  }
  j["config"] = parse(s.config_json);
  j["model"] = parse(s.model_json);
  j["env"] = parse(s.env_json);
  j["command_line"] = s.command_line;
  if (!s.certify_json.empty()) j["certify"] = parse(s.certify_json);
  j["sequences"] = nlohmann::ordered_json::array();
  auto damaged = s.damaged.begin();
  auto put_damaged_before = [&](int index) {
    for (; damaged != s.damaged.end() && damaged->first < index; ++damaged) {
      j["sequences"].push_back({{"index", damaged->first}, {"damaged", damaged->second}});
    }
  };
  for (const auto& q : s.sequences) {
    put_damaged_before(q.index);
    nlohmann::ordered_json sj;
    sj["index"] = q.index;
    sj["prompt_len"] = q.prompt_len;
    sj["gen_len"] = q.gen_len;
    sj["stop_reason"] = q.stop_reason;
    sj["rows"] = q.rows;
    sj["tokens"] = q.tokens;
    sj["topk"] = q.topk;
    sj["full_logits"] = q.has_full_logits;
    sj["sites"] = nlohmann::ordered_json::array();
    for (const auto& site : q.sites) {
      sj["sites"].push_back(
          {{"name", site.name}, {"shape", site.shape}, {"dtype", traits(site.elem).trace_name}});
    }
    j["sequences"].push_back(sj);
  }
  put_damaged_before(std::numeric_limits<int>::max());
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace ds::trace
