// Hand-built traces for diff tests: known arrays written with the real trace writer, one prefill
// step (the prompt) and then one step per generated token, as `driftscope run` writes them, and
// optionally kernel records for the /kernels table.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "trace/kernel_records.h"
#include "trace/writer.h"

namespace ds::test {

struct SeqSpec {
  std::vector<int32_t> prompt;
  std::vector<int32_t> generated;  // tokens after the prompt
  // Row r (r = 0 .. prompt+generated-2) is the input position r; its logits give tokens[r+1].
  std::vector<std::vector<double>> logits;                        // [rows][V]; empty: no logits
  std::map<std::string, std::vector<std::vector<float>>> hidden;  // site -> [rows][width]
  std::vector<std::string> site_order;                            // forward order of `hidden`
  std::string stop_reason = "max_new";
  int rows() const { return static_cast<int>(prompt.size() + generated.size()) - 1; }
};

struct TraceSpec {
  std::string model_json =
      R"({"architecture":"llama","config":{"n_layers":2,"vocab_size":8},"files":[{"name":"m.bin","bytes":1,"sha256":"aaaa"}],"tokenizer":null})";
  std::string config_json = R"({"device":"cpu","dtype":"fp32"})";
  int topk = 4;
  bool full_logits = false;
  Storage hidden_dtype = Storage::native;  // f32
  bool complete = true;
  int keep_rows = -1;  // >= 0: stop writing each sequence after this many rows (a truncated run)
  std::vector<SeqSpec> seqs;
  // Kernel records, queued with append_kernels after the steps (empty: no /kernels table).
  std::vector<trace::KernelRecord> kernels;
};

void write_trace(const std::filesystem::path& path, const TraceSpec& spec);

}  // namespace ds::test
