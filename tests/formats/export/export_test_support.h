// Builds small packed checkpoints on disk for the exporter tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../quant/packed_test_support.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/quant_types.h"

namespace fsq::test {

// Weights whose rows and groups have different offsets, so zero points vary from 0 to
// 15 across columns and groups (plain N(0, 0.1) weights give nearly one zero point).
inline std::vector<float> shifted_weights(int64_t rows, int64_t cols, uint32_t seed) {
  std::vector<float> w = gaussian(rows, cols, seed);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      w[r * cols + c] += 0.06f * static_cast<float>((r * 7 + c / 32 + seed) % 9) - 0.24f;
  return w;
}

// A packed checkpoint to write. Owns the dense tensors' bytes: the TensorToWrite spans
// point into the inner vectors, whose buffers stay put when `storage` grows. Not copyable
// (a copy's spans would point into the original).
struct PackedSource {
  std::vector<std::vector<std::byte>> storage;
  PackedCheckpointToWrite ckpt;

  PackedSource() {
    ckpt.source_config = nlohmann::json::parse(llama_config({{"tie_word_embeddings", false}}));
    ckpt.source_sha256 = std::string(64, 'c');
  }
  PackedSource(const PackedSource&) = delete;
  PackedSource& operator=(const PackedSource&) = delete;

  template <typename T>
  void add_dense(const std::string& name, DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
    storage.push_back(to_bytes(values));
    ckpt.dense.push_back({name, dtype, std::move(shape), storage.back()});
  }

  void add_linear(const std::string& name, const std::string& type, int64_t rows, int64_t cols, uint32_t seed) {
    const std::vector<float> w = shifted_weights(rows, cols, seed);
    ckpt.linears.push_back({name, quantize_uniform(w.data(), rows, cols, find_uniform_quant(type)), "rtn", {}, std::nullopt});
  }

  // Writes to `dir` and opens it the way `fsq export` does.
  PackedCheckpoint write(const std::filesystem::path& dir) {
    write_packed_checkpoint(ckpt, dir);
    return PackedCheckpoint::open(dir);
  }
};

}  // namespace fsq::test
