// The locating driver: sec2 passed through, with raw-data reads that can report instead of read
// and that fail past the end of the file.
#include "trace/locating_driver.h"

#include <cstdlib>
#include <vector>

namespace ds::trace {
namespace {

struct Wrapped {
  H5FD_t pub;     // filled in by HDF5 after open returns
  H5FD_t* inner;  // the sec2 file
};

H5FD_t* inner(const H5FD_t* f) {
  return reinterpret_cast<const Wrapped*>(f)->inner;
}

// What chunk_address() asks for, on the thread that asks (HDF5 is not thread-safe: its calls all
// come from one thread at a time).
struct Capture {
  bool on = false, hit = false;
  haddr_t addr = HADDR_UNDEF;
  size_t size = 0;
};
thread_local Capture capture;

H5FD_t* wrap_open(const char* name, unsigned flags, hid_t, haddr_t maxaddr) {
  const hid_t sec2 = H5Pcreate(H5P_FILE_ACCESS);
  if (sec2 < 0) return nullptr;
  H5FD_t* in = H5Pset_fapl_sec2(sec2) >= 0 ? H5FDopen(name, flags, sec2, maxaddr) : nullptr;
  H5Pclose(sec2);
  if (in == nullptr) return nullptr;
  auto* w = static_cast<Wrapped*>(std::calloc(1, sizeof(Wrapped)));
  if (w == nullptr) {
    H5FDclose(in);
    return nullptr;
  }
  w->inner = in;
  return &w->pub;
}

herr_t wrap_close(H5FD_t* f) {
  const herr_t rc = H5FDclose(inner(f));
  std::free(reinterpret_cast<Wrapped*>(f));
  return rc;
}

int wrap_cmp(const H5FD_t* a, const H5FD_t* b) {
  return H5FDcmp(inner(a), inner(b));
}

// (HDF5 also asks with no file, for the driver's own flags: sec2's)
herr_t wrap_query(const H5FD_t* f, unsigned long* flags) {
  if (f == nullptr) return H5FDdriver_query(H5FD_SEC2, flags);
  return H5FDquery(inner(f), flags) < 0 ? -1 : 0;
}

haddr_t wrap_get_eoa(const H5FD_t* f, H5FD_mem_t type) {
  return H5FDget_eoa(inner(f), type);
}

herr_t wrap_set_eoa(H5FD_t* f, H5FD_mem_t type, haddr_t addr) {
  return H5FDset_eoa(inner(f), type, addr);
}

haddr_t wrap_get_eof(const H5FD_t* f, H5FD_mem_t type) {
  return H5FDget_eof(inner(f), type);
}

herr_t wrap_get_handle(H5FD_t* f, hid_t fapl, void** handle) {
  return H5FDget_vfd_handle(inner(f), fapl, handle);
}

herr_t wrap_read(H5FD_t* f, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void* buf) {
  if (capture.on && type == H5FD_MEM_DRAW) {
    capture.hit = true;
    capture.addr = addr;
    capture.size = size;
    return 0;
  }
  // sec2 reads zeros past the end of the file. Metadata past it fails its checksum (or is
  // space a killed writer had reserved); raw data wholly past it would be silent zeros in a file
  // cut short (TraceReader::cut_short), so such a read fails. (HDF5 reads global heap
  // collections as raw data: one that the cut ends early keeps its zero-filled tail, mostly free
  // space; a raw chunk the cut ends early fails the direct read's size check, dataset_rows.h.)
  if (type == H5FD_MEM_DRAW) {
    const haddr_t eof = H5FDget_eof(inner(f), type);
    if (eof == HADDR_UNDEF || addr >= eof) return -1;
  }
  return H5FDread(inner(f), type, dxpl, addr, size, buf);
}

herr_t wrap_write(H5FD_t* f, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                  const void* buf) {
  return H5FDwrite(inner(f), type, dxpl, addr, size, buf);
}

herr_t wrap_flush(H5FD_t* f, hid_t dxpl, hbool_t closing) {
  return H5FDflush(inner(f), dxpl, closing);
}

herr_t wrap_truncate(H5FD_t* f, hid_t dxpl, hbool_t closing) {
  return H5FDtruncate(inner(f), dxpl, closing);
}

herr_t wrap_lock(H5FD_t* f, hbool_t rw) {
  return H5FDlock(inner(f), rw);
}
herr_t wrap_unlock(H5FD_t* f) {
  return H5FDunlock(inner(f));
}

hid_t driver_id() {
  static hid_t id = [] {
    static H5FD_class_t cls{};
    cls.name = "driftscope_locating_sec2";
    cls.maxaddr = (haddr_t{1} << 63) - 1;  // sec2's: the largest off_t
    cls.fc_degree = H5F_CLOSE_WEAK;
    cls.open = wrap_open;
    cls.close = wrap_close;
    cls.cmp = wrap_cmp;
    cls.query = wrap_query;
    cls.get_eoa = wrap_get_eoa;
    cls.set_eoa = wrap_set_eoa;
    cls.get_eof = wrap_get_eof;
    cls.get_handle = wrap_get_handle;
    cls.read = wrap_read;
    cls.write = wrap_write;
    cls.flush = wrap_flush;
    cls.truncate = wrap_truncate;
    cls.lock = wrap_lock;
    cls.unlock = wrap_unlock;
    const H5FD_mem_t map[H5FD_MEM_NTYPES] = H5FD_FLMAP_DICHOTOMY;
    for (int i = 0; i < H5FD_MEM_NTYPES; ++i) cls.fl_map[i] = map[i];
    return H5FDregister(&cls);
  }();
  return id;
}

}  // namespace

h5::Id locating_fapl() {
  h5::Id fapl(DS_H5_ID(H5Pcreate(H5P_FILE_ACCESS)));
  const hid_t id = driver_id();
  if (id >= 0) DS_H5(H5Pset_driver(fapl.get(), id, nullptr));  // else sec2, HDF5's default
  return fapl;
}

bool is_locating_driver(hid_t driver) {
  const hid_t id = driver_id();
  return id >= 0 && driver == id;
}

std::optional<uint64_t> chunk_address(hid_t dset, const hsize_t* offset, uint64_t bytes) {
  // Inside the dataset's extent only: HDF5 1.10.8 reads past a fixed-array chunk index for an
  // offset beyond it (AddressSanitizer, H5FA_get under H5Dget_chunk_storage_size).
  const h5::Id space(H5Dget_space(dset));
  hsize_t dims[H5S_MAX_RANK];
  const int rank = space ? H5Sget_simple_extent_dims(space.get(), dims, nullptr) : -1;
  if (rank <= 0) return std::nullopt;
  for (int i = 0; i < rank; ++i) {
    if (offset[i] >= dims[i]) return std::nullopt;
  }
  hsize_t stored = 0;  // a direct lookup, unlike H5Dget_chunk_info_by_coord
  if (H5Dget_chunk_storage_size(dset, offset, &stored) < 0 || stored != bytes) return std::nullopt;
  // H5Dread_chunk's buffer, big enough for the chunk: under another driver it is really read
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < bytes) scratch.resize(static_cast<size_t>(bytes));
  capture = Capture{true, false, HADDR_UNDEF, 0};
  uint32_t mask = 0;
  const herr_t rc = H5Dread_chunk(dset, H5P_DEFAULT, offset, &mask, scratch.data());
  const Capture got = capture;
  capture = Capture{};
  if (rc < 0 || !got.hit || mask != 0 || got.size != bytes || got.addr == HADDR_UNDEF) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(got.addr);
}

}  // namespace ds::trace
