// Atomic file output: write to a temporary file in the destination folder, fsync, rename
// over the destination, fsync the folder. Readers never see a partial file. AtomicDir does
// the same for a whole output folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

namespace fsq {

class AtomicFile {
 public:
  // Creates "<dest>.tmp.<pid>.<n>" beside dest, first removing those that dead processes
  // left there (staging.h). Throws fsq::Error naming dest when the folder is missing or not
  // writable, or when dest is a device, FIFO or socket (or a link to one): renaming over it
  // would replace the special file, so it is refused here and again in commit().
  explicit AtomicFile(const std::filesystem::path& dest);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> data);
  void write(std::string_view text);
  // Writes at `offset` from the start of the file (pwrite), leaving the sequential position
  // alone: for files whose parts are made out of order (lib/calib/calib_file_writer.h).
  void write_at(uint64_t offset, std::span<const std::byte> data);
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

// Copies the bytes of the regular file `from` to `dest` through AtomicFile. Throws
// fsq::Error naming the file that cannot be read or written.
void copy_file_atomic(const std::filesystem::path& from, const std::filesystem::path& dest);

// An output folder that appears whole or not at all. Files are written into a staging
// folder "<dest>.tmp-<pid>" beside dest (so the final rename stays on one file system);
// commit() fsyncs it, renames it onto dest and fsyncs the parent. Until then dest is
// untouched, and the destructor removes the staging folder with everything in it.
class AtomicDir {
 public:
  // Throws fsq::Error naming dest when it exists and is not an empty folder (an empty one
  // is replaced on commit) or when its parent folder is missing. Creates nothing, so a
  // writer can refuse a busy destination before any expensive work.
  static void check_destination(const std::filesystem::path& dest);

  // check_destination, then creates the staging folder (replacing a stale one left by a
  // crashed process of the same pid, and removing those of dead processes: staging.h).
  // "dir/out/" names the folder "dir/out".
  explicit AtomicDir(const std::filesystem::path& dest);
  ~AtomicDir();
  AtomicDir(const AtomicDir&) = delete;
  AtomicDir& operator=(const AtomicDir&) = delete;

  const std::filesystem::path& dest() const { return dest_; }
  // Where to write the folder's files.
  const std::filesystem::path& staging() const { return staging_; }
  // Throws fsq::Error naming dest when the rename fails (the staging folder is removed).
  void commit();

 private:
  std::filesystem::path dest_;
  std::filesystem::path staging_;
  bool committed_ = false;
};

}  // namespace fsq
