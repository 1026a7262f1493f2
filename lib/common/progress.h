// Progress reporting for long work: a bar with rate and ETA on stderr when it is a
// terminal, a line every few seconds otherwise (CI logs), or nothing when disabled.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace fsq {

enum class ProgressMode { Auto, Bar, Lines, Off };

class Progress {
 public:
  Progress(std::string label, int64_t total, ProgressMode mode = ProgressMode::Auto);
  ~Progress();
  // Advances to `done` units; `detail` is shown after the counters (e.g. "ppl 5.70").
  void update(int64_t done, const std::string& detail = "");
  void finish(const std::string& detail = "");

  static void set_default_mode(ProgressMode mode);

 private:
  void draw(bool final);

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  int64_t drawn_done_ = -1;  // done_ at the last draw
  std::string detail_;
  ProgressMode mode_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace fsq
