// Builds small packed checkpoints on disk for the exporter tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "../quant/packed_test_support.h"
#include "formats/packed_checkpoint.h"
#include "common/error.h"
#include "common/half.h"
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

  // Moves the dense matrix `name` + ".weight" (F32 or BF16) into the quantized embedding/head
  // matrices (fsq quantize --head-bits) as `type`.
  void quantize_head(const std::string& name, const std::string& type) {
    const auto it = std::find_if(ckpt.dense.begin(), ckpt.dense.end(),
                                 [&](const TensorToWrite& t) { return t.name == name + ".weight"; });
    ASSERT_NE(it, ckpt.dense.end()) << name;
    const int64_t rows = it->shape[0], cols = it->shape[1];
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < w.size(); ++i) {
      if (it->dtype == DType::F32) std::memcpy(&w[i], it->data.data() + 4 * i, 4);
      else w[i] = bf16_to_f32(static_cast<uint16_t>(static_cast<uint8_t>(it->data[2 * i]) |
                                                     static_cast<uint8_t>(it->data[2 * i + 1]) << 8));
    }
    ckpt.dense.erase(it);
    ckpt.head.push_back({name, quantize_uniform(w.data(), rows, cols, find_uniform_quant(type)), "rtn", {}, std::nullopt});
  }

  // Writes to `dir` and opens it the way `fsq export` does.
  PackedCheckpoint write(const std::filesystem::path& dir) {
    write_packed_checkpoint(ckpt, dir);
    return PackedCheckpoint::open(dir);
  }
};

inline constexpr int64_t kExportHidden = 128;
inline constexpr int64_t kExportVocab = 16;

// A small model in every dense dtype the packed format holds (f32 embeddings and norm, a bf16
// head, an f16 bias), one unquantized linear (down_proj), and quantized linears of `type`
// whose output counts (8, 16, 24, 64) cover one, several and an odd number of packed words;
// v_proj has 2 * `in` inputs, up_proj gets `mlp_type` when given.
struct SmallModelSource : PackedSource {
  explicit SmallModelSource(const std::string& type, int64_t in = kExportHidden, const std::string& mlp_type = "") {
    const int64_t h = kExportHidden, v = kExportVocab;
    add_dense("model.embed_tokens.weight", DType::F32, {v, h}, gaussian(v, h, 1));
    add_dense("model.norm.weight", DType::F32, {h}, std::vector<float>(h, 1.0f));
    std::vector<uint16_t> head(v * h), bias(64);
    for (size_t i = 0; i < head.size(); ++i) head[i] = f32_to_bf16(0.01f * static_cast<float>(i % 97) - 0.4f);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = f32_to_f16(0.125f * static_cast<float>(i) - 3.0f);
    add_dense("lm_head.weight", DType::BF16, {v, h}, head);
    add_dense("model.layers.0.self_attn.q_proj.bias", DType::F16, {64}, bias);
    add_dense("model.layers.0.mlp.down_proj.weight", DType::F32, {h, 32}, gaussian(h, 32, 2));
    add_linear("model.layers.0.self_attn.q_proj", type, 64, in, 3);
    add_linear("model.layers.0.self_attn.k_proj", type, 16, in, 4);
    add_linear("model.layers.0.self_attn.v_proj", type, 8, 2 * in, 5);
    add_linear("model.layers.0.mlp.up_proj", mlp_type.empty() ? type : mlp_type, 24, in, 6);
  }
};

// Writes `src` to `packed_dir`, runs `export_fn` on it and expects an fsq::Error on one line
// that starts with the packed folder and contains `problem`, with nothing but the packed
// folder left in `tmp`.
inline void expect_export_refused(const std::function<void(const PackedCheckpoint&)>& export_fn, PackedSource& src,
                                  const std::filesystem::path& tmp, const std::filesystem::path& packed_dir,
                                  const std::string& problem) {
  const PackedCheckpoint packed = src.write(packed_dir);
  try {
    export_fn(packed);
    ADD_FAILURE() << "accepted: " << problem;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(problem), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind(packed_dir.string() + ": ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  std::set<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(tmp)) left.insert(e.path().filename().string());
  EXPECT_EQ(left, std::set<std::string>{packed_dir.filename().string()}) << problem;
}

}  // namespace fsq::test
