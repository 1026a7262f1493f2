// The reference model's scored logits of one evaluation, kept on disk so that comparing
// many checkpoints against one reference on the same text and windows (quant-table.sh
// evaluates a dozen per table) runs the reference forward once instead of once per
// checkpoint. `fsq eval --compare REF --reference-cache DIR`.
//
// File: DIR/ref-<key>.f32, the scored rows in scoring order as raw float32 [rows, vocab].
// The key is a sha256 over everything the rows depend on (reference weights, the exact
// window token ids and scoring range, compute dtype, device, the fsq binary itself), so a
// changed input or a rebuilt fsq never reads stale rows. A miss writes the file atomically (temporary, fsync, rename)
// only when every window was computed, so an interrupted run leaves nothing behind.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "common/atomic_file.h"
#include "common/mapped_file.h"
#include "runtime/eval/perplexity.h"
#include "runtime/eval/windows.h"

namespace fsq {

struct ReferenceCacheKey {
  std::string ref_weights_sha256;
  std::string dtype;
  std::string device;
  std::string fsq_build;  // identifies the code that computes the rows (version + binary sha256)
};

// sha256 hex over the key's fields, the plan's scoring range and every window's ids.
std::string reference_cache_key(const ReferenceCacheKey& key, const WindowPlan& plan, int64_t vocab);

class ReferenceCache {
 public:
  // Opens DIR/ref-<key>.f32 when it exists (a hit), else prepares to write it. Throws
  // fsq::Error naming the file when it exists with the wrong size (delete it) or DIR is
  // missing.
  ReferenceCache(const std::filesystem::path& dir, const std::string& key, int64_t rows, int64_t vocab);

  bool hit() const { return mapped_.has_value(); }
  const std::filesystem::path& path() const { return path_; }

  // A hit: rows [first_row, first_row + count) as a float32 [count, vocab] tensor (a copy).
  at::Tensor read(int64_t first_row, int64_t count) const;
  // A miss: appends the next rows (float32 [n, vocab]); commit() after the last one.
  void append(const at::Tensor& rows);
  // Publishes the file; throws fsq::Error when fewer rows than planned were appended.
  void commit();

 private:
  std::filesystem::path path_;
  int64_t rows_ = 0, vocab_ = 0, written_ = 0;
  std::optional<MappedFile> mapped_;
  std::unique_ptr<AtomicFile> out_;
};

// What trim_reference_cache removed.
struct ReferenceCacheTrim {
  int64_t files = 0;
  uint64_t bytes = 0;
};

// Keeps the cache folder's ref-*.f32 files within max_bytes in all (0: no limit) by deleting
// the least recently used first (by modification time: a hit renews it, see touch()), never
// `keep` (the file this run used). Every rebuild of fsq changes the keys, so without a limit
// the folder only grows (a 2048 x 4-window SmolLM2 file is 1.6 GB). Other files are never
// touched. Throws fsq::Error naming a file it cannot delete.
ReferenceCacheTrim trim_reference_cache(const std::filesystem::path& dir, uint64_t max_bytes,
                                        const std::filesystem::path& keep);
// Marks a cache file as just used (its modification time becomes now).
void touch(const std::filesystem::path& file);

// The rows through the cache: read from the file on a hit; on a miss computed by `compute`
// and appended (call cache.commit() after the run). rows_per_window: scored rows per window.
RefRowsFn cached_reference_rows(ReferenceCache& cache, RefRowsFn compute, int64_t rows_per_window);

}  // namespace fsq
