// Read-only memory map of a whole file (zero-copy views for checkpoint readers).
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace fsq {

class MappedFile {
 public:
  // Throws fsq::Error naming the path when it is missing, not a regular file, or unmappable.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

  // Lets the kernel drop this process's resident pages of the map (madvise MADV_DONTNEED):
  // a loader that copied what it needs out of them stops counting them in its RSS. The
  // contents stay readable: a later read faults them in again from the file.
  void drop_resident_pages() const;

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// As MappedFile::drop_resident_pages for the pages holding [p, p + n) only: a streaming
// loader gives back one layer's pages once it has copied them. [p, p + n) must lie inside a
// MappedFile's mapping (whole pages of it are dropped, which a mapping always covers);
// never pass other memory: for anonymous memory MADV_DONTNEED discards the contents.
void drop_mapped_pages(const std::byte* p, size_t n);

}  // namespace fsq
