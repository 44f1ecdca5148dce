// Trace reader: validation of the root attributes and lazy, row-range reads of datasets.
#include "trace/reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.h"
#include "common/float_formats.h"
#include "common/output_file.h"
#include "trace/conformance.h"
#include "trace/kernel_table.h"
#include "trace/layout.h"
#include "trace/locating_driver.h"
#include "trace/read_watch.h"
#include "trace/schema.h"

namespace fs = std::filesystem;

namespace ds::trace {

struct TraceReader::OpenDatasets {
  int seq = -1;
  PlainFile plain;                                           // plain_file() of the file, found once
  std::map<std::string, std::unique_ptr<DatasetRows>> sets;  // by path under /seq/<seq>
};

namespace {

// The locating driver's access list with one metadata read attempt. SWMR read mode retries a
// metadata checksum failure 100 times with growing sleeps (minutes on a damaged superblock), for
// a writer that may be midway through a write; a trace another run is writing is refused by its
// lock, so one read is all a reader needs.
h5::Id reader_fapl() {
  h5::Id fapl = locating_fapl();
  DS_H5(H5Pset_metadata_read_attempts(fapl.get(), 1));
  return fapl;
}

// Runs `read`; an error that does not already name the trace (a failed HDF5 call, a group that
// cannot be opened) becomes "trace 'PATH' is damaged: <what>", with a hint.
template <typename Read>
auto naming_damage(const fs::path& path, const Read& read) {
  try {
    return read();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.starts_with("trace '") || what.starts_with("'")) throw;
    throw Error(fmt::format("trace '{}' is damaged: {}", path.string(), what),
                "the file was altered after driftscope wrote it (a bad disk, a partial copy, an "
                "edit): ask its author for a fresh copy (docs/trace-format.md, \"Untrusted "
                "traces\")");
  }
}

}  // namespace

TraceReader TraceReader::open(const fs::path& path) {
  const WatchedRead watched(path.native(), "opening it");
  h5::silence_errors();
  if (!fs::exists(path)) {
    throw Error(fmt::format("trace '{}' does not exist", path.string()),
                "write one with `driftscope run -o FILE`");
  }
  if (!fs::is_regular_file(path)) {  // a FIFO or a device would block or stream forever
    throw Error(fmt::format("'{}' is not a regular file", path.string()),
                "a driftscope trace is the .h5 file written by `driftscope run`");
  }
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    throw Error(fmt::format("'{}' is not an HDF5 file", path.string()),
                "a driftscope trace is the .h5 file written by `driftscope run`");
  }
  // HDF5's sec2 driver, with chunks located in one step (trace/locating_driver.h)
  const h5::Id locating = reader_fapl();
  hid_t fid = H5Fopen(path.c_str(), H5F_ACC_RDONLY, locating.get());
  if (fid < 0 && !held_by_writer(path)) {
    // A run killed (or stopped by a full disk) while its file was in SWMR write mode leaves
    // the file-consistency flags set, and HDF5 then refuses a plain open; SWMR read mode is
    // the documented way to open it (docs/trace-format.md "Crash consistency").
    fid = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, locating.get());
  }
  if (fid < 0 && !held_by_writer(path)) {
    // Killed inside one of the writer's short plain-mode windows: the flags say "open for
    // write". Read-only, ignoring them (what `h5clear -s` does, without writing the file).
    h5::Id fapl = reader_fapl();
    hbool_t ignore_flags = 1;  // HDF5's property behind h5clear (H5F_ACS_CLEAR_STATUS_FLAGS_NAME)
    if (H5Pset(fapl.get(), "clear_status_flags", &ignore_flags) >= 0) {
      fid = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
    }
  }
  bool cut_short = false;
  if (fid < 0 && !held_by_writer(path)) {
    // Cut short (a partial copy, a disk that filled while copying): HDF5 refuses a file shorter
    // than the end address its superblock records. Opened with that check skipped (h5clear's
    // property, H5F_ACS_SKIP_EOF_CHECK_NAME), what lies before the cut reads as usual, and a read
    // past it fails (the locating driver) instead of reading zeros.
    h5::Id fapl = reader_fapl();
    hbool_t yes = 1;
    if (H5Pset(fapl.get(), "clear_status_flags", &yes) >= 0 &&
        H5Pset(fapl.get(), "skip_eof_check", &yes) >= 0) {
      fid = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
      cut_short = fid >= 0;
    }
  }
  if (fid < 0) {
    if (held_by_writer(path)) {
      throw Error(fmt::format("trace '{}' is in use: a run is still writing it", path.string()),
                  "wait until that run finishes, or stop it with Ctrl-C (the trace stays "
                  "readable, complete=0)");
    }
    const std::string why = h5::last_error();
    throw Error(fmt::format("cannot open '{}': a damaged HDF5 file{}", path.string(),
                            why.empty() ? "" : " (" + why + ")"),
                "the file is damaged, or was cut short by something other than a killed run (a "
                "driftscope run killed at any moment leaves a file that opens)");
  }
  if (!cut_short) return from_open_file(fid, path);
  haddr_t expected = 0;
  if (H5Fget_eoa(fid, &expected) < 0) expected = 0;
  const CutShort cut{fs::file_size(path), expected};
  try {
    TraceReader r = from_open_file(fid, path, /*lenient=*/true);
    r.cut_short_ = cut;
    return r;
  } catch (const Error&) {
    throw Error(fmt::format("trace '{}' is cut short ({} of {} bytes on disk), and what it needs "
                            "to open lies past the cut",
                            path.string(), cut.on_disk, cut.expected),
                "the file was copied or downloaded in part: copy it again");
  }
}

