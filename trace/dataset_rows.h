// Row reads of one open trace dataset at the speed of the disk: the rows of unfiltered chunks are
// read with pread at the chunk index's addresses (PlainRows); filtered chunks are fetched raw with
// H5Dread_chunk and inflated (libdeflate) and unshuffled in parallel, skipping HDF5's filter
// pipeline and its copies. Datasets the fast path does not handle (contiguous or
// compact layout, filters other than shuffle and deflate, a chunk whose filter mask says a filter
// was skipped, a chunk not on disk, a stored type other than the one asked for) are read with
// H5Dread, which gives the same values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/h5.h"

namespace ds::trace {

// The file under an open object from which unfiltered chunks can be read with pread at the
// addresses of the chunk index: a file opened read-only (nothing waits in HDF5's caches) with the
// default sec2 driver or the locating driver (trace/locating_driver.h) and no user block (HDF5
// addresses start at byte 0). fd is -1 otherwise.
struct PlainFile {
  int fd = -1;            // HDF5's own descriptor of the file
  uint64_t size = 0;      // bytes on disk when found: chunk addresses past it are damage
  bool locating = false;  // opened with the locating driver: chunks are located in one step
};
PlainFile plain_file(hid_t obj);

// Rows of an unfiltered dataset whose chunks were located once through HDF5's chunk index
// (DatasetRows::plain), read afterwards with pread and no HDF5 call, so from any thread (the
// library is not thread-safe): the diff measures one sequence's hidden rows on a worker while
// the reader's thread opens the next sequence's datasets. It reads the file through HDF5's
// descriptor: the file must stay open while it is used.
class PlainRows {
 public:
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }
  // Rows [begin, begin + count), within [begin(), end()), into `out` as stored (count x width
  // elements). Throws ds::Error naming the rows and file offset (not the dataset: no HDF5 call
  // here) when the file cannot be read there, e.g. a file cut shorter than HDF5 expects.
  void read(int64_t begin, int64_t count, void* out) const;

 private:
  friend class DatasetRows;
  int fd_ = -1;
  size_t row_bytes_ = 0;
  int64_t chunk_rows_ = 0, begin_ = 0, end_ = 0;
  std::vector<uint64_t> addr_;  // file offset of each chunk covering [begin_, end_), in order
};

class DatasetRows {
 public:
  // Takes ownership of an open dataset; `elem` is how its elements are to be read (as
  // h5::read_rows takes them). `file` is plain_file() of its file when the caller already knows
  // it (it costs two property-list copies per dataset otherwise).
  DatasetRows(h5::Id dataset, NumberFormat elem, std::optional<PlainFile> file = std::nullopt);

  hid_t id() const { return dset_.get(); }
  NumberFormat elem() const { return elem_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  // Whether reads take the direct-chunk path (false: every read goes through H5Dread).
  bool fast() const { return fast_; }

  // Rows [begin, begin + count) into `out` (count x width elements of `elem`). Throws ds::Error
  // naming the dataset's rows when a chunk cannot be read or inflated (a damaged chunk).
  void read(int64_t begin, int64_t count, void* out);

  // Rows [begin, begin + count) located for PlainRows::read: a dataset of the fast path with no
  // filter, in a PlainFile, whose chunks over those rows are all on disk and unfiltered; nullopt
  // otherwise (read() still reads it, through HDF5). Throws ds::Error naming the dataset when a
  // chunk lies past the end of the file (cut short: HDF5 would read zeros there).
  std::optional<PlainRows> plain(int64_t begin, int64_t count) const;

 private:
  // Finds the file offset of chunks [first, last) not located yet; false when one is not a plain
  // chunk on disk (not written, filtered, or of another size). Throws as plain() does.
  bool locate(int64_t first, int64_t last) const;
  // Rows [begin, begin + count) from the chunks' stored bytes, in the steps below; through
  // fallback when fetch_chunks finds a chunk it cannot take.
  void read_chunked(int64_t begin, int64_t count, uint8_t* out);
  struct ChunkPiece;  // one chunk of a read: its stored bytes and where its rows go
  // Reads the stored bytes of the chunks over rows [begin, end) but the cached one, unfiltered
  // whole chunks straight into `out`; false when a chunk is not on disk or skipped a filter.
  // Throws ds::Error when a chunk's bytes cannot be read or cannot hold the chunk.
  bool fetch_chunks(int64_t begin, int64_t end, uint8_t* out,
                    std::vector<ChunkPiece>& pieces) const;
  // Inflates and unshuffles the fetched chunks on the process's work pool (no HDF5 call there);
  // throws ds::Error naming the first damaged chunk.
  void decode_chunks(std::vector<ChunkPiece>& pieces) const;
  void decode_chunk(ChunkPiece& p) const;  // on a pool thread; throws BadChunk
  // Copies the rows of the chunks only partly inside [begin, end) (and of the cached chunk) into
  // `out`, and keeps the last partial chunk for the next read.
  void copy_partial_chunks(int64_t begin, int64_t end, uint8_t* out,
                           std::vector<ChunkPiece>& pieces);
  size_t row_bytes() const { return static_cast<size_t>(width_) * elem_bytes_; }
  size_t chunk_bytes() const { return static_cast<size_t>(chunk_rows_) * row_bytes(); }
  void fallback(int64_t begin, int64_t count, void* out);

  h5::Id dset_;
  NumberFormat elem_;
  std::vector<int64_t> shape_;
  int64_t width_ = 0;  // elements per row (1 for rank 1)
  size_t elem_bytes_ = 0;
  bool fast_ = false;
  bool shuffle_ = false, deflate_ = false;
  int64_t chunk_rows_ = 0;
  PlainFile file_;  // unfiltered chunks are pread from file_.fd when >= 0
  // Each chunk's file offset once located (0: not yet), so that reading a dataset block by block
  // asks HDF5's chunk index once per chunk, not once per read (a tenth of the readers' thread on
  // full logits).
  mutable std::vector<uint64_t> chunk_addr_;
  // The last chunk inflated, kept for the next read that starts inside it (a read block that
  // does not end on a chunk boundary).
  int64_t cached_chunk_ = -1;
  std::vector<uint8_t> cached_;
};

}  // namespace ds::trace
