// `driftscope show trace.h5`: what a trace holds — config, model, prompts and continuations,
// recorded sites with shapes and dtypes, size on disk, complete or not.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "common/number_format.h"
#include "common/printable.h"
#include "src/cli/commands.h"
#include "src/console/output.h"
#include "src/workflow/recorded_model.h"
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

int run_show(const ShowArgs& a) {
  const trace::TraceReader reader = trace::TraceReader::open(a.path);
  const trace::TraceSummary s = trace::summarize(reader);
  if (a.json) {
    fmt::print("{}\n", trace::to_json(s));
    return 0;
  }
  const auto model = nlohmann::json::parse(s.model_json, nullptr, false);
  const auto config = nlohmann::json::parse(s.config_json, nullptr, false);
  // the recorded tokenizer when its file is the one recorded, or --tokenizer; a note says which
  const DecodingTokenizer decoding = decoding_tokenizer(reader, a.tokenizer);
  if (!decoding.note.empty()) print_note("note: {}\n", decoding.note);
  const Tokenizer* tok = decoding.tokenizer.get();
  fmt::print("trace     {} ({}, format v{}, {})\n", printable(s.path), human_bytes(s.file_bytes),
             s.format_version, printable(s.producer));
  fmt::print("status    {}\n",
             s.complete ? "complete"
                        : fmt::format("INCOMPLETE (complete=0, {})", printable(s.stop_reason)));
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
      "continuations, recorded sites, size, completeness.");
  cmd->add_option("trace", args->path, "trace file (.h5)")->required();
  cmd->add_flag("--json", args->json, "print the summary as JSON");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "decode prompts and continuations with this tokenizer (default: the one the "
                  "trace records, when its file is still the one recorded; else ids)");
  return [args] { return run_show(*args); };
}

}  // namespace ds
