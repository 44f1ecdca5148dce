// A sequence's datasets in the file: their chunking, creation and opening. The one place the
// trace writer creates and opens a sequence's group and datasets (at the paths of schema.h);
// the reader opens a dataset by its path with open_dataset too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/float_formats.h"
#include "trace/h5.h"

namespace ds::trace {

// Rows per chunk of a dataset `width` elements of `elem` bytes wide (0: rank 1), under the
// filters of `deflate_level` (h5::create_growing).
int64_t chunk_rows_for(int64_t width, size_t elem, int deflate_level);

// The group of sequence `index` under /seq, its attributes and its tokens dataset holding the
// prompt.
void create_sequence(hid_t file, int index, const std::vector<int32_t>& prompt, int deflate_level,
                     bool checksum);

// The shapes of a sequence's hidden-state and logits datasets.
struct SequenceLayout {
  const std::vector<std::pair<std::string, int>>& sites;  // (site, width)
  NumberFormat hidden;
  int K = 0, V = 0;  // no logits datasets when K is 0
  bool full_logits = false;
  int deflate_level = 0;
  bool checksum = false;
};

// The datasets of sequence group `seq` ("seq/3") that are not there yet: one per hidden site,
// then the logits datasets.
void create_datasets(hid_t file, const std::string& seq, const SequenceLayout& l);

// The dataset at `path` under `loc`; throws ds::Error naming H5Dopen2 when it cannot be opened.
h5::Id open_dataset(hid_t loc, const std::string& path);

// A sequence's group and datasets, open while the writer appends to them.
struct SequenceDatasets {
  h5::Id group;
  std::map<std::string, h5::Id> hidden;  // site -> dataset
  h5::Id tokens, topk_ids, topk_logits, lse, full;
  void close();
};

// Opens the group of sequence `index` into `into`, then its tokens, the dataset of each of
// `sites` in that order, and with `logits` the top-K ids and logits, lse and, with
// `full_logits`, the full logits. Throws ds::Error as open_dataset; what was opened before stays
// in `into`.
void open_sequence_datasets(hid_t file, int index,
                            const std::vector<std::pair<std::string, int>>& sites, bool logits,
                            bool full_logits, SequenceDatasets& into);

}  // namespace ds::trace
