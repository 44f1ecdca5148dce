// `driftscope show trace.h5`: what a trace holds — config, model, prompts and continuations,
// recorded sites with shapes and dtypes, size on disk, complete or not.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/number_format.h"
#include "common/printable.h"
#include "diff/noise_floor.h"
#include "src/cli/commands.h"
#include "src/console/output.h"
#include "src/workflow/recorded_model.h"
#include "trace/certificate.h"
#include "trace/floor_file.h"
#include "trace/summary.h"

namespace ds {
namespace {

struct ShowArgs {
  std::string path;
  bool json = false;
  std::string tokenizer;  // decodes instead of the one the trace records
};

std::string human_bytes(uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < 10ull * 1024 * 1024 * 1024) return fmt::format("{:.1f} MiB", b / 1048576.0);
  return fmt::format("{:.1f} GiB", b / 1073741824.0);
}

// The continuation as generate prints it: the whole sequence decoded, less the prompt's text.
// Decoding the continuation alone would drop its leading space (SentencePiece strips the first
// token's "▁"). Falls back to the continuation alone when the prompt's text is not a prefix.
std::string continuation_text(const Tokenizer& tok, const std::string& prompt_text,
                              const std::vector<int32_t>& all, const std::vector<int32_t>& cont) {
  const std::string whole = decode_shown(tok, all);
  if (whole.starts_with(prompt_text)) return whole.substr(prompt_text.size());
  return decode_shown(tok, cont);
}

// A recorded value as JSON text safe on a terminal: invalid UTF-8 (a prompt's raw bytes, a token
// decoded alone) shows as U+FFFD instead of failing, and every control character escaped (JSON's
// own escapes; DEL and C1 such as the 8-bit CSI as \u007f, \u009b).
std::string shown_json(const nlohmann::json& v) {
  return printable_json(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string quoted(const std::string& text) {
  return shown_json(nlohmann::json(text));
}

// A field of the trace's model record as text, "?" where it is missing: the record is JSON
// from the file, and a hand-edited or damaged trace may hold anything there.
std::string field(const nlohmann::json& record, std::initializer_list<const char*> path) {
  const nlohmann::json* v = &record;
  for (const char* key : path) {
    if (!v->is_object() || !v->contains(key)) return "?";
    v = &v->at(key);
  }
  return v->is_string() ? printable(v->get<std::string>())  // a path holding ESC: escaped
                        : shown_json(*v);
}

// `show FLOOR`: what a noise floor file holds (docs/trace-format.md, "Floor files").
int show_floor(const ShowArgs& a) {
  const trace::FloorFile f = trace::read_floor(a.path);
  const diff::FloorSummary sum = diff::summarize_floor(f);
  if (a.json) {
    nlohmann::ordered_json j;
    j["path"] = a.path;
    j["format"] = trace::kFloorFormat;
    j["format_version"] = f.format_version;
    j["tool_version"] = f.tool_version;
    j["source"] = f.source;
    j["model_digest"] = f.model_digest;
    j["config_digest"] = f.config_digest;
    j["config"] = nlohmann::ordered_json::parse(f.config_json, nullptr, false);
    j["perturbation"] = f.perturbation;
    j["runs"] = f.runs();
    std::vector<int> seqs;
    for (const auto& q : f.sequences) seqs.push_back(q.index);
    j["sequences"] = seqs;
    j["buckets"] = f.buckets;
    nlohmann::ordered_json sites = nlohmann::ordered_json::array();
    for (const auto& s : sum.sites) {
      sites.push_back({{"site", s.site},
                       {"storage", s.storage},
                       {"rel_l2_median", s.rel_l2_median},
                       {"rel_l2_max", s.rel_l2_max},
                       {"differ_median", s.differ_median}});
    }
    j["sites"] = sites;
    j["choice_rows"] = sum.choice_rows;
    j["expected_flips"] = sum.expected_flips;
    j["replay_mean_flips"] = sum.replay_mean_flips;
    j["replay_max_flips"] = sum.replay_max_flips;
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  }
  fmt::print("floor     {} (noise floor, format v{}, driftscope {})\n", printable(a.path),
             f.format_version, printable(f.tool_version));
  fmt::print("source    {}\n", printable(f.source));
  fmt::print("model     sha256 {} (of its files' digests)\n", printable(f.model_digest));
  fmt::print("config    sha256 {}: {}\n", printable(f.config_digest), printable(f.config_json));
  fmt::print("replays   {} under {} (p-values down to 1/{} = {:.3g})\n", f.runs(),
             printable(f.perturbation), f.runs() + 1, 1.0 / (f.runs() + 1));
  std::vector<int> seqs;
  for (const auto& q : f.sequences) seqs.push_back(q.index);
  fmt::print("sequences {} ({}), {} choice rows, {} position buckets\n", seqs.size(),
             fmt::join(seqs, " "), sum.choice_rows, f.buckets);
  fmt::print(
      "flips     {:.2f} sequences expected to flip under the perturbation alone; the "
      "replays flipped {:.2f} on average (at most {})\n",
      sum.expected_flips, sum.replay_mean_flips, sum.replay_max_flips);
  fmt::print("\n  {:<16}  {:<8}  {:>14}  {:>14}  {:>13}\n", "site", "storage", "rel L2 median",
             "rel L2 max", "differ median");
  for (const auto& s : sum.sites) {
    fmt::print("  {:<16}  {:<8}  {:>14.3g}  {:>14.3g}  {:>13.3f}\n", printable(s.site),
               printable(s.storage), s.rel_l2_median, s.rel_l2_max, s.differ_median);
  }
  return 0;
}

int run_show(const ShowArgs& a) {
  std::optional<trace::TraceReader> reader;
  try {
    reader.emplace(trace::TraceReader::open(a.path));
  } catch (const Error&) {
    if (trace::is_floor_file(a.path)) return show_floor(a);  // not a trace: maybe a floor
    throw;
  }
  const trace::TraceSummary s = trace::summarize(*reader);
  if (a.json) {
    fmt::print("{}\n", trace::to_json(s));
    return 0;
  }
  const auto model = nlohmann::json::parse(s.model_json, nullptr, false);
  const auto config = nlohmann::json::parse(s.config_json, nullptr, false);
  // the recorded tokenizer when its file is the one recorded, or --tokenizer; a note says which
  const DecodingTokenizer decoding = decoding_tokenizer(*reader, a.tokenizer);
  if (!decoding.note.empty()) print_note("note: {}\n", decoding.note);
  const Tokenizer* tok = decoding.tokenizer.get();
  fmt::print("trace     {} ({}, format v{}, {})\n", printable(s.path), human_bytes(s.file_bytes),
             s.format_version, printable(s.producer));
  fmt::print("status    {}\n",
             s.complete ? "complete"
                        : fmt::format("INCOMPLETE (complete=0, {})", printable(s.stop_reason)));
  if (!s.certify_json.empty()) {
    fmt::print("certify   {}\n", printable(trace::certify_verdict(s.certify_json)));
  }
  if (s.cut_short) {
    fmt::print(
        "          CUT SHORT: {} of {} bytes on disk; sequences with data past the cut "
        "are marked DAMAGED below\n",
        s.cut_short->on_disk, s.cut_short->expected);
  }
  if (model.is_object()) {
    fmt::print("model     {} {} ({} layers, dim {}, vocab {}) {}\n", field(model, {"architecture"}),
               field(model, {"format"}), field(model, {"config", "n_layers"}),
               field(model, {"config", "dim"}), field(model, {"config", "vocab_size"}),
               field(model, {"path"}));
    if (model.contains("files") && model.at("files").is_array()) {
      for (const auto& f : model.at("files")) {
        fmt::print("          {} sha256 {}\n", field(f, {"name"}), field(f, {"sha256"}));
      }
    }
  }
  if (config.is_object()) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : config.items())
      kv.push_back(fmt::format("{}={}", printable(k), shown_json(v)));
    fmt::print("config    {}\n", fmt::join(kv, " "));
  }
  fmt::print("command   {}\n", printable(s.command_line));
  for (const auto& [index, why] : s.damaged) {
    fmt::print("\nseq {}    DAMAGED, not read: {}\n", index, printable(why));
  }
  for (const auto& q : s.sequences) {
    fmt::print("\nseq {}    prompt {} tokens, generated {}, stop: {}, {} positions recorded\n",
               q.index, q.prompt_len, q.gen_len, printable(q.stop_reason), q.rows);
    std::vector<int32_t> prompt(q.tokens.begin(),
                                q.tokens.begin() + std::min<size_t>(q.prompt_len, q.tokens.size()));
    std::vector<int32_t> cont(q.tokens.begin() + prompt.size(), q.tokens.end());
    if (tok) {
      const std::string prompt_text = decode_shown(*tok, prompt);
      fmt::print("  prompt        {}\n", quoted(prompt_text));
      fmt::print("  continuation  {}\n",
                 quoted(continuation_text(*tok, prompt_text, q.tokens, cont)));
    } else {
      fmt::print("  prompt ids        {}\n", fmt::join(prompt, " "));
      fmt::print("  continuation ids  {}\n", fmt::join(cont, " "));
    }
    if (q.topk > 0) {
      fmt::print("  logits        top-{} ids/logits + lse{}\n", q.topk,
                 q.has_full_logits ? " + full" : "");
    }
    if (!q.sites.empty()) {
      const auto& f = q.sites.front();
      fmt::print("  hidden        {} sites, each [{}, {}] {} ({} ... {})\n", q.sites.size(),
                 f.shape[0], f.shape.size() > 1 ? f.shape[1] : 0, traits(f.elem).trace_name, f.name,
                 q.sites.back().name);
    }
  }
  return 0;
}

}  // namespace

CommandRun register_show(CLI::App* cmd) {
  auto args = std::make_shared<ShowArgs>();
  cmd->description(
      "Summarize a trace: config, model, prompts and "
      "continuations, recorded sites, size, completeness, run --certify's verdict; or a noise "
      "floor file (driftscope calibrate): its trace, model and configuration digests, replays "
      "and the floor per site.");
  cmd->add_option("trace", args->path, "trace file (.h5)")->required();
  cmd->add_flag("--json", args->json, "print the summary as JSON");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "decode prompts and continuations with this tokenizer (default: the one the "
                  "trace records, when its file is still the one recorded; else ids)");
  return [args] { return run_show(*args); };
}

}  // namespace ds