TraceReader TraceReader::open_image(std::span<const std::byte> image, const std::string& name) {
  const WatchedRead watched(name, "opening it");
  h5::silence_errors();
  h5::Id fapl(DS_H5_ID(H5Pcreate(H5P_FILE_ACCESS)));
  DS_H5(H5Pset_fapl_core(fapl.get(), 1 << 16, /*backing_store=*/0));
  DS_H5(H5Pset_file_image(fapl.get(), const_cast<std::byte*>(image.data()), image.size()));
  const hid_t fid = H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (fid < 0) {
    throw Error(fmt::format("cannot open '{}': a damaged HDF5 file", name),
                "a driftscope trace is the .h5 file written by `driftscope run`");
  }
  return from_open_file(fid, name);
}

TraceReader TraceReader::from_open_file(hid_t fid, const fs::path& path, bool lenient) {
  TraceReader r;
  r.path_ = path;
  r.lenient_ = lenient;
  // Closing reads too (HDF5 frees what it read): watched like the other reads
  r.file_ = std::shared_ptr<h5::Id>(new h5::Id(fid), [name = path.native()](h5::Id* id) {
    const WatchedRead watched(name, "closing it");
    delete id;
  });
  naming_damage(path, [&] { r.read_root(); });
  return r;
}

void TraceReader::read_root() {
  const hid_t root = file_->get();
  if (!h5::has_attr(root, "format") || h5::read_attr_string(root, "format") != kFormatName) {
    throw Error(fmt::format("'{}' is an HDF5 file but not a driftscope trace", path_.string()),
                "its root has no attribute format=\"driftscope-trace\"");
  }
  format_version_ = static_cast<int>(h5::read_attr_int(root, "format_version"));
  if (format_version_ != kFormatVersion) {
    throw Error(fmt::format("trace '{}' has format_version {}, this driftscope reads version {}",
                            path_.string(), format_version_, kFormatVersion),
                "use the driftscope version that wrote it (tool_version attribute), or upgrade");
  }
  // A string attribute, "" when absent; in a file cut short also when it lies past the cut (the
  // writer rewrites the run's status attributes last, so their newest copy is at the file's end).
  auto str = [&](hid_t obj, const char* name) {
    try {
      return h5::has_attr(obj, name) ? h5::read_attr_string(obj, name) : std::string();
    } catch (const Error&) {
      if (!lenient_) throw;
      return std::string();
    }
  };
  tool_version_ = str(root, "tool_version");
  producer_ =
      h5::has_attr(root, "producer") ? str(root, "producer") : "driftscope " + tool_version_;
  if (!producer_.starts_with("driftscope ")) check_conformance(root, path_.string(), producer_);
  try {
    complete_ = h5::has_attr(root, "complete") && h5::read_attr_int(root, "complete") == 1;
  } catch (const Error&) {
    if (!lenient_) throw;
  }
  stop_reason_ = str(root, "stop_reason");
  if (!h5::exists(root, kMetaGroup) || !h5::exists(root, kSeqGroup)) {
    throw Error(fmt::format("trace '{}' lacks the /meta or /seq group", path_.string()),
                "the file is damaged or was not written by driftscope");
  }
  h5::Id meta = h5::open_group(root, kMetaGroup);
  config_json_ = str(meta.get(), "config_json");
  model_json_ = str(meta.get(), "model_json");
  env_json_ = str(meta.get(), "env_json");
  command_line_ = str(meta.get(), "command_line");
  using Attr = std::pair<const char*, const std::string*>;
  for (const auto& [name, text] :
       {Attr{"config_json", &config_json_}, Attr{"model_json", &model_json_}}) {
    if (!text->empty() && !nlohmann::json::parse(*text, nullptr, false).is_object()) {
      throw Error(fmt::format("trace '{}' is damaged: attribute /meta@{} is not a JSON object",
                              path_.string(), name),
                  "driftscope writes it as JSON; the file was altered or written by another tool");
    }
  }
  const auto close_watched = [name = path_.native()](OpenDatasets* o) {
    const WatchedRead watched(name, "closing it");
    delete o;
  };
  open_ = std::shared_ptr<OpenDatasets>(new OpenDatasets(), close_watched);
  open_->plain = plain_file(file_->get());
}

