// Read-only memory mapping of a whole file (RAII).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace ds {

class MappedFile {
 public:
  // Throws ds::Error when the file is missing or cannot be mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  // Maps every page now (MADV_POPULATE_READ; read-ahead where the kernel lacks it) instead of one
  // page fault at a time on first use: for files about to be read whole, such as weights.
  void populate() const;
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Gives back the resident pages wholly inside [p, p + bytes) of a read-only file mapping
// (madvise MADV_DONTNEED): they leave this process's memory and are read again from the page
// cache or the file if touched later. For mapped values a copy has replaced.
void release_pages(const void* p, size_t bytes);

}  // namespace ds
