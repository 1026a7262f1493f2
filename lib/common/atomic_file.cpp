#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/error.h"

namespace fsq {
namespace {

std::string errno_text() { return std::strerror(errno); }

void fsync_dir(const std::filesystem::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some file systems do not allow it
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

AtomicFile::AtomicFile(const std::filesystem::path& dest) : dest_(dest) {
  static std::atomic<unsigned> counter{0};
  tmp_ = dest_;
  tmp_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(dest_.string(), "cannot create output file: " + errno_text());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
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
  if (::rename(tmp_.c_str(), dest_.c_str()) != 0)
    throw Error(dest_.string(), "rename failed: " + errno_text());
  committed_ = true;
  fsync_dir(dest_.parent_path());
}

void write_file_atomic(const std::filesystem::path& dest, std::string_view contents) {
  AtomicFile f(dest);
  f.write(contents);
  f.commit();
}

}  // namespace fsq
