// SwmrFile: SWMR write mode, plain-mode windows, the writer's lock and its disk-space reserve.
#include "trace/swmr_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "common/io_error.h"
#include "common/output_file.h"

namespace fs = std::filesystem;

namespace ds::trace {

namespace {

// The chunk cache of every dataset: room for two chunks of about 256 KiB (chunk_rows_for), the
// one being filled and the one before; fully written chunks are evicted first (w0 = 1). HDF5's
// default (1 MiB per open dataset) multiplied by every open dataset was the writer's memory.
constexpr size_t kChunkCacheBytes = 512 * 1024;
constexpr size_t kMetadataCacheBytes = 8u << 20;

}  // namespace

SwmrFile::SwmrFile(const fs::path& path, bool replace) : path_(path), replace_(replace) {
  fapl_ = h5::Id(DS_H5_ID(H5Pcreate(H5P_FILE_ACCESS)));
  // SWMR needs the v110 file format; v110 as the upper bound too, so that a newer HDF5 does not
  // write a format that the HDF5 1.10 under h5py cannot read.
  DS_H5(H5Pset_libver_bounds(fapl_.get(), H5F_LIBVER_V110, H5F_LIBVER_V110));
  DS_H5(H5Pset_cache(fapl_.get(), 0, 521, kChunkCacheBytes, 1.0));
  // HDF5's metadata cache grows adaptively with the objects touched (every sequence's object
  // headers): capped so that it does not grow with the trace.
  H5AC_cache_config_t mdc{};
  mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
  DS_H5(H5Pget_mdc_config(fapl_.get(), &mdc));
  mdc.set_initial_size = true;
  mdc.initial_size = kMetadataCacheBytes / 4;
  mdc.min_size = kMetadataCacheBytes / 8;
  mdc.max_size = kMetadataCacheBytes;
  DS_H5(H5Pset_mdc_config(fapl_.get(), &mdc));
#if H5_VERSION_GE(1, 10, 7)
  // HDF5 drops its own lock in SWMR write mode; the writer holds one for the whole run instead
  // (readers then say "a run is still writing it", as before).
  DS_H5(H5Pset_file_locking(fapl_.get(), false, true));
  const bool own_lock = true;
#else
  const bool own_lock = false;
#endif
  // Created under a unique hidden name (common/output_file.h) and moved to `path` when the
  // structure is complete and SWMR starts: a kill before that leaves no file at `path` (nothing
  // was committed yet), not a broken one, and two runs never share a file.
  try {
    creating_ = std::make_unique<TempFile>(path);
    creating_->close();
  } catch (const std::system_error& e) {
    throw Error(fmt::format("cannot create trace '{}': {}", path.string(), e.code().message()),
                io_hint(e.code()));
  }
  const hid_t fid = H5Fcreate(creating_->path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl_.get());
  if (fid < 0) {
    const h5::OsError os = h5::kept_os_error();  // the system's reason, when HDF5 names one
    throw Error(fmt::format("cannot create trace '{}'{}", path.string(),
                            os.message.empty() ? "" : ": " + os.message),
                os.errnum != 0 ? io_hint(std::error_code(os.errnum, std::generic_category()))
                               : "check that the folder is writable and the disk not full");
  }
  fid_ = fid;
  if (own_lock) {
    // the lock follows the rename
    lock_fd_ = ::open(creating_->path().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (lock_fd_ >= 0 && ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(lock_fd_);
      lock_fd_ = -1;
    }
  }
  // An unnamed file beside the trace holding disk space: freed by the kernel even after SIGKILL.
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  reserve_fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (reserve_fd_ >= 0) {
    // A sixteenth of the free space, between 256 KiB and 16 MiB: on a small disk the reserve
    // must not take the room the steps need.
    const long long free = free_bytes();
    const long long bytes = std::clamp(free / 16, kReserveMinBytes, kReserveMaxBytes);
    if (free < 0 || ::posix_fallocate(reserve_fd_, 0, bytes) != 0) release_reserve();
  }
}

SwmrFile::~SwmrFile() {
  if (fid_ >= 0) H5Fclose(fid_);  // errors ignored (HDF5's printing is off)
  release_reserve();
  if (lock_fd_ >= 0) ::close(lock_fd_);
  creating_.reset();  // removes the hidden file if it was never committed
}

void check_trace_target(const fs::path& path, bool force) {
  const TargetState at = target_state(path);
  if (at == TargetState::absent) return;
  const std::string name = path.string();
  if (!force) {
    throw TraceTargetError(fmt::format("trace '{}' already exists", name),
                           "pass --force to overwrite it, or choose another -o path");
  }
  if (at == TargetState::held) {
    throw TraceTargetError(fmt::format("trace '{}' is being written by another run", name),
                           "wait for that run to end, or choose another -o path");
  }
  if (at == TargetState::other) {
    throw TraceTargetError(fmt::format("trace '{}' is not a regular file", name),
                           "--force replaces regular files only; choose another -o path");
  }
}

void SwmrFile::commit() {
  const std::string name = path_.string();
  check_trace_target(path_, replace_);  // again: something may have appeared since the start
  try {
    creating_->commit(path_, replace_);
  } catch (const std::system_error& e) {
    if (e.code().value() == EEXIST) {
      throw TraceTargetError(
          fmt::format("trace '{}' already exists", name),  // appeared since the check
          "pass --force to overwrite it, or choose another -o path");
    }
    throw Error(fmt::format("cannot create trace '{}': {}", name, e.code().message()),
                io_hint(e.code()));
  }
  creating_.reset();
}

void SwmrFile::reopen(bool swmr) {
  close();
  if (creating_) commit();
  const unsigned flags = H5F_ACC_RDWR | (swmr ? H5F_ACC_SWMR_WRITE : 0u);
  fid_ = DS_H5_ID(H5Fopen(path_.c_str(), flags, fapl_.get()));
  swmr_ = swmr;
}

void SwmrFile::close() {
  if (fid_ < 0) return;
  const ssize_t left = H5Fget_obj_count(fid_, H5F_OBJ_ALL & ~H5F_OBJ_FILE);
  if (left > 0) {
    throw Error(fmt::format("trace writer: {} objects still open when closing the file", left));
  }
  const hid_t id = std::exchange(fid_, H5I_INVALID_HID);
  swmr_ = false;
  DS_H5(H5Fclose(id));
}

void SwmrFile::release_reserve() {
  if (reserve_fd_ >= 0) ::close(reserve_fd_);
  reserve_fd_ = -1;
}

long long SwmrFile::free_bytes() const {
  struct statvfs st {};
  const fs::path dir = path_.has_parent_path() ? path_.parent_path() : fs::path(".");
  if (::statvfs(dir.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.f_bavail) * static_cast<long long>(st.f_frsize);
}

}  // namespace ds::trace
