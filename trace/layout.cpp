// A sequence's datasets in the file: the chunk policy, the creation of a sequence's group and
// datasets (in the trace writer's plain-mode windows) and their opening.
#include "trace/layout.h"

#include <algorithm>
#include <string>

#include "trace/schema.h"

namespace ds::trace {

// Rows per chunk: the largest power of two whose chunk stays within 256 KiB (large enough to
// compress, small for decode), at most 1024. A power of two divides the writer's 64-row batches
// (each batch fills whole chunks, none is rewritten) and the diff's power-of-two read blocks (a
// block covers whole chunks, each inflated once). Rank-1 datasets (width 0: tokens, lse): 4096.
// Unfiltered (--compression none): at most 16 rows. HDF5 stores every chunk whole, filled or
// not; deflate shrinks the unfilled rows of a sequence's last chunk to almost nothing, but without
// it they take their full size, so small chunks keep an uncompressed trace close to its raw
// values (the sizes measured for each chunk height are in bench/RESULTS.md, "`run --compression
// none` against the default").
int64_t chunk_rows_for(int64_t width, size_t elem, int deflate_level) {
  const int64_t cap = deflate_level == 0 ? 16 : width == 0 ? 4096 : 1024;
  if (width == 0) return cap;
  const int64_t target = 256 * 1024;
  const int64_t fit = target / std::max<int64_t>(1, width * static_cast<int64_t>(elem));
  int64_t rows = 1;
  while (rows * 2 <= std::min<int64_t>(fit, cap)) rows *= 2;
  return rows;
}

// The datasets that decide what a diff calls a flip and its logits metrics (tokens, top-K ids
// and logits, lse) carry HDF5's Fletcher-32 checksum (WriterOptions::checksum): a damaged chunk
// reads as damage, never as a flip. Hidden states and full logits do not: the checksum would take
// their chunks off the direct-read path (docs/trace-format.md, "Untrusted traces", measures it).
void create_sequence(hid_t file, int index, const std::vector<int32_t>& prompt, int deflate_level,
                     bool checksum) {
  h5::Id seq_group = h5::open_group(file, kSeqGroup);
  h5::Id g = h5::create_group(seq_group.get(), std::to_string(index));
  h5::Id tokens = h5::create_growing(g.get(), kTokensDataset, NumberFormat::i32, 0,
                                     chunk_rows_for(0, 4, deflate_level), deflate_level, checksum);
  h5::write_rows(tokens.get(), NumberFormat::i32, 0, static_cast<int64_t>(prompt.size()), 0,
                 prompt.data());
  h5::write_attr(g.get(), "prompt_len", static_cast<int64_t>(prompt.size()));
  h5::write_attr(g.get(), "gen_len", int64_t{0});
  h5::write_attr(g.get(), "stop_reason", std::string("running"));
}

// The datasets of sequence group `seq` that are not there yet: one per hidden site, then the
// logits datasets (top-K ids and logits and lse checksummed, as create_sequence says).
void create_datasets(hid_t file, const std::string& seq, const SequenceLayout& l) {
  const int z = l.deflate_level;
  for (const auto& [site, width] : l.sites) {
    const std::string p = seq + "/" + hidden_path(site);
    if (!h5::exists(file, p)) {
      h5::create_growing(file, p, l.hidden, width, chunk_rows_for(width, traits(l.hidden).bytes, z),
                         z);
    }
  }
  const auto p = [&](const char* dataset) { return seq + "/" + logits_path(dataset); };
  if (l.K == 0 || h5::exists(file, p(kTopkIds))) return;
  h5::create_growing(file, p(kTopkIds), NumberFormat::i32, l.K, chunk_rows_for(l.K, 4, z), z,
                     l.checksum);
  h5::create_growing(file, p(kTopkLogits), NumberFormat::f32, l.K, chunk_rows_for(l.K, 4, z), z,
                     l.checksum);
  h5::create_growing(file, p(kLse), NumberFormat::f32, 0, chunk_rows_for(0, 4, z), z, l.checksum);
  if (l.full_logits) {
    h5::create_growing(file, p(kFullLogits), NumberFormat::f32, l.V, chunk_rows_for(l.V, 4, z), z);
  }
}

h5::Id open_dataset(hid_t loc, const std::string& path) {
  return h5::Id(DS_H5_ID(H5Dopen2(loc, path.c_str(), H5P_DEFAULT)));
}

void SequenceDatasets::close() {
  group.reset();
  for (auto& [site, d] : hidden) d.reset();
  hidden.clear();
  for (h5::Id* d : {&tokens, &topk_ids, &topk_logits, &lse, &full}) d->reset();
}

void open_sequence_datasets(hid_t file, int index,
                            const std::vector<std::pair<std::string, int>>& sites, bool logits,
                            bool full_logits, SequenceDatasets& into) {
  into.group = h5::open_group(file, sequence_path(index));
  const hid_t g = into.group.get();
  into.tokens = open_dataset(g, kTokensDataset);
  for (const auto& [site, width] : sites) into.hidden[site] = open_dataset(g, hidden_path(site));
  if (logits) {
    into.topk_ids = open_dataset(g, logits_path(kTopkIds));
    into.topk_logits = open_dataset(g, logits_path(kTopkLogits));
    into.lse = open_dataset(g, logits_path(kLse));
    if (full_logits) into.full = open_dataset(g, logits_path(kFullLogits));
  }
}

}  // namespace ds::trace
