#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "common/error.h"
#include "common/output_path.h"
#include "common/stale_temporaries.h"
#include "common/staging.h"

namespace fsq {
namespace {

std::string errno_text() { return std::strerror(errno); }

void fsync_dir(const std::filesystem::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some file systems do not allow it
  ::fsync(fd);
  ::close(fd);
}

// The rename would replace a device, FIFO or socket (or the link to one) with a regular file.
void refuse_special(const std::filesystem::path& dest) {
  const std::string special = special_file_kind(dest);
  if (!special.empty())
    throw Error(dest.string(), "is a " + special + ", not a regular file; fsq writes only regular files: give a new file path");
}

}  // namespace

AtomicFile::AtomicFile(const std::filesystem::path& dest) : dest_(dest) {
  static std::atomic<unsigned> counter{0};
  refuse_special(dest_);
  sweep_stale_staging(dest_, StagingKind::File);
  tmp_ = dest_;
  tmp_.replace_filename(staging_name(dest_.filename().string(), StagingKind::File, ::getpid(), counter++));
  record_temporary(tmp_);  // a SIGKILL from here on leaves it to the next run's sweep
  create_staging(tmp_, [&] {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(dest_.string(), "cannot create output file: " + errno_text());
  });
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) remove_staging(tmp_, [&] { ::unlink(tmp_.c_str()); });
}

void AtomicFile::write(std::span<const std::byte> data) {
  const std::byte* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(dest_.string(), "write failed: " + errno_text());
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void AtomicFile::write_at(uint64_t offset, std::span<const std::byte> data) {
  const std::byte* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::pwrite(fd_, p, left, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(dest_.string(), "write failed: " + errno_text());
    }
    p += n;
    offset += static_cast<uint64_t>(n);
    left -= static_cast<size_t>(n);
  }
}

void AtomicFile::write(std::string_view text) {
  write(std::span<const std::byte>(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) throw Error(dest_.string(), "fsync failed: " + errno_text());
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw Error(dest_.string(), "close failed: " + errno_text());
  }
  fd_ = -1;
  refuse_special(dest_);  // made since the constructor looked
  commit_staging(tmp_, [&] {
    if (::rename(tmp_.c_str(), dest_.c_str()) != 0) throw Error(dest_.string(), "rename failed: " + errno_text());
  });
  committed_ = true;
  fsync_dir(dest_.parent_path());
}

void write_file_atomic(const std::filesystem::path& dest, std::string_view contents) {
  AtomicFile f(dest);
  f.write(contents);
  f.commit();
}

void copy_file_atomic(const std::filesystem::path& from, const std::filesystem::path& dest) {
  std::ifstream in(from, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in || in.bad()) throw Error(from.string(), "cannot read file");
  write_file_atomic(dest, bytes.str());
}

namespace {

namespace fs = std::filesystem;

// "dir/out/" names the folder "dir/out" (its filename() would be empty).
fs::path folder_name(const fs::path& p) { return p.has_filename() ? p : p.parent_path(); }

}  // namespace

void AtomicDir::check_destination(const fs::path& dest_arg) {
  const fs::path dest = folder_name(dest_arg);
  std::error_code ec;
  if (const std::string special = special_file_kind(dest); !special.empty())
    throw Error(dest.string(), "is a " + special + ", not a folder; choose a new output folder");
  if (fs::exists(dest, ec) && !(fs::is_directory(dest, ec) && fs::is_empty(dest, ec)))
    throw Error(dest.string(), "output folder exists and is not empty; choose a new one or remove it");
  if (!fs::is_directory(parent_folder_of(dest), ec)) throw Error(dest.string(), "parent folder does not exist");
}

AtomicDir::AtomicDir(const fs::path& dest) : dest_(folder_name(dest)) {
  check_destination(dest_);
  sweep_stale_staging(dest_, StagingKind::Folder);
  staging_ = parent_folder_of(dest_) / staging_name(dest_.filename().string(), StagingKind::Folder, ::getpid());
  record_temporary(staging_);
  create_staging(staging_, [&] {
    std::error_code ec;
    fs::remove_all(staging_, ec);  // a crashed process of the same pid left it
    if (!fs::create_directory(staging_, ec))
      throw Error(staging_.string(), "cannot create folder: " + (ec ? ec.message() : "it already exists"));
  });
}

AtomicDir::~AtomicDir() {
  if (committed_) return;
  remove_staging(staging_, [&] {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  });
}

void AtomicDir::commit() {
  fsync_dir(staging_);
  std::error_code ec;
  // An empty destination folder (one the caller made) is replaced; remove() refuses a
  // folder that something filled since the constructor checked it.
  if (fs::exists(dest_, ec)) {
    fs::remove(dest_, ec);
    if (ec) throw Error(dest_.string(), "cannot replace the output folder: " + ec.message());
  }
  commit_staging(staging_, [&] {
    fs::rename(staging_, dest_, ec);
    if (ec) throw Error(dest_.string(), "cannot move the finished folder into place: " + ec.message());
  });
  committed_ = true;
  fsync_dir(parent_folder_of(dest_));
}

}  // namespace fsq
