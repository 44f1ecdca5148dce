// HDF5 helpers: checked calls, error stacks, owned ids, attributes, growing chunked datasets,
// row I/O.
#include "trace/h5.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/error.h"

namespace ds::h5 {

std::string last_error() {
  std::string why;
  const auto first = [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
    if (n == 0 && e->desc != nullptr) *static_cast<std::string*>(out) = e->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first, &why);
  return why;
}

namespace {

// The process-wide HDF5 set-up, at static initialisation of every program that links these
// helpers (it must come before the library's first use). HDF5 closes every open file when the
// process exits (atexit); after a write failure that close writes to a full disk again and can
// crash after main returned. The trace writer closes its files itself, so the library's exit
// handler is not needed. HDF5's free lists (1-16 MiB per kind by default) are kept to 1 MiB in
// all.
const bool kProcessSetup = [] {
  H5dont_atexit();
  H5set_free_list_limits(1 << 18, 1 << 16, 1 << 18, 1 << 16, 1 << 18, 1 << 16);
  return true;
}();

// "HDF5 call H5Gopen2 failed: <why>": the function's name without its arguments, and no source
// path (the message reaches users; `run --verbose` shows HDF5's whole stack).
Error call_failed(const char* call) {
  const std::string fn(call, std::strcspn(call, "("));
  const std::string why = last_error();
  return Error(why.empty() ? fmt::format("HDF5 call {} failed", fn)
                           : fmt::format("HDF5 call {} failed: {}", fn, why));
}

}  // namespace

hid_t check_id(hid_t id, const char* call) {
  if (id < 0) throw call_failed(call);
  return id;
}

herr_t check_status(herr_t s, const char* call) {
  if (s < 0) throw call_failed(call);
  return s;
}

void silence_errors() {
  (void)kProcessSetup;
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

namespace {

// HDF5 calls H5Eset_auto's function on every failing API call; this one keeps the error stack
// (per thread: the library is thread-safe) so a failure can show it under --verbose instead of
// HDF5 printing it to the user's terminal.
thread_local std::string tl_error_stack;

herr_t keep_error_stack(hid_t stack, void*) {
  char* buf = nullptr;
  size_t len = 0;
  if (FILE* f = open_memstream(&buf, &len)) {
    H5Eprint2(stack, f);
    std::fclose(f);
    tl_error_stack.assign(buf, len);
    std::free(buf);
  }
  return 0;
}

}  // namespace

void keep_errors_in_this_thread() {
  H5Eset_auto2(H5E_DEFAULT, keep_error_stack, nullptr);
  tl_error_stack.clear();
}

const std::string& kept_error_stack() {
  return tl_error_stack;
}

OsError kept_os_error() {
  OsError e;
  const std::string& stack = tl_error_stack;
  const std::string key = "error message = '";
  const size_t at = stack.rfind(key);
  const size_t end = at == std::string::npos ? at : stack.find('\'', at + key.size());
  if (end == std::string::npos) return e;
  e.message = stack.substr(at + key.size(), end - at - key.size());
  const size_t num = stack.rfind("errno = ", at);
  if (num != std::string::npos) e.errnum = std::atoi(stack.c_str() + num + 8);
  return e;
}

void Id::reset() {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE:
      H5Fclose(id_);
      break;
    case H5I_GROUP:
      H5Gclose(id_);
      break;
    case H5I_DATASET:
      H5Dclose(id_);
      break;
    case H5I_ATTR:
      H5Aclose(id_);
      break;
    case H5I_DATASPACE:
      H5Sclose(id_);
      break;
    case H5I_DATATYPE:
      H5Tclose(id_);
      break;
    case H5I_GENPROP_LST:
      H5Pclose(id_);
      break;
    default:
      break;
  }
  id_ = H5I_INVALID_HID;
}

namespace {

hid_t make_f16_type() {
  hid_t t = DS_H5_ID(H5Tcopy(H5T_IEEE_F32LE));
  DS_H5(H5Tset_fields(t, 15, 10, 5, 0, 10));
  DS_H5(H5Tset_size(t, 2));
  DS_H5(H5Tset_ebias(t, 15));
  return t;
}

hid_t utf8_string_type() {
  static hid_t t = [] {
    hid_t s = DS_H5_ID(H5Tcopy(H5T_C_S1));
    DS_H5(H5Tset_size(s, H5T_VARIABLE));
    DS_H5(H5Tset_cset(s, H5T_CSET_UTF8));
    return s;
  }();
  return t;
}

}  // namespace

hid_t file_type(NumberFormat e) {
  static hid_t f16 = make_f16_type();
  switch (e) {
    case NumberFormat::f64:
      return H5T_IEEE_F64LE;
    case NumberFormat::f32:
      return H5T_IEEE_F32LE;
    case NumberFormat::f16:
      return f16;
    case NumberFormat::bf16:
      return H5T_STD_U16LE;
    case NumberFormat::i32:
      return H5T_STD_I32LE;
    case NumberFormat::i64:
      return H5T_STD_I64LE;
  }
  return H5T_IEEE_F32LE;
}

bool exists(hid_t loc, const std::string& path) {
  // Checks each component, as H5Lexists requires the parents to exist.
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string prefix = path.substr(0, slash);
    if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

Id create_group(hid_t loc, const std::string& name) {
  return Id(DS_H5_ID(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
}

Id open_group(hid_t loc, const std::string& name) {
  const hid_t g = H5Gopen2(loc, name.c_str(), H5P_DEFAULT);
  if (g < 0) {
    const std::string why = last_error();
    throw Error(fmt::format("cannot open group {}{}", name, why.empty() ? "" : ": " + why));
  }
  return Id(g);
}

std::vector<std::string> list_children(hid_t group) {
  // One pass over the links (H5Lget_name_by_idx per index rebuilt the group's sorted link table
  // on every call: a twentieth of a diff's HDF5 time on a 74-site trace).
  std::vector<std::string> names;
  const auto add = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
    try {  // no exception through HDF5's C frames
      static_cast<std::vector<std::string>*>(out)->emplace_back(name);
      return 0;
    } catch (...) {
      return -1;
    }
  };
  hsize_t at = 0;
  DS_H5(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &at, add, &names));
  return names;
}

void write_attr(hid_t obj, const std::string& name, const std::string& value) {
  const char* p = value.c_str();
  if (H5Aexists(obj, name.c_str()) > 0) {
    // Rewritten in place when it already holds one variable-length string: deleting and adding
    // it again would grow the object header into a continuation block at the end of the file,
    // where a copy cut short loses it (the run's status attributes are rewritten last).
    Id attr(DS_H5_ID(H5Aopen(obj, name.c_str(), H5P_DEFAULT)));
    Id type(DS_H5_ID(H5Aget_type(attr.get())));
    Id space(DS_H5_ID(H5Aget_space(attr.get())));
    if (H5Tis_variable_str(type.get()) > 0 &&
        H5Sget_simple_extent_type(space.get()) == H5S_SCALAR) {
      DS_H5(H5Awrite(attr.get(), utf8_string_type(), &p));
      return;
    }
    attr.reset();
    DS_H5(H5Adelete(obj, name.c_str()));
  }
  Id space(DS_H5_ID(H5Screate(H5S_SCALAR)));
  Id attr(DS_H5_ID(
      H5Acreate2(obj, name.c_str(), utf8_string_type(), space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  DS_H5(H5Awrite(attr.get(), utf8_string_type(), &p));
}

void write_attr(hid_t obj, const std::string& name, int64_t value) {
  if (H5Aexists(obj, name.c_str()) > 0) {
    Id attr(DS_H5_ID(H5Aopen(obj, name.c_str(), H5P_DEFAULT)));
    DS_H5(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value));
    return;
  }
  Id space(DS_H5_ID(H5Screate(H5S_SCALAR)));
  Id attr(DS_H5_ID(
      H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  DS_H5(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value));
}

bool has_attr(hid_t obj, const std::string& name) {
  return H5Aexists(obj, name.c_str()) > 0;
}

namespace {

// H5Aread writes every element of an attribute: one read into a single value needs a single
// element (a damaged or foreign file may declare any number, found by tests/fuzz).
void require_one_element(hid_t attr, const std::string& name) {
  Id space(DS_H5_ID(H5Aget_space(attr)));
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n != 1) {
    throw Error(fmt::format("attribute '{}' holds {} values, not one", name, n),
                "the file is damaged or was not written by driftscope");
  }
}

}  // namespace

std::string read_attr_string(hid_t obj, const std::string& name) {
  Id attr(DS_H5_ID(H5Aopen(obj, name.c_str(), H5P_DEFAULT)));
  require_one_element(attr.get(), name);
  Id type(DS_H5_ID(H5Aget_type(attr.get())));
  if (H5Tget_class(type.get()) != H5T_STRING) {
    throw Error(fmt::format("attribute '{}' is not a string", name));
  }
  if (H5Tis_variable_str(type.get()) > 0) {
    char* p = nullptr;
    if (H5Aread(attr.get(), utf8_string_type(), &p) < 0) {
      throw Error(fmt::format("cannot read attribute '{}': {}", name, last_error()));
    }
    std::string s = p != nullptr ? p : "";
    H5free_memory(p);
    return s;
  }
  const size_t n = H5Tget_size(type.get());
  std::string s(n, '\0');
  Id mem(DS_H5_ID(H5Tcopy(H5T_C_S1)));
  DS_H5(H5Tset_size(mem.get(), n));
  DS_H5(H5Aread(attr.get(), mem.get(), s.data()));
  s.resize(s.find('\0') == std::string::npos ? n : s.find('\0'));
  return s;
}

int64_t read_attr_int(hid_t obj, const std::string& name) {
  Id attr(DS_H5_ID(H5Aopen(obj, name.c_str(), H5P_DEFAULT)));
  require_one_element(attr.get(), name);
  Id type(DS_H5_ID(H5Aget_type(attr.get())));
  if (H5Tget_class(type.get()) != H5T_INTEGER) {
    throw Error(fmt::format("attribute '{}' is not an integer", name));
  }
  int64_t v = 0;
  DS_H5(H5Aread(attr.get(), H5T_NATIVE_INT64, &v));
  return v;
}

namespace {

// A chunked dataset of `type`, rank 1 (width 0) or 2, growing along rows from 0, shuffled and
// deflated at `deflate_level` (0: no filter); intermediate groups of `name` are created.
Id create_growing_of(hid_t loc, const std::string& name, hid_t type, int64_t width,
                     int64_t chunk_rows, int deflate_level, bool checksum) {
  if (deflate_level < 0 || deflate_level > 9) {
    throw Error(fmt::format("deflate level {} is outside 0..9", deflate_level));
  }
  const int rank = width > 0 ? 2 : 1;
  hsize_t dims[2] = {0, static_cast<hsize_t>(width)};
  hsize_t maxdims[2] = {H5S_UNLIMITED, static_cast<hsize_t>(width)};
  hsize_t chunk[2] = {static_cast<hsize_t>(std::max<int64_t>(1, chunk_rows)),
                      static_cast<hsize_t>(std::max<int64_t>(1, width))};
  Id space(DS_H5_ID(H5Screate_simple(rank, dims, maxdims)));
  Id dcpl(DS_H5_ID(H5Pcreate(H5P_DATASET_CREATE)));
  DS_H5(H5Pset_chunk(dcpl.get(), rank, chunk));
  if (deflate_level > 0) {
    DS_H5(H5Pset_shuffle(dcpl.get()));
    DS_H5(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(deflate_level)));
  }
  if (checksum) DS_H5(H5Pset_fletcher32(dcpl.get()));
  Id lcpl(DS_H5_ID(H5Pcreate(H5P_LINK_CREATE)));
  DS_H5(H5Pset_create_intermediate_group(lcpl.get(), 1));
  return Id(DS_H5_ID(
      H5Dcreate2(loc, name.c_str(), type, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT)));
}

// Extends a growing dataset to at + rows rows and returns the file space with those rows
// selected, and the matching memory space.
std::pair<Id, Id> select_new_rows(hid_t dset, int64_t at, int64_t rows, int64_t width) {
  const int rank = width > 0 ? 2 : 1;
  hsize_t new_dims[2] = {static_cast<hsize_t>(at + rows), static_cast<hsize_t>(width)};
  DS_H5(H5Dset_extent(dset, new_dims));
  Id fspace(DS_H5_ID(H5Dget_space(dset)));
  hsize_t start[2] = {static_cast<hsize_t>(at), 0};
  hsize_t count[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(width)};
  DS_H5(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  Id mspace(DS_H5_ID(H5Screate_simple(rank, count, nullptr)));
  return {std::move(fspace), std::move(mspace)};
}

// The file space of rows [begin, begin + count) of a dataset, and the matching memory space.
std::pair<Id, Id> select_rows(hid_t dset, int64_t begin, int64_t count, int64_t width) {
  const int rank = width > 0 ? 2 : 1;
  Id fspace(DS_H5_ID(H5Dget_space(dset)));
  hsize_t start[2] = {static_cast<hsize_t>(begin), 0};
  hsize_t cnt[2] = {static_cast<hsize_t>(count), static_cast<hsize_t>(width)};
  DS_H5(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, cnt, nullptr));
  Id mspace(DS_H5_ID(H5Screate_simple(rank, cnt, nullptr)));
  return {std::move(fspace), std::move(mspace)};
}

}  // namespace

Id create_growing(hid_t loc, const std::string& name, NumberFormat e, int64_t width,
                  int64_t chunk_rows, int deflate_level, bool checksum) {
  Id d = create_growing_of(loc, name, file_type(e), width, chunk_rows, deflate_level, checksum);
  if (e == NumberFormat::bf16) write_attr(d.get(), "dtype", std::string(traits(e).trace_name));
  return d;
}

void write_rows(hid_t dset, NumberFormat e, int64_t at, int64_t rows, int64_t width,
                const void* data) {
  if (rows <= 0) return;
  auto [fspace, mspace] = select_new_rows(dset, at, rows, width);
  DS_H5(H5Dwrite(dset, file_type(e), mspace.get(), fspace.get(), H5P_DEFAULT, data));
}

void cut_rows(const Id& dset, int64_t rows) {
  if (!dset) return;
  Id space(H5Dget_space(dset.get()));
  if (!space) return;
  hsize_t dims[2] = {0, 0};
  if (H5Sget_simple_extent_dims(space.get(), dims, nullptr) < 1) return;
  dims[0] = static_cast<hsize_t>(rows);
  H5Dset_extent(dset.get(), dims);
}

DatasetInfo dataset_info(hid_t dset) {
  DatasetInfo info;
  Id space(DS_H5_ID(H5Dget_space(dset)));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 1 || rank > 2) throw Error(fmt::format("dataset of rank {}: expected 1 or 2", rank));
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  for (int i = 0; i < rank; ++i) info.shape.push_back(static_cast<int64_t>(dims[i]));
  Id type(DS_H5_ID(H5Dget_type(dset)));
  const H5T_class_t cls = H5Tget_class(type.get());
  const size_t size = H5Tget_size(type.get());
  if (cls == H5T_FLOAT && size == 4) {
    info.elem = NumberFormat::f32;
  } else if (cls == H5T_FLOAT && size == 2) {
    info.elem = NumberFormat::f16;
  } else if (cls == H5T_INTEGER && size == 2 && has_attr(dset, "dtype") &&
             read_attr_string(dset, "dtype") == traits(NumberFormat::bf16).trace_name) {
    info.elem = NumberFormat::bf16;
  } else if (cls == H5T_INTEGER && size == 4) {
    info.elem = NumberFormat::i32;
  } else if (cls == H5T_INTEGER && size == 8) {
    info.elem = NumberFormat::i64;
  } else {
    throw Error(fmt::format("dataset has an unsupported element type (class {}, {} bytes)",
                            static_cast<int>(cls), size));
  }
  return info;
}

void read_rows(hid_t dset, NumberFormat e, int64_t begin, int64_t count, int64_t width, void* out) {
  if (count <= 0) return;
  auto [fspace, mspace] = select_rows(dset, begin, count, width);
  DS_H5(H5Dread(dset, file_type(e), mspace.get(), fspace.get(), H5P_DEFAULT, out));
}

std::vector<int64_t> dataset_shape(hid_t dset) {
  Id space(DS_H5_ID(H5Dget_space(dset)));
  const int rank = DS_H5(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) DS_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  return {dims.begin(), dims.end()};
}

H5T_class_t dataset_class(hid_t dset) {
  Id type(DS_H5_ID(H5Dget_type(dset)));
  return H5Tget_class(type.get());
}

Id create_growing_strings(hid_t loc, const std::string& name, int64_t chunk_rows,
                          int deflate_level) {
  return create_growing_of(loc, name, utf8_string_type(), 0, chunk_rows, deflate_level, false);
}

void write_string_rows(hid_t dset, int64_t at, const std::vector<std::string>& rows) {
  if (rows.empty()) return;
  std::vector<const char*> p;
  p.reserve(rows.size());
  for (const auto& s : rows) p.push_back(s.c_str());
  auto [fspace, mspace] = select_new_rows(dset, at, static_cast<int64_t>(rows.size()), 0);
  DS_H5(H5Dwrite(dset, utf8_string_type(), mspace.get(), fspace.get(), H5P_DEFAULT, p.data()));
}

std::vector<std::string> read_string_rows(hid_t dset, int64_t begin, int64_t count) {
  std::vector<std::string> out;
  if (count <= 0) return out;
  Id type(DS_H5_ID(H5Dget_type(dset)));
  if (H5Tget_class(type.get()) != H5T_STRING) throw Error("dataset is not of strings");
  auto [fspace, mspace] = select_rows(dset, begin, count, 0);
  out.reserve(static_cast<size_t>(count));
  if (H5Tis_variable_str(type.get()) > 0) {
    std::vector<char*> p(static_cast<size_t>(count), nullptr);
    const herr_t s =
        H5Dread(dset, utf8_string_type(), mspace.get(), fspace.get(), H5P_DEFAULT, p.data());
    for (char* c : p) {
      out.emplace_back(c != nullptr ? c : "");
      H5free_memory(c);
    }
    DS_H5(s);
    return out;
  }
  // Fixed-length strings (as numpy's bytes_ arrays are written): NUL-padded or NUL-terminated.
  const size_t n = H5Tget_size(type.get());
  Id mem(DS_H5_ID(H5Tcopy(H5T_C_S1)));
  DS_H5(H5Tset_size(mem.get(), n));
  std::vector<char> buf(n * static_cast<size_t>(count));
  DS_H5(H5Dread(dset, mem.get(), mspace.get(), fspace.get(), H5P_DEFAULT, buf.data()));
  for (int64_t i = 0; i < count; ++i) {
    const char* c = buf.data() + static_cast<size_t>(i) * n;
    out.emplace_back(c, strnlen(c, n));
  }
  return out;
}

}  // namespace ds::h5
