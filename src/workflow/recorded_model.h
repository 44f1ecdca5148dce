// The model and tokenizer a trace records (its model_json; relative paths resolved against the
// working folder its env_json records), found again and verified against their recorded sha256
// before they are reused (docs/cli.md, "Files, safety and limits"): zoom's replays, attribute and
// run --force-tokens load the recorded model; show, diff and stats decode with the recorded
// tokenizer. A file that changed since is refused, or (a tokenizer, for decoding) used only when
// given explicitly with --tokenizer, and said.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/model/model.h"
#include "src/tokenizer/tokenizer.h"
#include "trace/reader.h"

namespace ds {

struct RecordedFile {
  std::filesystem::path path;  // as the recorded path names it now
  std::string sha256;          // as recorded
};

struct RecordedModel {
  std::string trace;                      // the trace's path, for messages
  std::filesystem::path model;            // the recorded model path, resolved; empty: none recorded
  std::vector<RecordedFile> files;        // its weight files with their digests
  std::optional<RecordedFile> gguf;       // the llama.cpp recorder's model file
  std::optional<RecordedFile> tokenizer;  // none when the trace records no tokenizer
  int vocab_size = 0;                     // the recorded model config's; 0 when unknown
};

// A path a trace records, resolved: an absolute one as it is; a relative one against the working
// folder `env_json` records (a trace's "cwd"), or the current folder for traces that record none.
std::filesystem::path resolve_recorded_path(const std::string& path, const std::string& env_json);

// What `t` records about its model and tokenizer, with paths resolved; nothing is opened.
RecordedModel recorded_model(const trace::TraceReader& t);

// Throws ds::Error with `hint` when the trace records no model files, or when a recorded file is
// missing or its sha256 differs from the file the recorded path names now (naming the file and
// both digests). Hashes every weight file (the cost of reading the model once).
void verify_recorded_model(const RecordedModel& m, const std::string& hint);

// Throws ds::Error with `hint` when `loaded` is not the model `m` records: the sha256 of its
// weight files differ from the recorded ones (a trace recording no digests is taken as it is).
void check_loaded_is_recorded(const RecordedModel& m, const Model& loaded, const std::string& hint);

// Why the recorded tokenizer cannot be reused ("'P' is not there", "'P' has changed since the
// trace was written (sha256 ... recorded, ... now)"), or "" when it is the file recorded.
std::string tokenizer_changed(const RecordedModel& m);

// The tokenizer that decodes a trace's tokens for show, diff and stats: `explicit_path`
// (--tokenizer) when given; else the one `t` records when its file is the one recorded. `note`
// says why tokens are shown as ids (no tokenizer recorded, or one that changed since), or that
// another tokenizer than the recorded one decodes; empty when it is the recorded one.
struct DecodingTokenizer {
  std::shared_ptr<Tokenizer> tokenizer;  // null: tokens are shown as ids
  std::string note;
};
DecodingTokenizer decoding_tokenizer(const trace::TraceReader& t,
                                     const std::string& explicit_path = {});

}  // namespace ds
