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

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fsq
