// Direct chunk reads: pread of unfiltered rows at the chunk index's addresses; H5Dread_chunk for
// the raw bytes of filtered chunks, libdeflate to inflate them and an unshuffle loop, over the
// chunks of one read in parallel; H5Dread where neither applies.
#include "trace/dataset_rows.h"

#include <fmt/format.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include "common/env.h"
#include "common/error.h"
#include "common/work_pool.h"
#include "trace/locating_driver.h"

namespace ds::trace {
namespace {

// Threads that inflate the chunks of one read: the machine's cores (at most 8), or
// DRIFTSCOPE_READ_THREADS.
int read_threads() {
  static const int n = [] {
    if (const auto v = env::read_threads()) return std::min(*v, 64);  // checked at the start
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  }();
  return n;
}

// The type a dataset must have on disk for its raw chunk bytes to be `e`'s in-memory layout.
bool stored_as(hid_t type, NumberFormat e) {
  return H5Tequal(type, h5::file_type(e)) > 0;
}

// HDF5's shuffle filter, undone: byte k of element i is at src[k * n + i].
void unshuffle(const uint8_t* src, uint8_t* dst, size_t bytes, size_t elem) {
  const size_t n = bytes / elem;
  if (elem == 4) {
    const uint8_t *b0 = src, *b1 = src + n, *b2 = src + 2 * n, *b3 = src + 3 * n;
    for (size_t i = 0; i < n; ++i) {
      dst[4 * i] = b0[i];
      dst[4 * i + 1] = b1[i];
      dst[4 * i + 2] = b2[i];
      dst[4 * i + 3] = b3[i];
    }
  } else {
    for (size_t k = 0; k < elem; ++k) {
      const uint8_t* b = src + k * n;
      for (size_t i = 0; i < n; ++i) dst[elem * i + k] = b[i];
    }
  }
  std::memcpy(dst + n * elem, src + n * elem, bytes - n * elem);  // a tail shorter than an element
}

// A chunk that does not inflate or holds the wrong number of bytes, found on a pool thread (where
// no HDF5 call may be made to name the dataset: the library is not thread-safe).
struct BadChunk {
  int64_t chunk;
  std::string what;
};

}  // namespace

PlainFile plain_file(hid_t obj) {
  h5::Id file(H5Iget_file_id(obj));
  if (!file) return {};
  unsigned intent = 0;
  if (H5Fget_intent(file.get(), &intent) < 0 || (intent & H5F_ACC_RDWR) != 0) return {};
  h5::Id fapl(H5Fget_access_plist(file.get()));
  h5::Id fcpl(H5Fget_create_plist(file.get()));
  hsize_t userblock = 1;
  const hid_t driver = fapl ? H5Pget_driver(fapl.get()) : -1;
  const bool locating = is_locating_driver(driver);
  if (!fcpl || (driver != H5FD_SEC2 && !locating) || H5Pget_userblock(fcpl.get(), &userblock) < 0 ||
      userblock != 0) {
    return {};
  }
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file.get(), fapl.get(), &handle) < 0 || handle == nullptr) return {};
  // The bytes on disk (H5Fget_filesize says the larger of them and HDF5's end of allocation, which
  // a file cut short still claims)
  struct stat st {};
  const int fd = *static_cast<int*>(handle);
  if (::fstat(fd, &st) != 0) return {};
  return {fd, static_cast<uint64_t>(st.st_size), locating};
}

namespace {

// Reads exactly `bytes` at `offset`: 0, or the errno of the failed read, or -1 when the file
// ends first.
int pread_all(int fd, uint8_t* dst, size_t bytes, uint64_t offset) {
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, dst, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return -1;
    dst += got;
    bytes -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return 0;
}

struct Decompressor {
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  ~Decompressor() { libdeflate_free_decompressor(d); }
};

std::string dataset_name(hid_t dset) {
  const ssize_t n = H5Iget_name(dset, nullptr, 0);
  if (n <= 0) return "?";
  std::string s(static_cast<size_t>(n), '\0');
  H5Iget_name(dset, s.data(), s.size() + 1);
  return s;
}

}  // namespace

void PlainRows::read(int64_t begin, int64_t count, void* out) const {
  if (count <= 0) return;
  if (begin < begin_ || begin + count > end_) {
    throw Error(fmt::format("rows {}..{} are outside the rows {}..{} located", begin, begin + count,
                            begin_, end_));
  }
  auto* dst = static_cast<uint8_t*>(out);
  const int64_t first = begin_ / chunk_rows_;
  for (int64_t r = begin, end = begin + count; r < end;) {
    const int64_t c = r / chunk_rows_, c0 = c * chunk_rows_;
    const int64_t n = std::min(end, c0 + chunk_rows_) - r;
    const uint64_t at =
        addr_[static_cast<size_t>(c - first)] + static_cast<uint64_t>(r - c0) * row_bytes_;
    const size_t bytes = static_cast<size_t>(n) * row_bytes_;
    if (const int e = pread_all(fd_, dst, bytes, at); e != 0) {
      throw Error(fmt::format("rows {}..{} cannot be read: {} bytes at offset {} ({})", r, r + n,
                              bytes, at,
                              e < 0 ? "the file ends first" : std::generic_category().message(e)));
    }
    dst += bytes;
    r += n;
  }
}

