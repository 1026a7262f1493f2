#include "common/progress.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace fsq {
namespace {

std::atomic<ProgressMode> g_default_mode{ProgressMode::Auto};

std::string format_seconds(double s) {
  if (s < 0 || s > 1e7) return "?";
  char buf[32];
  int total = static_cast<int>(s + 0.5);
  if (total >= 3600)
    std::snprintf(buf, sizeof buf, "%dh%02dm", total / 3600, (total / 60) % 60);
  else
    std::snprintf(buf, sizeof buf, "%d:%02d", total / 60, total % 60);
  return buf;
}

}  // namespace

void Progress::set_default_mode(ProgressMode mode) { g_default_mode = mode; }

Progress::Progress(std::string label, int64_t total, ProgressMode mode)
    : label_(std::move(label)), total_(total), mode_(mode) {
  if (mode_ == ProgressMode::Auto) mode_ = g_default_mode;
  if (mode_ == ProgressMode::Auto) mode_ = ::isatty(STDERR_FILENO) ? ProgressMode::Bar : ProgressMode::Lines;
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() {
  if (!finished_) finish();
}

void Progress::update(int64_t done, const std::string& detail) {
  done_ = done;
  detail_ = detail;
  // The final state is drawn once, by finish(), so a bar always ends at 100 %.
  if (total_ > 0 && done_ >= total_) return;
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_draw_).count();
  double min_interval = mode_ == ProgressMode::Bar ? 0.1 : 5.0;
  if (since >= min_interval) {
    last_draw_ = now;
    draw(false);
  }
}

void Progress::finish(const std::string& detail) {
  if (finished_) return;
  finished_ = true;
  // A log line for this very state was just written: do not repeat it.
  if (mode_ == ProgressMode::Lines && detail.empty() && drawn_done_ == done_) return;
  if (!detail.empty()) detail_ = detail;
  draw(true);
}

void Progress::draw(bool final) {
  if (mode_ == ProgressMode::Off) return;
  drawn_done_ = done_;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double frac = total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 0.0;
  double eta = done_ > 0 ? elapsed * (1.0 - frac) / frac : -1.0;
  char counters[96];
  std::snprintf(counters, sizeof counters, "%lld/%lld %s<%s", static_cast<long long>(done_),
                static_cast<long long>(total_), format_seconds(elapsed).c_str(),
                final ? "0:00" : format_seconds(eta).c_str());
  if (mode_ == ProgressMode::Bar) {
    constexpr int kWidth = 28;
    int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s [%s] %3d%% %s %s\033[K%s", label_.c_str(), bar.c_str(),
                 static_cast<int>(frac * 100), counters, detail_.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s %3d%% %s %s\n", label_.c_str(), static_cast<int>(frac * 100), counters,
                 detail_.c_str());
  }
  std::fflush(stderr);
}

}  // namespace fsq
