// The trace file as the writer holds it (docs/trace-format.md "Crash consistency"): an HDF5
// file in SWMR write mode, whose on-disk image HDF5 keeps openable at every moment, reopened
// without SWMR for the short moments in which new groups, datasets or string attributes are
// created; an advisory lock that tells readers a run is writing it; and a disk-space reserve
// given back on a write failure, so that the file can still be closed on a full disk.
#pragma once

#include <hdf5.h>

#include <filesystem>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/output_file.h"
#include "trace/h5.h"

namespace ds::trace {

class SwmrFile {
 public:
  // Creates (truncating) the file in plain mode (libver v110, HDF5's own locking off: the lock
  // is ours), takes the lock, and sets aside the reserve.
  // With `replace` (--force) the first reopen may replace a regular file at `path` that no run
  // holds; without, it fails if anything appeared there meanwhile.
  SwmrFile(const std::filesystem::path& path, bool replace);
  ~SwmrFile();  // closes the file (errors ignored), drops the lock and the reserve
  SwmrFile(const SwmrFile&) = delete;
  SwmrFile& operator=(const SwmrFile&) = delete;

  hid_t id() const { return fid_; }
  bool swmr() const { return swmr_; }
  bool is_open() const { return fid_ >= 0; }

  // Close and reopen, in SWMR write mode or in plain read-write mode. Every object the caller
  // opened in the file must be closed before (checked: a leftover is a bug, ds::Error).
  void start_swmr() { reopen(true); }
  void leave_swmr() { reopen(false); }
  // Closes the file (a clean close clears the SWMR status flags). Throws on failure.
  void close();
  // Gives the reserved disk space back (after a write failure). Idempotent.
  void release_reserve();
  // Bytes free on the file's file system (statvfs); -1 when unknown.
  long long free_bytes() const;

 private:
  void reopen(bool swmr);
  void commit();  // the hidden file onto path_, checked as `replace` allows
  std::filesystem::path path_;
  bool replace_ = false;
  std::unique_ptr<TempFile> creating_;  // the hidden file until the first reopen
  h5::Id fapl_;
  hid_t fid_ = H5I_INVALID_HID;  // raw: a failed H5Fclose must not be retried by a destructor
  bool swmr_ = false;
  int lock_fd_ = -1;
  int reserve_fd_ = -1;
};

// Why a trace cannot go to its path (exists, held by another run, not a regular file): reported
// as it is, not as a failed write.
struct TraceTargetError : Error {
  using Error::Error;
};

// Refuses (TraceTargetError) a trace path that cannot be written: without `force` anything there
// ("already exists"); with it, anything but a regular file, or a trace another run is writing
// (its writer's lock is held). Checked before a run starts and again when the file is committed.
void check_trace_target(const std::filesystem::path& path, bool force);

// Disk space set aside by SwmrFile: a sixteenth of the free space, within these bounds.
inline constexpr long long kReserveMinBytes = 256ll << 10, kReserveMaxBytes = 16ll << 20;

}  // namespace ds::trace