bool DatasetRows::locate(int64_t first, int64_t last) const {
  chunk_addr_.resize(std::max(chunk_addr_.size(), static_cast<size_t>(last)), 0);  // never shrunk
  const uint64_t chunk_bytes = static_cast<uint64_t>(chunk_rows_) * width_ * elem_bytes_;
  for (int64_t c = first; c < last; ++c) {
    uint64_t& slot = chunk_addr_[static_cast<size_t>(c)];
    if (slot != 0) continue;  // located before (0 is the superblock's address, never a chunk's)
    hsize_t offset[2] = {static_cast<hsize_t>(c * chunk_rows_), 0};
    hsize_t stored = chunk_bytes;
    haddr_t addr = HADDR_UNDEF;
    unsigned mask = 0;
    // In one step where the driver allows; else through the chunk index, which HDF5 1.10 walks
    // from the first chunk (trace/locating_driver.h). Not on disk (fill values), a filter mask,
    // or a size not the chunk's: read() decides.
    if (const auto a =
            file_.locating ? chunk_address(dset_.get(), offset, chunk_bytes) : std::nullopt) {
      addr = static_cast<haddr_t>(*a);
    } else if (H5Dget_chunk_info_by_coord(dset_.get(), offset, &mask, &addr, &stored) < 0 ||
               addr == HADDR_UNDEF || mask != 0 || stored != chunk_bytes) {
      return false;
    }
    if (addr == 0) return false;
    // Past the end of the file (cut short): HDF5 itself would read zeros there.
    if (addr > file_.size || stored > file_.size - addr) {
      throw Error(fmt::format("chunk at row {} of {} is damaged ({} bytes at offset {}, past the "
                              "end of the file's {} bytes)",
                              c * chunk_rows_, dataset_name(dset_.get()), stored, addr, file_.size),
                  "the file is damaged; the rest of the trace can still be read");
    }
    slot = static_cast<uint64_t>(addr);
  }
  return true;
}

std::optional<PlainRows> DatasetRows::plain(int64_t begin, int64_t count) const {
  if (!fast_ || shuffle_ || deflate_ || file_.fd < 0 || begin < 0 || count < 0 ||
      begin + count > shape_[0]) {
    return std::nullopt;
  }
  const int64_t first = begin / chunk_rows_;
  const int64_t last = count > 0 ? (begin + count - 1) / chunk_rows_ + 1 : first;
  if (!locate(first, last)) return std::nullopt;
  PlainRows p;
  p.fd_ = file_.fd;
  p.row_bytes_ = row_bytes();
  p.chunk_rows_ = chunk_rows_;
  p.begin_ = begin;
  p.end_ = begin + count;
  p.addr_.assign(chunk_addr_.begin() + first, chunk_addr_.begin() + last);
  return p;
}

DatasetRows::DatasetRows(h5::Id dataset, NumberFormat elem, std::optional<PlainFile> file)
    : dset_(std::move(dataset)), elem_(elem), elem_bytes_(traits(elem).bytes) {
  shape_ = h5::dataset_shape(dset_.get());
  if (shape_.empty() || shape_.size() > 2) {
    throw Error(fmt::format("dataset {} has rank {}: expected 1 or 2", dataset_name(dset_.get()),
                            shape_.size()));
  }
  width_ = shape_.size() == 2 ? shape_[1] : 1;
  h5::Id type(DS_H5_ID(H5Dget_type(dset_.get())));
  h5::Id dcpl(DS_H5_ID(H5Dget_create_plist(dset_.get())));
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED || !stored_as(type.get(), elem_)) return;
  hsize_t chunk[2] = {0, 0};
  if (H5Pget_chunk(dcpl.get(), 2, chunk) != static_cast<int>(shape_.size())) return;
  if (shape_.size() == 2 && static_cast<int64_t>(chunk[1]) != width_) return;  // rows split
  const int nfilters = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0, cd[8];
    size_t ncd = 8;
    const H5Z_filter_t f =
        H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &ncd, cd, 0, nullptr, nullptr);
    // The pipeline handled: [shuffle] then [deflate], each optional, in that order.
    if (f == H5Z_FILTER_SHUFFLE && i == 0) {
      shuffle_ = true;
    } else if (f == H5Z_FILTER_DEFLATE && i == nfilters - 1) {
      deflate_ = true;
    } else {
      return;
    }
  }
  chunk_rows_ = static_cast<int64_t>(chunk[0]);
  fast_ = chunk_rows_ > 0 && width_ > 0;
  if (fast_ && !shuffle_ && !deflate_) file_ = file ? *file : plain_file(dset_.get());
}

