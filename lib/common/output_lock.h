// One writer per output. Two fsq runs writing the same output (quantize's "<out>.partial"
// layers, a calibration file, an exported folder or file) would overwrite each other's work
// and publish a mix; each writer first takes an exclusive flock on "<out>.fsq-lock" beside
// the output, and a second run refuses in one line naming the first one's pid.
//
// flock belongs to the open file, so the kernel releases it when the holder exits in any
// way (SIGKILL included): a lock file left by a killed run is simply taken over by the next.
// The holder removes the file when it is done (and on SIGINT/SIGTERM through the staging
// registry, staging.h); a run that locked a file another run removed meanwhile notices
// (different inode) and locks the new one.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/output_path.h"

namespace fsq {

class OutputLock {
 public:
  OutputLock() = default;  // holds nothing
  // Locks "<out>.fsq-lock". Throws fsq::Error "<option> <out>: another fsq process (pid N)
  // is writing this output ..." when a live process holds it, or naming the lock file when
  // it cannot be created (or is not a regular file).
  OutputLock(const std::filesystem::path& out, const std::string& option);
  ~OutputLock();
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  bool held() const { return fd_ >= 0; }
  // "<out>.fsq-lock" ("dir/out/" names the folder "dir/out").
  static std::filesystem::path lock_path(const std::filesystem::path& out);

 private:
  void release();
  std::filesystem::path path_;
  int fd_ = -1;
};

// check_output_path, then the lock, then check_output_path again (another run may have
// finished the output between the first look and the lock). A file output of "" or "-"
// (stdout) is neither checked nor locked: the returned lock holds nothing.
OutputLock lock_output(const OutputRequest& out, const std::vector<std::filesystem::path>& inputs);

}  // namespace fsq