uint64_t TraceReader::file_size() const {
  return fs::file_size(path_);
}

std::vector<int> TraceReader::sequence_indices() const {
  const WatchedRead watched(path_.native(), "listing its sequences");
  h5::Id seq = naming_damage(path_, [&] { return h5::open_group(file_->get(), kSeqGroup); });
  std::vector<int> out;
  for (const auto& name : h5::list_children(seq.get())) {
    try {
      out.push_back(std::stoi(name));
    } catch (const std::exception&) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

h5::Id TraceReader::dataset(int seq, const std::string& rel) const {
  const std::string p = sequence_path(seq) + "/" + rel;
  // Opened first, asked about only on failure: checking each link of the path costs as much again.
  h5::Id d(H5Oopen(file_->get(), p.c_str(), H5P_DEFAULT));
  if (d && H5Iget_type(d.get()) == H5I_DATASET) return d;
  if (!h5::exists(file_->get(), p)) {
    throw Error(fmt::format("trace '{}' has no dataset /{}", path_.string(), p),
                "see `driftscope show` for what the trace holds");
  }
  return open_dataset(file_->get(), p);
}

SequenceInfo TraceReader::sequence(int seq) const {
  const WatchedRead watched(path_.native(), "sequence", seq);
  const std::string g = sequence_path(seq);
  if (!h5::exists(file_->get(), g)) {
    throw Error(fmt::format("trace '{}' has no sequence {}", path_.string(), seq));
  }
  try {
    h5::Id group = h5::open_group(file_->get(), g);
    // The datasets the check opens stay open in the reader's cache for the reads that follow.
    open_->sets.clear();
    open_->seq = seq;
    const auto keep = [&](const std::string& rel, NumberFormat elem, h5::Id d) {
      open_->sets[rel] = std::make_unique<DatasetRows>(std::move(d), elem, open_->plain);
    };
    check_sequence(group.get(), "/" + g, keep, /*status_may_be_lost=*/lenient_);
    return read_sequence(seq, group.get());
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.starts_with("trace '")) throw;
    throw Error(fmt::format("trace '{}' is damaged: /{}: {}", path_.string(), g, what),
                "the rest of the trace can still be read; `driftscope show` lists what it holds");
  }
}

SequenceInfo TraceReader::read_sequence(int seq, hid_t group) const {
  SequenceInfo s;
  s.index = seq;
  s.prompt_len = static_cast<int>(h5::read_attr_int(group, "prompt_len"));
  s.gen_len = static_cast<int>(h5::read_attr_int(group, "gen_len"));
  try {
    s.stop_reason = h5::read_attr_string(group, "stop_reason");
  } catch (const Error&) {
    if (!lenient_) throw;
    s.stop_reason = "running";  // lost past the cut (check_sequence took it so): gen_len decides
  }
  {
    DatasetRows& d = rows_of(seq, kTokensDataset, NumberFormat::i32);
    s.tokens.resize(static_cast<size_t>(d.shape()[0]));
    d.read(0, d.shape()[0], s.tokens.data());
  }
  int64_t rows = -1;
  auto take_rows = [&](int64_t r) { rows = rows < 0 ? r : std::min(rows, r); };
  {
    // The sites are the datasets the sequence check found under hidden/ (it refused any other
    // name), in forward order: embed, L0..L{n-1} (each in kLayerSiteKinds order), final_norm.
    std::vector<std::string> names;
    const std::string prefix = hidden_path("");
    for (const auto& [rel, set] : open_->sets) {
      if (rel.starts_with(prefix)) names.push_back(rel.substr(prefix.size()));
    }
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return site_order(a) < site_order(b);
    });
    for (const auto& n : names) {
      // opened through the reader's cache: the row reads that usually follow find it open
      const DatasetRows& d = rows_of(seq, hidden_path(n), std::nullopt);
      s.sites.push_back({n, d.shape(), d.elem()});
      take_rows(d.shape()[0]);
    }
  }
  if (open_->sets.count(logits_path(kTopkIds))) {  // the check kept the logits datasets it found
    const auto& shape = rows_of(seq, logits_path(kTopkIds), NumberFormat::i32).shape();
    s.topk = shape.size() == 2 ? static_cast<int>(shape[1]) : 0;
    take_rows(shape[0]);
    take_rows(rows_of(seq, logits_path(kLse), NumberFormat::f32).shape()[0]);
    take_rows(rows_of(seq, logits_path(kTopkLogits), NumberFormat::f32).shape()[0]);
  }
  s.has_full_logits = open_->sets.count(logits_path(kFullLogits)) > 0;
  if (s.has_full_logits)
    take_rows(rows_of(seq, logits_path(kFullLogits), NumberFormat::f32).shape()[0]);
  s.rows = std::max<int64_t>(0, rows);
  if (s.stop_reason == "running") {
    // Cut by a kill or a full disk: only what gen_len vouches for (docs/trace-format.md, "Crash
    // consistency"); rows past the last flush point may be incomplete.
    const int64_t committed_tokens = int64_t{s.prompt_len} + s.gen_len;
    s.tokens.resize(static_cast<size_t>(committed_tokens));
    s.rows = std::min<int64_t>(s.rows, s.gen_len > 0 ? committed_tokens - 1 : 0);
  }
  return s;
}

