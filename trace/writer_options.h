// The trace writer's options (WriterOptions: what it stores and how, and the run's plan) and the
// values of --hidden-dtype and --compression: parsed from their names, and named back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/float_formats.h"

namespace ds::trace {

// Storage of hidden states in the trace (--hidden-dtype): native = f32, f16 or bf16.
Storage parse_hidden_dtype(const std::string& s);  // throws ds::Error naming the value
const char* hidden_dtype_name(Storage d);          // "f32", "f16", "bf16"

// Filters of every dataset of the trace (--compression): "none" -> 0 (no filter, the default),
// "deflate" -> 1, "deflate1" .. "deflate9" -> 1 .. 9 (HDF5's shuffle, then deflate at that
// level). Throws ds::Error naming the value.
int parse_compression(const std::string& s);
std::string compression_name(int deflate_level);  // "none", "deflate1" ... "deflate9"

struct WriterOptions {
  std::filesystem::path path;
  Storage hidden_dtype = Storage::native;  // f32
  int topk = 20;
  bool full_logits = false;
  bool force = false;     // overwrite an existing file
  int deflate_level = 0;  // 0: no filter (the default); 1..9: shuffle + deflate at that level
                          // (parse_compression; "deflate" = h5::kDefaultDeflateLevel)
  // Tokens, top-K ids and logits and lse with HDF5's Fletcher-32 checksum (docs/trace-format.md,
  // "Untrusted traces"); off only to measure what the checksum costs (bench_diff_throughput).
  bool checksum = true;
  size_t queue_steps = 64;  // steps queued before append() blocks
  // The run's plan, when known up front (traced runs): every prompt, the hidden sites with
  // their widths, the vocabulary. The writer then creates the groups and datasets of up to 16
  // sequences at a time before they start, outside SWMR mode, instead of opening a plain-mode
  // window per batch (swmr_file.h); groups of planned sequences that never began are removed
  // at the end.
  std::vector<std::vector<int32_t>> planned_prompts;
  std::vector<std::pair<std::string, int>> planned_sites;
  int planned_vocab = 0;           // 0: no plan
  size_t queue_bytes = 64u << 20;  // bytes of queued steps before append() blocks (one step
                                   // larger than this still passes, alone)
};

}  // namespace ds::trace
