#include "runtime/eval/reference_cache.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"

namespace fsq {

std::string reference_cache_key(const ReferenceCacheKey& key, const WindowPlan& plan, int64_t vocab) {
  // One string holding every input; the window ids go in as raw bytes.
  std::string s = "fsq-reference-rows-v1\n" + key.ref_weights_sha256 + "\n" + key.dtype + "\n" + key.device +
                  "\n" + key.fsq_build + "\nvocab " + std::to_string(vocab) + "\nseq_len " +
                  std::to_string(plan.seq_len) + "\nwindows " + std::to_string(plan.windows.size()) + "\n";
  for (const Window& w : plan.windows) {
    s += std::to_string(w.score_begin) + " " + std::to_string(w.score_end) + "\n";
    s.append(reinterpret_cast<const char*>(w.ids.data()), w.ids.size() * sizeof(int32_t));
  }
  return sha256_hex(std::string_view(s));
}

ReferenceCache::ReferenceCache(const std::filesystem::path& dir, const std::string& key, int64_t rows,
                               int64_t vocab)
    : path_(dir / ("ref-" + key + ".f32")), rows_(rows), vocab_(vocab) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(dir.string(), "--reference-cache must be an existing folder");
  if (std::filesystem::exists(path_, ec)) {
    MappedFile f(path_);
    const uint64_t want = static_cast<uint64_t>(rows) * static_cast<uint64_t>(vocab) * sizeof(float);
    if (f.size() != want)
      throw Error(path_.string(), "reference cache file has the wrong size (interrupted copy?); delete it",
                  std::to_string(want) + " bytes", std::to_string(f.size()) + " bytes");
    mapped_.emplace(std::move(f));
  } else {
    out_ = std::make_unique<AtomicFile>(path_);
  }
}

at::Tensor ReferenceCache::read(int64_t first_row, int64_t count) const {
  if (!mapped_ || first_row < 0 || count < 0 || first_row + count > rows_)
    throw Error(path_.string(), "reference cache read out of range");
  at::Tensor t = at::empty({count, vocab_}, at::kFloat);
  const size_t row_bytes = static_cast<size_t>(vocab_) * sizeof(float);
  std::memcpy(t.data_ptr<float>(), mapped_->data() + static_cast<size_t>(first_row) * row_bytes,
              static_cast<size_t>(count) * row_bytes);
  return t;
}

void ReferenceCache::append(const at::Tensor& rows) {
  if (!out_) throw Error(path_.string(), "reference cache is read-only (it was a hit)");
  if (rows.dim() != 2 || rows.size(1) != vocab_ || written_ + rows.size(0) > rows_)
    throw Error(path_.string(), "reference rows do not match the planned cache shape");
  at::Tensor c = rows.to(at::kCPU, at::kFloat).contiguous();
  out_->write(std::span<const std::byte>(reinterpret_cast<const std::byte*>(c.data_ptr<float>()),
                                         static_cast<size_t>(c.numel()) * sizeof(float)));
  written_ += rows.size(0);
}

void ReferenceCache::commit() {
  if (!out_) return;
  if (written_ != rows_)
    throw Error(path_.string(), "reference cache incomplete", std::to_string(rows_) + " rows",
                std::to_string(written_) + " rows");
  out_->commit();
  out_.reset();
}

ReferenceCacheTrim trim_reference_cache(const std::filesystem::path& dir, uint64_t max_bytes,
                                        const std::filesystem::path& keep) {
  ReferenceCacheTrim trimmed;
  if (max_bytes == 0) return trimmed;
  struct Entry {
    std::filesystem::file_time_type used;
    std::filesystem::path path;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !name.starts_with("ref-") || !name.ends_with(".f32")) continue;
    entries.push_back({e.last_write_time(), e.path(), static_cast<uint64_t>(e.file_size())});
    total += entries.back().bytes;
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.used != b.used ? a.used < b.used : a.path < b.path;
  });
  for (const Entry& e : entries) {
    if (total <= max_bytes) break;
    if (std::filesystem::equivalent(e.path, keep)) continue;
    std::error_code ec;
    if (!std::filesystem::remove(e.path, ec) || ec)
      throw Error(e.path.string(), "cannot delete this old reference cache file: " + ec.message());
    total -= e.bytes;
    trimmed.files += 1;
    trimmed.bytes += e.bytes;
  }
  return trimmed;
}

void touch(const std::filesystem::path& file) {
  std::error_code ec;  // best effort: a read-only cache still serves its rows
  std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now(), ec);
}

RefRowsFn cached_reference_rows(ReferenceCache& cache, RefRowsFn compute, int64_t rows_per_window) {
  if (cache.hit())
    return [&cache, rows_per_window](const at::Tensor&, size_t first, size_t count) {
      return cache.read(static_cast<int64_t>(first) * rows_per_window, static_cast<int64_t>(count) * rows_per_window);
    };
  return [&cache, compute = std::move(compute)](const at::Tensor& ids, size_t first, size_t count) {
    at::Tensor rows = compute(ids, first, count);
    cache.append(rows);
    return rows;
  };
}

}  // namespace fsq
