#include "common/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/staging.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

std::string lock_errno_text() { return std::strerror(errno); }

// The pid the holder wrote into the lock file; it writes it just after taking the lock, so
// an empty file is read again for a moment. 0 when none can be read.
long holder_pid(int fd) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n > 0) {
      char* end = nullptr;
      const long pid = std::strtol(buf, &end, 10);
      if (pid > 0 && end != buf && (*end == '\n' || *end == '\0')) return pid;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

}  // namespace

fs::path OutputLock::lock_path(const fs::path& out) {
  const fs::path name = out.has_filename() ? out : out.parent_path();
  fs::path lock = name;
  lock += ".fsq-lock";  // beside it, spelled as the output was
  return lock;
}

OutputLock::OutputLock(const fs::path& out, const std::string& option) : path_(lock_path(out)) {
  const std::string where = option + " " + out.string();
  // A few rounds at most: each retry means another run removed the file we had opened.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
      throw Error(where, "cannot create the lock file " + path_.string() + ": " + lock_errno_text() +
                             "; check that its folder is writable (and that nothing else has that name)");
    struct stat opened {};
    if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
      ::close(fd);
      throw Error(where, "the lock file " + path_.string() + " is not a regular file; remove it or choose another path");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        throw Error(where, "cannot lock " + path_.string() + ": " + std::strerror(err));
      }
      const long pid = holder_pid(fd);
      ::close(fd);
      throw Error(where, "another fsq process " + (pid > 0 ? "(pid " + std::to_string(pid) + ") " : std::string()) +
                             "is writing this output (lock " + path_.string() +
                             "); wait for it to finish, or choose another path");
    }
    // The holder we waited out may have removed the file after our open: then we locked a
    // file nobody else will see; lock the one at the path now.
    struct stat now {};
    if (::stat(path_.c_str(), &now) != 0 || now.st_ino != opened.st_ino || now.st_dev != opened.st_dev) {
      ::close(fd);
      continue;
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      const std::string why = lock_errno_text();
      ::unlink(path_.c_str());
      ::close(fd);
      throw Error(where, "cannot write the lock file " + path_.string() + ": " + why);
    }
    // Registered so that SIGINT/SIGTERM removes it too (the flock goes with the process).
    create_staging(path_, [] {});
    fd_ = fd;
    return;
  }
  throw Error(where, "cannot lock " + path_.string() + ": it keeps being replaced; is another fsq process starting?");
}

void OutputLock::release() {
  if (fd_ < 0) return;
  // Remove while still holding the lock, then let it go: a run that opened the old file
  // meanwhile sees the inode change and starts over.
  remove_staging(path_, [&] { ::unlink(path_.c_str()); });
  ::close(fd_);
  fd_ = -1;
}

OutputLock::~OutputLock() { release(); }

OutputLock::OutputLock(OutputLock&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

OutputLock lock_output(const OutputRequest& out, const std::vector<fs::path>& inputs) {
  if (out.kind == OutputKind::File && (out.path.empty() || out.path == "-")) return {};
  check_output_path(out, inputs);
  OutputLock lock(out.path, out.option);
  check_output_path(out, inputs);  // throws: the lock is released on the way out
  return lock;
}

}  // namespace fsq