DatasetRows& TraceReader::rows_of(int seq, const std::string& rel,
                                  std::optional<NumberFormat> as) const {
  const WatchedRead watched(path_.native(), "datasets of sequence", seq);
  if (open_->seq != seq) {  // the diff goes sequence by sequence: keep one sequence's open
    open_->sets.clear();
    open_->seq = seq;
  }
  auto& slot = open_->sets[rel];
  if (!slot || (as && slot->elem() != *as)) {
    h5::Id d = dataset(seq, rel);
    const NumberFormat elem = as ? *as : h5::dataset_info(d.get()).elem;
    slot = std::make_unique<DatasetRows>(std::move(d), elem, open_->plain);
  }
  return *slot;
}

std::vector<float> TraceReader::hidden(int seq, const std::string& site, int64_t begin,
                                       int64_t count) const {
  std::vector<float> out;
  hidden(seq, site, begin, count, out);
  return out;
}

namespace {

// `count` rows of `width` values of `elem` as float in `buffer` (grown, never shrunk): `read`
// fills a pointer with them as stored; f16 and bf16 are widened exactly.
template <typename Read>
std::span<const float> as_floats(NumberFormat elem, int64_t count, int64_t width,
                                 std::vector<float>& buffer, const Read& read) {
  const size_t n = static_cast<size_t>(count * width);
  if (buffer.size() < n) buffer.resize(n);  // grown, never shrunk: no zeroing once it is big enough
  if (elem == NumberFormat::f32) {
    read(static_cast<void*>(buffer.data()));
  } else {
    thread_local std::vector<uint16_t> bits;
    if (bits.size() < n) bits.resize(n);
    read(static_cast<void*>(bits.data()));
    widen(bits.data(), buffer.data(), n, *storage_of(elem));
  }
  return {buffer.data(), n};
}

}  // namespace