void DatasetRows::read(int64_t begin, int64_t count, void* out) {
  if (count <= 0) return;
  if (begin < 0 || begin + count > shape_[0]) {
    throw Error(fmt::format("rows {}..{} of {} are outside its {} rows", begin, begin + count,
                            dataset_name(dset_.get()), shape_[0]));
  }
  if (!fast_) return fallback(begin, count, out);
  if (const auto p = plain(begin, count)) {
    try {
      return p->read(begin, count, out);
    } catch (const Error& e) {  // the file shrank since it was opened
      throw Error(fmt::format("{} of {}", e.what(), dataset_name(dset_.get())),
                  "the file is damaged or was cut while it was read");
    }
  }
  read_chunked(begin, count, static_cast<uint8_t*>(out));
}

void DatasetRows::fallback(int64_t begin, int64_t count, void* out) {
  try {
    h5::read_rows(dset_.get(), elem_, begin, count, shape_.size() == 2 ? width_ : 0, out);
  } catch (const Error& e) {
    throw Error(fmt::format("rows {}..{} of {} cannot be read ({})", begin, begin + count,
                            dataset_name(dset_.get()), e.what()));
  }
}

namespace {

// The size of the file under `dset` where it is open read-only; the largest value otherwise (a
// file open for writing has chunks not yet on disk).
hsize_t read_only_file_size(hid_t dset) {
  hsize_t file_size = std::numeric_limits<hsize_t>::max();
  h5::Id file(DS_H5_ID(H5Iget_file_id(dset)));
  unsigned intent = 0;
  if (H5Fget_intent(file.get(), &intent) >= 0 && (intent & H5F_ACC_RDWR) == 0) {
    DS_H5(H5Fget_filesize(file.get(), &file_size));
  }
  return file_size;
}

}  // namespace

// One chunk of a read_chunked: its stored bytes (none: read in place, nothing to decode) and
// where its rows go.
struct DatasetRows::ChunkPiece {
  int64_t chunk;
  std::vector<uint8_t> raw;  // as stored
  uint8_t* dst;              // where the whole chunk goes (inside `out`), or null: into `tmp`
  std::vector<uint8_t> tmp;
};

void DatasetRows::read_chunked(int64_t begin, int64_t count, uint8_t* out) {
  const int64_t end = begin + count;
  std::vector<ChunkPiece> pieces;
  if (!fetch_chunks(begin, end, out, pieces)) return fallback(begin, count, out);
  decode_chunks(pieces);
  copy_partial_chunks(begin, end, out, pieces);
}

bool DatasetRows::fetch_chunks(int64_t begin, int64_t end, uint8_t* out,
                               std::vector<ChunkPiece>& pieces) const {
  const size_t row_bytes = this->row_bytes(), chunk_bytes = this->chunk_bytes();
  // What a chunk's stored bytes can hold, checked before buffers are sized from the chunk index
  // and the layout (a damaged file may claim a chunk of gigabytes in a file of kilobytes): the
  // bytes lie inside the file, and inflate to at most 1032 times their size (deflate's limit, a
  // 258-byte match in 2 bits) or, unfiltered, are the chunk. The file's size bounds them only in
  // a file opened read-only: one open for writing here has chunks not yet on disk.
  const hsize_t file_size = read_only_file_size(dset_.get());
  constexpr uint64_t kMaxInflateRatio = 1032;
  for (int64_t c = begin / chunk_rows_; c * chunk_rows_ < end; ++c) {
    const int64_t c0 = c * chunk_rows_, c1 = c0 + chunk_rows_;
    if (c == cached_chunk_) continue;  // copied from the cache (copy_partial_chunks)
    hsize_t offset[2] = {static_cast<hsize_t>(c0), 0};
    hsize_t stored = 0;
    haddr_t addr = HADDR_UNDEF;
    unsigned info_mask = 0;
    if (H5Dget_chunk_info_by_coord(dset_.get(), offset, &info_mask, &addr, &stored) < 0 ||
        stored == 0 || addr == HADDR_UNDEF) {
      return false;  // not on disk (fill values): HDF5 knows what to give
    }
    if (addr > file_size || stored > file_size - addr ||
        chunk_bytes > (deflate_ ? kMaxInflateRatio : 1) * stored) {
      throw Error(fmt::format("chunk at row {} of {} is damaged ({} bytes at offset {} cannot "
                              "hold its {} bytes)",
                              c0, dataset_name(dset_.get()), stored, addr, chunk_bytes),
                  "the file is damaged; the rest of the trace can still be read");
    }
    ChunkPiece p{c, {}, nullptr, {}};
    if (c0 >= begin && c1 <= end) {
      p.dst = out + static_cast<size_t>(c0 - begin) * row_bytes;
    } else {
      p.tmp.resize(chunk_bytes);
    }
    // An unfiltered chunk is read straight to where its rows go; a filtered one is read raw and
    // inflated there (decode_chunks).
    const bool unfiltered = !deflate_ && !shuffle_ && stored == chunk_bytes;
    uint8_t* raw = unfiltered ? (p.dst ? p.dst : p.tmp.data()) : nullptr;
    if (!unfiltered) {
      p.raw.resize(static_cast<size_t>(stored));
      raw = p.raw.data();
    }
    uint32_t mask = 0;
    if (H5Dread_chunk(dset_.get(), H5P_DEFAULT, offset, &mask, raw) < 0) {
      throw Error(
          fmt::format("chunk at row {} of {} cannot be read", c0, dataset_name(dset_.get())));
    }
    // A filter was skipped for this chunk. (HDF5 1.10.8's H5Dread_chunk reports mask 0 for a
    // chunk still in its cache: the chunk index's mask is asked too.)
    if ((mask | info_mask) != 0) return false;
    pieces.push_back(std::move(p));
  }
  return true;
}

