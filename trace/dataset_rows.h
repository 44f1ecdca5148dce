// Row reads of one open trace dataset at the speed of the disk: the chunks a read covers are
// fetched raw with H5Dread_chunk and inflated (libdeflate) and unshuffled in parallel, skipping
// HDF5's filter pipeline and its copies. Datasets the fast path does not handle (contiguous or
// compact layout, filters other than shuffle and deflate, a chunk whose filter mask says a filter
// was skipped, a chunk not on disk, a stored type other than the one asked for) are read with
// H5Dread, which gives the same values.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "trace/h5.h"

namespace ds::trace {

// The file descriptor under an open file (any of its objects) from which unfiltered chunks can
// be read with pread at the addresses of the chunk index: a file opened read-only (nothing waits
// in HDF5's caches) with the default sec2 driver and no user block (HDF5 addresses start at byte
// 0); else -1.
int plain_file_descriptor(hid_t obj);

class DatasetRows {
 public:
  // Takes ownership of an open dataset; `elem` is how its elements are to be read (as
  // h5::read_rows takes them). `plain_fd` is plain_file_descriptor() of its file when the caller
  // already knows it (it costs two property-list copies per dataset otherwise).
  DatasetRows(h5::Id dataset, h5::Elem elem, std::optional<int> plain_fd = std::nullopt);

  hid_t id() const { return dset_.get(); }
  h5::Elem elem() const { return elem_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  // Whether reads take the direct-chunk path (false: every read goes through H5Dread).
  bool fast() const { return fast_; }

  // Rows [begin, begin + count) into `out` (count x width elements of `elem`). Throws ds::Error
  // naming the dataset's rows when a chunk cannot be read or inflated (a damaged chunk).
  void read(int64_t begin, int64_t count, void* out);

 private:
  void read_chunked(int64_t begin, int64_t count, uint8_t* out);
  void fallback(int64_t begin, int64_t count, void* out);

  h5::Id dset_;
  h5::Elem elem_;
  std::vector<int64_t> shape_;
  int64_t width_ = 0;          // elements per row (1 for rank 1)
  size_t elem_bytes_ = 0;
  bool fast_ = false;
  bool shuffle_ = false, deflate_ = false;
  int64_t chunk_rows_ = 0;
  int raw_fd_ = -1;  // unfiltered chunks are pread from this descriptor (HDF5's own) when >= 0
  // The last chunk inflated, kept for the next read that starts inside it (a read block that
  // does not end on a chunk boundary).
  int64_t cached_chunk_ = -1;
  std::vector<uint8_t> cached_;
};

}  // namespace ds::trace