std::span<const float> PlainHidden::read(int64_t begin, int64_t count,
                                         std::vector<float>& buffer) const {
  return as_floats(elem_, count, width_, buffer, [&](void* out) { rows_.read(begin, count, out); });
}

// The site's dataset, checked to hold hidden states (2-D, float) with rows [begin, begin+count).
DatasetRows& TraceReader::hidden_rows(int seq, const std::string& site, int64_t begin,
                                      int64_t count) const {
  DatasetRows& d = rows_of(seq, hidden_path(site), std::nullopt);
  const NumberFormat elem = d.elem();
  if (!storage_of(elem)) {  // an integer dataset
    throw Error(fmt::format("{} holds {} values: hidden states are float32, float16 or bf16",
                            hidden_path(site), traits(elem).trace_name),
                "the trace is damaged or was not written by driftscope");
  }
  if (d.shape().size() != 2 || begin < 0 || begin + count > d.shape()[0]) {
    throw Error(fmt::format("rows {}..{} of hidden/{} are outside its {} rows", begin,
                            begin + count, site, d.shape()[0]));
  }
  return d;
}

std::span<const float> TraceReader::hidden(int seq, const std::string& site, int64_t begin,
                                           int64_t count, std::vector<float>& buffer) const {
  const WatchedRead watched(path_.native(), "rows of sequence", seq);
  DatasetRows& d = hidden_rows(seq, site, begin, count);
  return as_floats(d.elem(), count, d.shape()[1], buffer,
                   [&](void* out) { d.read(begin, count, out); });
}

std::optional<PlainHidden> TraceReader::plain_hidden(int seq, const std::string& site,
                                                     int64_t rows) const {
  const DatasetRows& d = hidden_rows(seq, site, 0, rows);
  auto p = d.plain(0, rows);
  if (!p) return std::nullopt;
  return PlainHidden(std::move(*p), d.elem(), d.shape()[1]);
}

TopKRows TraceReader::topk(int seq, int64_t begin, int64_t count) const {
  const WatchedRead watched(path_.native(), "rows of sequence", seq);
  DatasetRows& ids = rows_of(seq, logits_path(kTopkIds), NumberFormat::i32);
  DatasetRows& vals = rows_of(seq, logits_path(kTopkLogits), NumberFormat::f32);
  TopKRows t;
  t.k = static_cast<int>(ids.shape().size() == 2 ? ids.shape()[1] : 0);
  t.ids.resize(static_cast<size_t>(count * t.k));
  t.logits.resize(static_cast<size_t>(count * t.k));
  ids.read(begin, count, t.ids.data());
  vals.read(begin, count, t.logits.data());
  return t;
}

std::vector<float> TraceReader::lse(int seq, int64_t begin, int64_t count) const {
  const WatchedRead watched(path_.native(), "rows of sequence", seq);
  DatasetRows& d = rows_of(seq, logits_path(kLse), NumberFormat::f32);
  std::vector<float> out(static_cast<size_t>(count));
  d.read(begin, count, out.data());
  return out;
}

std::vector<float> TraceReader::full_logits(int seq, int64_t begin, int64_t count) const {
  std::vector<float> out;
  const auto rows = full_logits(seq, begin, count, out);
  out.resize(rows.size());
  return out;
}

std::span<const float> TraceReader::full_logits(int seq, int64_t begin, int64_t count,
                                                std::vector<float>& buffer) const {
  const WatchedRead watched(path_.native(), "rows of sequence", seq);
  DatasetRows& d = rows_of(seq, logits_path(kFullLogits), NumberFormat::f32);
  const int64_t V = d.shape().size() == 2 ? d.shape()[1] : 0;
  return as_floats(NumberFormat::f32, count, V, buffer,
                   [&](void* out) { d.read(begin, count, out); });
}

bool TraceReader::has_kernels() const {
  const WatchedRead watched(path_.native(), "its kernel table");
  return has_kernel_table(file_->get());
}

std::vector<KernelRecord> TraceReader::kernels() const {
  const WatchedRead watched(path_.native(), "its kernel table");
  return read_kernel_table(file_->get(), path_.string());
}

}  // namespace ds::trace