void DatasetRows::decode_chunks(std::vector<ChunkPiece>& pieces) const {
  const bool inflate =
      std::any_of(pieces.begin(), pieces.end(), [](const ChunkPiece& p) { return !p.raw.empty(); });
  try {
    // (chunks read in place leave nothing to do: no worker is woken for them)
    const size_t threads =
        inflate ? std::min(pieces.size(), static_cast<size_t>(read_threads())) : 1;
    WorkPool::instance().run(pieces.size(), pieces.size(), threads, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) decode_chunk(pieces[i]);
    });
  } catch (const BadChunk& bad) {
    throw Error(fmt::format("chunk at row {} of {} is damaged ({})", bad.chunk * chunk_rows_,
                            dataset_name(dset_.get()), bad.what));
  }
}

void DatasetRows::decode_chunk(ChunkPiece& p) const {
  if (p.raw.empty()) return;  // read in place (fetch_chunks)
  const size_t chunk_bytes = this->chunk_bytes();
  uint8_t* target = p.dst ? p.dst : p.tmp.data();
  thread_local std::vector<uint8_t> inflated;  // a shuffled chunk, before unshuffle
  const uint8_t* data = p.raw.data();
  size_t size = p.raw.size();
  if (deflate_) {
    thread_local Decompressor dec;
    uint8_t* into = target;
    if (shuffle_) {
      inflated.resize(chunk_bytes);
      into = inflated.data();
    }
    size_t got = 0;
    const auto rc = libdeflate_zlib_decompress(dec.d, data, size, into, chunk_bytes, &got);
    if (rc != LIBDEFLATE_SUCCESS || got != chunk_bytes) {
      throw BadChunk{p.chunk, fmt::format("it does not inflate to {} bytes", chunk_bytes)};
    }
    if (!shuffle_) return;
    data = inflated.data();
    size = chunk_bytes;
  }
  if (size != chunk_bytes) {
    throw BadChunk{p.chunk, fmt::format("it holds {} bytes, not {}", size, chunk_bytes)};
  }
  if (shuffle_) {
    unshuffle(data, target, chunk_bytes, elem_bytes_);
  } else {
    std::memcpy(target, data, chunk_bytes);
  }
}

void DatasetRows::copy_partial_chunks(int64_t begin, int64_t end, uint8_t* out,
                                      std::vector<ChunkPiece>& pieces) {
  const size_t row_bytes = this->row_bytes();
  auto copy_rows = [&](int64_t chunk, const uint8_t* src) {
    const int64_t c0 = chunk * chunk_rows_;
    const int64_t r0 = std::max(c0, begin), r1 = std::min(c0 + chunk_rows_, end);
    std::memcpy(out + static_cast<size_t>(r0 - begin) * row_bytes,
                src + static_cast<size_t>(r0 - c0) * row_bytes,
                static_cast<size_t>(r1 - r0) * row_bytes);
  };
  const int64_t first = begin / chunk_rows_, last = (end - 1) / chunk_rows_;
  if (cached_chunk_ >= first && cached_chunk_ <= last) copy_rows(cached_chunk_, cached_.data());
  for (auto& p : pieces) {
    if (p.dst) continue;
    copy_rows(p.chunk, p.tmp.data());
    if (p.chunk == last) {
      cached_chunk_ = p.chunk;
      cached_ = std::move(p.tmp);
    }
  }
}

}  // namespace ds::trace
