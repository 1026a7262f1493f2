// Atomic file output: write to a temporary file in the destination folder, fsync, rename
// over the destination, fsync the folder. Readers never see a partial file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

namespace fsq {

class AtomicFile {
 public:
  // Creates "<dest>.tmp.<pid>.<n>" beside dest. Throws fsq::Error naming dest when the
  // folder is missing or not writable.
  explicit AtomicFile(const std::filesystem::path& dest);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> data);
  void write(std::string_view text);
  // fsync, rename onto dest, fsync the folder.
  void commit();

 private:
  std::filesystem::path dest_;
  std::filesystem::path tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Whole-file convenience wrapper.
void write_file_atomic(const std::filesystem::path& dest, std::string_view contents);

}  // namespace fsq
