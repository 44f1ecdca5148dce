// Thin RAII layer over the HDF5 C API for the trace writer and reader. Every call is checked;
// a failure throws ds::Error naming the HDF5 function and the innermost entry of HDF5's error
// stack (HDF5's own error printing is off; no source path reaches the user).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/number_format.h"

namespace ds::h5 {

hid_t check_id(hid_t id, const char* call);
herr_t check_status(herr_t s, const char* call);
#define DS_H5_ID(call) ::ds::h5::check_id((call), #call)
#define DS_H5(call) ::ds::h5::check_status((call), #call)

// The innermost entry of this thread's HDF5 error stack, where a failure was found ("incorrect
// metadata checksum after all read attempts"); "" when the stack is empty.
std::string last_error();

// Turns off HDF5's automatic error stack printing (once per process).
void silence_errors();

// From now on, every failing HDF5 call on this thread keeps HDF5's whole error stack (printed as
// HDF5 prints it) for kept_error_stack() instead of printing it to the user's terminal; the kept
// stack starts empty. Per thread: the library is thread-safe and its error stacks are per thread.
void keep_errors_in_this_thread();
// The stack the last failing HDF5 call on this thread left ("" when none failed since
// keep_errors_in_this_thread), for --verbose.
const std::string& kept_error_stack();
// The operating system's error in the kept stack, when HDF5 names one (a write or an open that
// failed: "errno = 28, error message = 'No space left on device'"): errno 0 and "" when none.
struct OsError {
  int errnum = 0;
  std::string message;
};
OsError kept_os_error();

// An owned HDF5 identifier, closed with the right H5?close on destruction.
class Id {
 public:
  Id() = default;
  explicit Id(hid_t id) : id_(id) {}
  ~Id() { reset(); }
  Id(Id&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)) {}
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  void reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// The HDF5 type of a trace dataset holding format `e` (common/number_format.h: its size and its
// name in a trace). f16 is IEEE half (h5py reads it as float16); bf16 is stored as uint16 with
// attribute dtype="bf16"; i64 holds counters such as /kernels/duration_ns.
hid_t file_type(NumberFormat e);  // not owned; valid for the process

bool exists(hid_t loc, const std::string& path);
Id create_group(hid_t loc, const std::string& name);
Id open_group(hid_t loc, const std::string& name);
std::vector<std::string> list_children(hid_t group);

void write_attr(hid_t obj, const std::string& name, const std::string& value);
void write_attr(hid_t obj, const std::string& name, int64_t value);
bool has_attr(hid_t obj, const std::string& name);
std::string read_attr_string(hid_t obj, const std::string& name);
int64_t read_attr_int(hid_t obj, const std::string& name);

// The filter pipeline of a growing dataset: 0 = none (chunks stored as they are); 1..9 = HDF5's
// shuffle, then deflate at that level. Both are built into every HDF5 (h5py needs no plugin).
// kDefaultDeflateLevel is the level `--compression deflate` means (traces themselves default to
// none: trace/writer.h).
constexpr int kDefaultDeflateLevel = 1;

// A chunked dataset of `rank` 1 or 2 ([rows] or [rows, width]) that grows along rows, with the
// filters of `deflate_level` (see above) and, with `checksum`, HDF5's Fletcher-32 filter last: a
// chunk whose bytes changed on disk then fails to read instead of reading as other values.
Id create_growing(hid_t loc, const std::string& name, NumberFormat e, int64_t width,
                  int64_t chunk_rows, int deflate_level, bool checksum = false);
// Appends `rows` rows (row-major, in the element's in-memory layout: int32, float, or uint16
// bits for F16/BF16) at row `at` (the dataset is extended to at + rows).
void write_rows(hid_t dset, NumberFormat e, int64_t at, int64_t rows, int64_t width,
                const void* data);
// Cuts a growing dataset back to `rows` rows, best effort (called while an error propagates):
// nothing is checked or thrown; a closed `dset` is left alone.
void cut_rows(const Id& dset, int64_t rows);

struct DatasetInfo {
  std::vector<int64_t> shape;
  NumberFormat elem = NumberFormat::f32;
};
DatasetInfo dataset_info(hid_t dset);
// Reads rows [begin, begin + count) into `out` (element layout as in write_rows; an integer
// dataset may be read as I32 or I64 whatever its stored width, HDF5 converts).
void read_rows(hid_t dset, NumberFormat e, int64_t begin, int64_t count, int64_t width, void* out);

// The shape and type class of any dataset (string datasets included), without classifying its
// element type as dataset_info does.
std::vector<int64_t> dataset_shape(hid_t dset);
H5T_class_t dataset_class(hid_t dset);

// Growing rank-1 datasets of variable-length UTF-8 strings (chunked and filtered like
// create_growing; h5py reads the elements as bytes, `.asstr()` as str).
Id create_growing_strings(hid_t loc, const std::string& name, int64_t chunk_rows,
                          int deflate_level);
void write_string_rows(hid_t dset, int64_t at, const std::vector<std::string>& rows);
// Rows [begin, begin + count) of a rank-1 string dataset, variable- or fixed-length.
std::vector<std::string> read_string_rows(hid_t dset, int64_t begin, int64_t count);

}  // namespace ds::h5
