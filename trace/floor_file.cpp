// The noise floor file (floor_file.h), written and read with HDF5; every read marked for a
// watching parent, as a trace's are.
#include "trace/floor_file.h"

#include <fmt/format.h>
#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <system_error>

#include "common/error.h"
#include "common/output_file.h"
#include "trace/h5.h"
#include "trace/read_watch.h"

namespace ds::trace {
namespace {

// What one reader may be asked to hold: far above any real floor (a 126-layer model's 758 sites
// x 1000 replays x 24 buckets), far below what a damaged size could make it allocate.
constexpr int64_t kMaxValues = int64_t{1} << 28;
constexpr int kMaxBuckets = 40;

const char* kDamagedHint =
    "calibrate A again (driftscope calibrate A.h5 -o FLOOR --force); the file was altered after "
    "it was written, or is not one calibrate wrote";

// ---- writing ---------------------------------------------------------------------------------

// A dataset of `dims`, in one chunk checksummed with HDF5's Fletcher-32 filter (h5py reads it
// with no plugin): a byte changed on disk then fails the read instead of reading as another value.
template <typename T>
void put(hid_t loc, const char* name, hid_t file_type, hid_t mem_type, std::vector<hsize_t> dims,
         const std::vector<T>& values) {
  h5::Id space(DS_H5_ID(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)));
  h5::Id dcpl(DS_H5_ID(H5Pcreate(H5P_DATASET_CREATE)));
  std::vector<hsize_t> chunk = dims;
  for (hsize_t& c : chunk) c = std::max<hsize_t>(1, c);
  DS_H5(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()));
  DS_H5(H5Pset_fletcher32(dcpl.get()));
  h5::Id d(DS_H5_ID(
      H5Dcreate2(loc, name, file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)));
  if (!values.empty()) {
    DS_H5(H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  }
}

void put_i64(hid_t loc, const char* name, std::vector<hsize_t> dims,
             const std::vector<int64_t>& v) {
  put(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, std::move(dims), v);
}
void put_i32(hid_t loc, const char* name, std::vector<hsize_t> dims,
             const std::vector<int32_t>& v) {
  put(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, std::move(dims), v);
}
void put_f64(hid_t loc, const char* name, std::vector<hsize_t> dims, const std::vector<double>& v) {
  put(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, std::move(dims), v);
}

template <typename S, typename F>
std::vector<F> column(const std::vector<S>& rows, F S::*field) {
  std::vector<F> out;
  out.reserve(rows.size());
  for (const S& r : rows) out.push_back(r.*field);
  return out;
}

void write_contents(hid_t file, const FloorFile& f) {
  const hsize_t S = f.sites.size(), N = f.seeds.size(), B = static_cast<hsize_t>(f.buckets),
                Q = f.sequences.size(), R = f.rows.size();
  h5::write_attr(file, "format", std::string(kFloorFormat));
  h5::write_attr(file, "format_version", kFloorVersion);
  h5::write_attr(file, "tool_version", f.tool_version);
  h5::write_attr(file, "source", f.source);
  h5::write_attr(file, "config_json", f.config_json);
  h5::write_attr(file, "model_json", f.model_json);
  h5::write_attr(file, "config_digest", f.config_digest);
  h5::write_attr(file, "model_digest", f.model_digest);
  h5::write_attr(file, "perturbation", f.perturbation);
  h5::write_attr(file, "runs", static_cast<int64_t>(N));
  h5::write_attr(file, "buckets", static_cast<int64_t>(B));
  h5::write_attr(file, "sites", nlohmann::json(f.sites).dump());
  h5::write_attr(file, "storages", nlohmann::json(f.storages).dump());
  put_i64(file, "seeds", {N}, f.seeds);

  h5::Id hidden = h5::create_group(file, "hidden");
  const std::vector<hsize_t> snb = {S, N, B};
  put_i64(hidden.get(), "rows", snb, column(f.hidden, &FloorBucket::rows));
  put_i64(hidden.get(), "elements", snb, column(f.hidden, &FloorBucket::elements));
  put_i64(hidden.get(), "differ", snb, column(f.hidden, &FloorBucket::differ));
  put_i64(hidden.get(), "up", snb, column(f.hidden, &FloorBucket::up));
  put_i64(hidden.get(), "nan", snb, column(f.hidden, &FloorBucket::nan));
  put_f64(hidden.get(), "rel_l2", snb, column(f.hidden, &FloorBucket::rel_l2));
  put_f64(hidden.get(), "max_ulps", snb, column(f.hidden, &FloorBucket::max_ulps));

  h5::Id margins = h5::create_group(file, "margins");
  const hsize_t MN = f.margins.empty() ? 0 : N;
  put_i64(margins.get(), "rows", {MN, B}, column(f.margins, &FloorMargins::rows));
  put_i64(margins.get(), "changed", {MN, B}, column(f.margins, &FloorMargins::changed));
  put_i64(margins.get(), "top1", {MN, B}, column(f.margins, &FloorMargins::top1));
  put_f64(margins.get(), "abs_change", {MN, B}, column(f.margins, &FloorMargins::abs_change));

  h5::Id seqs = h5::create_group(file, "sequences");
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> tokens;
  for (const FloorSequence& q : f.sequences) {
    tokens.insert(tokens.end(), q.tokens.begin(), q.tokens.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  put_i32(seqs.get(), "index", {Q}, column(f.sequences, &FloorSequence::index));
  put_i32(seqs.get(), "prompt_len", {Q}, column(f.sequences, &FloorSequence::prompt_len));
  put_i64(seqs.get(), "token_offsets", {Q + 1}, offsets);
  put_i32(seqs.get(), "tokens", {tokens.size()}, tokens);
  put(seqs.get(), "flipped", H5T_STD_U8LE, H5T_NATIVE_UINT8, {N, Q}, f.flipped);

  h5::Id rows = h5::create_group(file, "rows");
  put_i32(rows.get(), "seq", {R}, column(f.rows, &FloorRow::seq));
  put_i32(rows.get(), "row", {R}, column(f.rows, &FloorRow::row));
  put(rows.get(), "margin", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {R},
      column(f.rows, &FloorRow::margin));
  put_f64(rows.get(), "change_mean", {R}, column(f.rows, &FloorRow::change_mean));
  put_f64(rows.get(), "change_sd", {R}, column(f.rows, &FloorRow::change_sd));
  put_i32(rows.get(), "flips", {R}, column(f.rows, &FloorRow::flips));
}

// ---- reading ---------------------------------------------------------------------------------

// Thrown inside the reader for any inconsistency; read_floor turns it into "is damaged".
struct Damage : Error {
  using Error::Error;
};

template <typename T>
std::vector<T> get(hid_t loc, const char* name, hid_t mem_type, const std::vector<int64_t>& dims) {
  h5::Id d(DS_H5_ID(H5Dopen2(loc, name, H5P_DEFAULT)));
  const std::vector<int64_t> shape = h5::dataset_shape(d.get());
  if (shape != dims) {
    throw Damage(fmt::format("dataset {} has shape [{}], not [{}]", name, fmt::join(shape, ", "),
                             fmt::join(dims, ", ")));
  }
  int64_t n = 1;
  for (int64_t x : dims) n *= x;
  std::vector<T> out(static_cast<size_t>(n));
  if (n > 0) DS_H5(H5Dread(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()));
  return out;
}

std::vector<std::string> string_list(hid_t file, const char* attr, size_t n) {
  const auto j = nlohmann::json::parse(h5::read_attr_string(file, attr), nullptr, false);
  if (!j.is_array() || j.size() != n) {
    throw Damage(fmt::format("attribute {} is not a list of {} names", attr, n));
  }
  std::vector<std::string> out;
  for (const auto& v : j) {
    if (!v.is_string()) throw Damage(fmt::format("attribute {} holds a non-string", attr));
    out.push_back(v.get<std::string>());
  }
  return out;
}

int64_t count_attr(hid_t file, const char* name, int64_t max) {
  const int64_t v = h5::read_attr_int(file, name);
  if (v < 0 || v > max)
    throw Damage(fmt::format("attribute {} = {} is outside 0..{}", name, v, max));
  return v;
}

void read_contents(hid_t file, FloorFile& f) {
  f.tool_version = h5::read_attr_string(file, "tool_version");
  f.source = h5::read_attr_string(file, "source");
  f.config_json = h5::read_attr_string(file, "config_json");
  f.model_json = h5::read_attr_string(file, "model_json");
  f.config_digest = h5::read_attr_string(file, "config_digest");
  f.model_digest = h5::read_attr_string(file, "model_digest");
  f.perturbation = h5::read_attr_string(file, "perturbation");
  const int64_t N = count_attr(file, "runs", 1 << 20);
  const int64_t B = count_attr(file, "buckets", kMaxBuckets);
  f.buckets = static_cast<int>(B);
  f.seeds = get<int64_t>(file, "seeds", H5T_NATIVE_INT64, {N});
  h5::Id hidden(DS_H5_ID(H5Gopen2(file, "hidden", H5P_DEFAULT)));
  const std::vector<int64_t> rows_shape =
      h5::dataset_shape(h5::Id(DS_H5_ID(H5Dopen2(hidden.get(), "rows", H5P_DEFAULT))).get());
  if (rows_shape.size() != 3 || rows_shape[1] != N || rows_shape[2] != B ||
      rows_shape[0] * N * B > kMaxValues) {
    throw Damage("dataset hidden/rows is not [sites, runs, buckets]");
  }
  const int64_t S = rows_shape[0];
  f.sites = string_list(file, "sites", static_cast<size_t>(S));
  f.storages = string_list(file, "storages", static_cast<size_t>(S));
  const std::vector<int64_t> snb = {S, N, B};
  const auto rows = get<int64_t>(hidden.get(), "rows", H5T_NATIVE_INT64, snb);
  const auto elements = get<int64_t>(hidden.get(), "elements", H5T_NATIVE_INT64, snb);
  const auto differ = get<int64_t>(hidden.get(), "differ", H5T_NATIVE_INT64, snb);
  const auto up = get<int64_t>(hidden.get(), "up", H5T_NATIVE_INT64, snb);
  const auto nan = get<int64_t>(hidden.get(), "nan", H5T_NATIVE_INT64, snb);
  const auto rel = get<double>(hidden.get(), "rel_l2", H5T_NATIVE_DOUBLE, snb);
  const auto ulps = get<double>(hidden.get(), "max_ulps", H5T_NATIVE_DOUBLE, snb);
  f.hidden.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    f.hidden[i] = {rows[i], elements[i], differ[i], up[i], nan[i], rel[i], ulps[i]};
    const FloorBucket& k = f.hidden[i];
    if (k.rows < 0 || k.elements < 0 || k.differ < 0 || k.differ > k.elements || k.up < 0 ||
        k.up > k.differ || k.nan < 0 || !(k.rel_l2 >= 0) || !(k.max_ulps >= 0)) {
      throw Damage(fmt::format("hidden value {} is out of range", i));
    }
  }

  h5::Id margins(DS_H5_ID(H5Gopen2(file, "margins", H5P_DEFAULT)));
  const int64_t MN =
      h5::dataset_shape(h5::Id(DS_H5_ID(H5Dopen2(margins.get(), "rows", H5P_DEFAULT))).get()).at(0);
  if (MN != 0 && MN != N) throw Damage("dataset margins/rows is not [runs, buckets]");
  const auto m_rows = get<int64_t>(margins.get(), "rows", H5T_NATIVE_INT64, {MN, B});
  const auto m_changed = get<int64_t>(margins.get(), "changed", H5T_NATIVE_INT64, {MN, B});
  const auto m_top1 = get<int64_t>(margins.get(), "top1", H5T_NATIVE_INT64, {MN, B});
  const auto m_abs = get<double>(margins.get(), "abs_change", H5T_NATIVE_DOUBLE, {MN, B});
  for (size_t i = 0; i < m_rows.size(); ++i) {
    f.margins.push_back({m_rows[i], m_changed[i], m_top1[i], m_abs[i]});
    if (m_rows[i] < 0 || m_changed[i] < 0 || m_changed[i] > m_rows[i] || m_top1[i] < 0 ||
        !(m_abs[i] >= 0)) {
      throw Damage(fmt::format("margin value {} is out of range", i));
    }
  }

  h5::Id seqs(DS_H5_ID(H5Gopen2(file, "sequences", H5P_DEFAULT)));
  const int64_t Q =
      h5::dataset_shape(h5::Id(DS_H5_ID(H5Dopen2(seqs.get(), "index", H5P_DEFAULT))).get()).at(0);
  if (Q < 0 || Q * N > kMaxValues) throw Damage("dataset sequences/index is too large");
  const auto index = get<int32_t>(seqs.get(), "index", H5T_NATIVE_INT32, {Q});
  const auto plen = get<int32_t>(seqs.get(), "prompt_len", H5T_NATIVE_INT32, {Q});
  const auto offsets = get<int64_t>(seqs.get(), "token_offsets", H5T_NATIVE_INT64, {Q + 1});
  const int64_t T = offsets.back();
  if (T < 0 || T > kMaxValues) throw Damage("dataset sequences/token_offsets is out of range");
  const auto tokens = get<int32_t>(seqs.get(), "tokens", H5T_NATIVE_INT32, {T});
  for (int64_t q = 0; q < Q; ++q) {
    const int64_t b = offsets[static_cast<size_t>(q)], e = offsets[static_cast<size_t>(q) + 1];
    if (b < 0 || e < b || e > T || plen[static_cast<size_t>(q)] < 1 ||
        plen[static_cast<size_t>(q)] > e - b || (q > 0 && index[q] <= index[q - 1])) {
      throw Damage(fmt::format("sequence {} of the floor is out of range", q));
    }
    f.sequences.push_back({index[static_cast<size_t>(q)], plen[static_cast<size_t>(q)],
                           std::vector<int32_t>(tokens.begin() + b, tokens.begin() + e)});
  }
  f.flipped = get<uint8_t>(seqs.get(), "flipped", H5T_NATIVE_UINT8, {N, Q});

  h5::Id rows_g(DS_H5_ID(H5Gopen2(file, "rows", H5P_DEFAULT)));
  const int64_t R =
      h5::dataset_shape(h5::Id(DS_H5_ID(H5Dopen2(rows_g.get(), "seq", H5P_DEFAULT))).get()).at(0);
  if (R < 0 || R > kMaxValues) throw Damage("dataset rows/seq is too large");
  const auto r_seq = get<int32_t>(rows_g.get(), "seq", H5T_NATIVE_INT32, {R});
  const auto r_row = get<int32_t>(rows_g.get(), "row", H5T_NATIVE_INT32, {R});
  const auto r_margin = get<float>(rows_g.get(), "margin", H5T_NATIVE_FLOAT, {R});
  const auto r_mean = get<double>(rows_g.get(), "change_mean", H5T_NATIVE_DOUBLE, {R});
  const auto r_sd = get<double>(rows_g.get(), "change_sd", H5T_NATIVE_DOUBLE, {R});
  const auto r_flips = get<int32_t>(rows_g.get(), "flips", H5T_NATIVE_INT32, {R});
  for (size_t i = 0; i < r_seq.size(); ++i) {
    f.rows.push_back({r_seq[i], r_row[i], r_margin[i], r_mean[i], r_sd[i], r_flips[i]});
    if (r_row[i] < 0 || r_flips[i] < 0 || r_flips[i] > N || r_sd[i] < 0) {
      throw Damage(fmt::format("row {} of the floor is out of range", i));
    }
  }
}

}  // namespace

void write_floor(const std::filesystem::path& path, const FloorFile& f, bool replace) {
  h5::silence_errors();
  const char* hint = "check that -o names a writable place and the disk is not full";
  try {
    if (!replace && target_state(path) != TargetState::absent) {
      throw Error(fmt::format("'{}' already exists", path.string()),
                  "pass --force to replace it, or choose another -o");
    }
    TempFile tmp(path);
    tmp.close();
    {
      // the v110 format checksums every object header: damaged metadata fails to read too
      h5::Id fapl(DS_H5_ID(H5Pcreate(H5P_FILE_ACCESS)));
      DS_H5(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110));
      h5::Id file(DS_H5_ID(H5Fcreate(tmp.path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get())));
      write_contents(file.get(), f);
      DS_H5(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
    }
    tmp.commit(path, replace);
  } catch (const std::system_error& e) {
    throw write_error(path, e);
  } catch (const Error& e) {
    if (!e.hint().empty()) throw;
    throw Error(fmt::format("cannot write floor '{}': {}", path.string(), e.what()), hint);
  }
}

bool is_floor_file(const std::filesystem::path& path) {
  h5::silence_errors();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const WatchedRead watched(path.string(), "opening it", -1, "floor");
  if (H5Fis_hdf5(path.c_str()) <= 0) return false;
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return false;
  const h5::Id file(f);
  try {
    return h5::has_attr(file.get(), "format") &&
           h5::read_attr_string(file.get(), "format") == kFloorFormat;
  } catch (const Error&) {
    return false;
  }
}

FloorFile read_floor(const std::filesystem::path& path) {
  h5::silence_errors();
  const std::string name = path.string();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw Error(fmt::format("cannot open floor '{}': {}", name,
                            std::error_code(errno, std::generic_category()).message()),
                "give the file driftscope calibrate wrote (-o)");
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(fmt::format("'{}' is not a regular file", name),
                "--floor takes the file driftscope calibrate wrote");
  }
  FloorFile f;
  const WatchedRead watched(name, "reading it", -1, "floor");
  try {
    if (H5Fis_hdf5(path.c_str()) <= 0) {
      throw Error(fmt::format("'{}' is not a floor file (not HDF5)", name),
                  "--floor takes the file driftscope calibrate wrote");
    }
    h5::Id file(DS_H5_ID(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)));
    if (!h5::has_attr(file.get(), "format") ||
        h5::read_attr_string(file.get(), "format") != kFloorFormat) {
      throw Error(fmt::format("'{}' is not a floor file (no format \"{}\")", name, kFloorFormat),
                  "--floor takes the file driftscope calibrate wrote; a trace goes before it");
    }
    f.format_version = h5::read_attr_int(file.get(), "format_version");
    if (f.format_version != kFloorVersion) {
      throw Error(
          fmt::format("floor '{}' is of format version {}; this driftscope reads version {}", name,
                      f.format_version, kFloorVersion),
          fmt::format("use the driftscope that wrote it ({}), or calibrate again with this one",
                      h5::has_attr(file.get(), "tool_version")
                          ? h5::read_attr_string(file.get(), "tool_version")
                          : std::string("unknown")));
    }
    read_contents(file.get(), f);
  } catch (const Damage& e) {
    throw Error(fmt::format("floor '{}' is damaged: {}", name, e.what()), kDamagedHint);
  } catch (const Error& e) {
    if (!e.hint().empty()) throw;
    throw Error(fmt::format("floor '{}' is damaged: {}", name, e.what()), kDamagedHint);
  } catch (const std::exception& e) {  // an allocation a damaged size asked for
    throw Error(fmt::format("floor '{}' is damaged: {}", name, e.what()), kDamagedHint);
  }
  return f;
}

}  // namespace ds::trace
