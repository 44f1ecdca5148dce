// Read-only memory mapping of a whole file (POSIX mmap).
#include "src/model/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"

namespace ds {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  // O_NONBLOCK: a FIFO is refused below instead of waiting here for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw Error(fmt::format("cannot open '{}': {}", path.string(), std::strerror(errno)),
                "check the path (and --model / --tokenizer)");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(fmt::format("'{}' is not a regular file", path.string()),
                "model and tokenizer files are read by mapping them: give a file, not a pipe "
                "or a device");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error(fmt::format("cannot map '{}': {}", path.string(), std::strerror(err)));
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
}

void MappedFile::populate() const {
  if (data_ == nullptr) return;
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif
  void* p = const_cast<std::byte*>(data_);
  if (::madvise(p, size_, MADV_POPULATE_READ) != 0) ::madvise(p, size_, MADV_WILLNEED);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

void release_pages(const void* p, size_t bytes) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace ds
