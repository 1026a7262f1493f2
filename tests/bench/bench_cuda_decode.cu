// End-to-end decode speed of the CUDA decoder (runtime/cuda/decode_model.h) at LLaMA-2-7B's
// shape with random packed weights: speed does not depend on the values, and no 7B checkpoint
// is available offline. Per batch size: tokens/s over a greedy-free run of steps from position
// 0 (each step: ids in, one CUDA-graph replay, logits out), and the ratio to the
// bandwidth-limited ideal, the bytes a step reads (every packed matrix but the embedding, the
// embedding rows it looks up, the KV cache up to the step's position) over the read kernel's
// GB/s measured in the same run.
//
//   bench_cuda_decode [--layers 32] [--bits 4|3|8|16] [--lut] [--steps 128] [--batches 1,4,16]
//
// --bits 16: an fp16 model (linears, embedding and head), the baseline. --lut: the linears are
// LUT-<bits> (bits 3 or 4, SqueezeLLM) with a 0.45 % CSR part.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/half.h"
#include "cuda_bench_support.cuh"
#include "runtime/cuda/cuda_backend.h"
#include "rope_tables.h"
#include "runtime/cuda/decode_model.h"

namespace {

using fsq::cuda::ActType;

// LLaMA-2-7B.
constexpr int64_t kHidden = 4096, kInter = 11008, kHeads = 32, kKvHeads = 32, kDim = 128, kVocab = 32000;

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A random packed matrix's arrays: codes are any bits, scales small, zero points mid-range.
struct Matrix {
  std::vector<uint32_t> words;
  std::vector<uint16_t> scales;
  std::vector<uint8_t> zeros;
  fsq::cpu::UniformWeightsView view;
  Matrix(int64_t rows, int64_t cols, int bits, int64_t group, bool asymmetric, uint64_t seed) {
    view.rows = rows, view.cols = cols, view.bits = bits, view.group_cols = group;
    view.words_per_row = (cols * bits + 31) / 32;
    words.resize(static_cast<size_t>(rows * view.words_per_row));
    for (size_t i = 0; i < words.size(); i += 2) {
      const uint64_t r = splitmix64(seed);
      words[i] = static_cast<uint32_t>(r);
      if (i + 1 < words.size()) words[i + 1] = static_cast<uint32_t>(r >> 32);
    }
    const int64_t groups = rows * (cols / group);
    scales.resize(static_cast<size_t>(groups));
    for (uint16_t& s : scales) s = fsq::f32_to_f16(0.001f + 0.01f * static_cast<float>(splitmix64(seed) % 1000) / 1000);
    if (asymmetric) zeros.assign(static_cast<size_t>(groups), static_cast<uint8_t>(1u << (bits - 1)));
    view.words = words.data();
    view.scales = scales.data();
    view.zeros = asymmetric ? zeros.data() : nullptr;
  }
  size_t bytes() const { return words.size() * 4 + scales.size() * 2 + zeros.size(); }
  size_t row_bytes() const { return bytes() / static_cast<size_t>(view.rows); }
};

// A random LUT matrix with a CSR part of about `sparse` of each row's columns (u16 columns).
struct LutMatrix {
  std::vector<uint32_t> words;
  std::vector<uint16_t> lut, col, val;
  std::vector<int32_t> row_ptr;
  fsq::cpu::LutWeightsView view;
  LutMatrix(int64_t rows, int64_t cols, int bits, double sparse, uint64_t seed) {
    view.rows = rows, view.cols = cols, view.bits = bits;
    view.words_per_row = (cols * bits + 31) / 32;
    words.resize(static_cast<size_t>(rows * view.words_per_row));
    for (uint32_t& w : words) w = static_cast<uint32_t>(splitmix64(seed));
    lut.resize(static_cast<size_t>(rows << bits));
    for (uint16_t& c : lut) c = fsq::f32_to_f16(0.01f * (static_cast<float>(splitmix64(seed) % 200) - 100.f) / 100);
    const auto per_row = static_cast<int64_t>(sparse * static_cast<double>(cols));
    row_ptr.push_back(0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < per_row; ++j) {  // evenly spread, rotated per row: sorted and distinct
        col.push_back(static_cast<uint16_t>((j * (cols / per_row) + r % (cols / per_row)) % cols));
        val.push_back(fsq::f32_to_f16(0.05f));
      }
      row_ptr.push_back(static_cast<int32_t>(col.size()));
    }
    view.words = words.data();
    view.lut = lut.data();
    view.row_ptr = row_ptr.data();
    view.col = col.data();
    view.val = val.data();
    view.nnz = static_cast<int64_t>(col.size());
  }
  size_t bytes() const { return words.size() * 4 + lut.size() * 2 + row_ptr.size() * 4 + col.size() * 2 + val.size() * 2; }
};

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atoll(item.c_str()));
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_cuda_decode [--layers N] [--bits 4|3|8|16] [--lut] [--steps N] [--batches 1,4,16]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t layers = 32, steps = 128;
  int bits = 4;
  bool lut = false;
  std::vector<int64_t> batches = {1, 4, 16};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--lut") {
      lut = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    if (a == "--layers") layers = std::atoll(argv[++i]);
    else if (a == "--bits") bits = std::atoi(argv[++i]);
    else if (a == "--steps") steps = std::atoll(argv[++i]);
    else if (a == "--batches") batches = parse_list(argv[++i]);
    else return usage();
  }
  if (layers < 1 || steps < 2 || (bits != 3 && bits != 4 && bits != 8 && bits != 16) || (lut && bits > 4) ||
      batches.empty())
    return usage();
  // Linears W<bits> g128 (8-bit: symmetric), as fsq quantize writes them; embedding and head
  // 8-bit g64 symmetric (--head-bits 8); norm gains 1; LLaMA rotary tables.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<Matrix>> matrices;
  std::vector<std::unique_ptr<LutMatrix>> lut_matrices;
  uint64_t seed = 1;
  // fp16 matrices repeat one random block of 64 Ki values (made once): 13 GB of fp16 at this
  // shape would take a minute to draw value by value, and speed does not depend on values.
  std::vector<uint16_t> half_block(size_t{1} << 16);
  for (uint16_t& v : half_block) v = fsq::f32_to_f16(0.02f * (static_cast<float>(splitmix64(seed) % 200) - 100.f) / 100);
  std::vector<std::vector<uint16_t>> half_matrices;
  half_matrices.reserve(static_cast<size_t>(7 * layers + 2));  // views point into the elements
  const auto half_matrix = [&](int64_t rows, int64_t cols) {
    std::vector<uint16_t>& m = half_matrices.emplace_back(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < m.size(); i += half_block.size())
      std::memcpy(m.data() + i, half_block.data(), std::min(half_block.size(), m.size() - i) * sizeof(uint16_t));
    return fsq::cuda::DecodeLinear(fsq::cuda::HalfWeightsView{m.data(), rows, cols});
  };
  const bool asym = bits != 8;
  const auto matrix = [&](int64_t rows, int64_t cols, int b, int64_t group, bool a) {
    matrices.push_back(std::make_unique<Matrix>(rows, cols, b, group, a, seed++));
    return matrices.back()->view;
  };
  // A linear of the layers: W<bits> g128, or LUT-<bits> with 0.45 % sparse.
  const auto linear = [&](int64_t rows, int64_t cols) -> fsq::cuda::DecodeLinear {
    if (bits == 16) return half_matrix(rows, cols);
    if (!lut) return matrix(rows, cols, bits, 128, asym);
    lut_matrices.push_back(std::make_unique<LutMatrix>(rows, cols, bits, 0.0045, seed++));
    return lut_matrices.back()->view;
  };
  fsq::cuda::DecodeModelSpec spec;
  spec.hidden = kHidden, spec.intermediate = kInter, spec.heads = kHeads, spec.kv_heads = kKvHeads;
  spec.head_dim = kDim, spec.vocab = kVocab, spec.rms_norm_eps = 1e-5f;
  size_t embedding_row_bytes = 0;
  if (bits == 16) {
    spec.embedding = half_matrix(kVocab, kHidden);
    spec.head = half_matrix(kVocab, kHidden);
    embedding_row_bytes = kHidden * 2;
  } else {
    spec.embedding = matrix(kVocab, kHidden, 8, 64, false);
    embedding_row_bytes = matrices.back()->row_bytes();
    spec.head = matrix(kVocab, kHidden, 8, 64, false);
  }
  const std::vector<float> ones(kHidden, 1.f);
  for (int64_t l = 0; l < layers; ++l) {
    fsq::cuda::DecodeLayerSpec L;
    L.q = linear(kHeads * kDim, kHidden);
    L.k = linear(kKvHeads * kDim, kHidden);
    L.v = linear(kKvHeads * kDim, kHidden);
    L.o = linear(kHidden, kHeads * kDim);
    L.gate = linear(kInter, kHidden);
    L.up = linear(kInter, kHidden);
    L.down = linear(kHidden, kInter);
    L.input_norm = L.post_attn_norm = ones.data();
    spec.layers.push_back(L);
  }
  spec.final_norm = ones.data();
  const int64_t capacity = steps;
  std::vector<float> cos, sin;
  fsq::test::llama_rope_tables(capacity, kDim, cos, sin);
  spec.rope_cos = cos.data(), spec.rope_sin = sin.data(), spec.rope_positions = capacity;
  size_t weight_bytes = 0;
  for (size_t i = bits == 16 ? 0 : 1; i < matrices.size(); ++i) weight_bytes += matrices[i]->bytes();  // not the embedding
  for (const auto& m : lut_matrices) weight_bytes += m->bytes();
  for (size_t i = bits == 16 ? 1 : 0; i < half_matrices.size(); ++i) weight_bytes += half_matrices[i].size() * 2;
  const std::string kind = bits == 16 ? "fp16"
                           : lut      ? "lut" + std::to_string(bits) + " + 0.45 % CSR"
                                      : "w" + std::to_string(bits) + "g128" + (asym ? "a" : "s");
  std::printf("LLaMA-2-7B shape, %ld layers, linears %s, embedding/head %s: %.2f GB read per step "
              "(random weights made in %.1f s)\n",
              static_cast<long>(layers), kind.c_str(), bits == 16 ? "fp16" : "w8g64s", weight_bytes / 1e9,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  // The spec is checked before any device work, so a machine without a GPU checks it too.
  for (int64_t batch : batches)
    if (const std::string why = fsq::cuda::decode_spec_problem(spec, batch, capacity); !why.empty()) {
      std::fprintf(stderr, "bench_cuda_decode: batch %ld: %s\n", static_cast<long>(batch), why.c_str());
      return 1;
    }
  if (fsq::cuda::device_count() == 0) {
    std::fprintf(stderr, "bench_cuda_decode: %s\n", fsq::cuda::describe().c_str());
    return 1;
  }
  unsigned* sink = nullptr;
  CHECK_CUDA(cudaMalloc(&sink, sizeof(unsigned)));
  const double read_gbs = fsq::bench::read_gbs_1gib(sink);
  std::printf("device: %s; read kernel over 1 GiB: %.1f GB/s\n", fsq::cuda::describe().c_str(), read_gbs);
  std::printf("%5s %8s %10s %10s %12s %8s\n", "batch", "act", "ms/step", "tok/s", "ideal ms", "x ideal");
  for (int64_t batch : batches) {
    std::unique_ptr<fsq::cuda::Decoder> decoder;
    const std::string e = fsq::cuda::make_device_decoder(spec, batch, capacity, ActType::F16, true, &decoder);
    if (!e.empty()) {
      std::fprintf(stderr, "bench_cuda_decode: batch %ld: %s\n", static_cast<long>(batch), e.c_str());
      return 1;
    }
    std::vector<int32_t> ids(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) ids[b] = static_cast<int32_t>((b * 7919) % kVocab);
    std::vector<float> logits(static_cast<size_t>(batch * kVocab));
    // Step 0 captures the graph: warm-up, not timed.
    if (const std::string s = decoder->step(ids.data(), 0, logits.data()); !s.empty()) {
      std::fprintf(stderr, "bench_cuda_decode: %s\n", s.c_str());
      return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    double kv_bytes = 0;
    for (int64_t t = 1; t < steps; ++t) {
      if (const std::string s = decoder->step(ids.data(), t, logits.data()); !s.empty()) {
        std::fprintf(stderr, "bench_cuda_decode: step %ld: %s\n", static_cast<long>(t), s.c_str());
        return 1;
      }
      // Keys and values of positions 0..t, f32, every layer and sequence.
      kv_bytes += 2.0 * layers * batch * kKvHeads * (t + 1) * kDim * sizeof(float);
      ids[0] = (ids[0] + 1) % kVocab;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double ms_step = 1e3 * seconds / static_cast<double>(steps - 1);
    const double step_bytes =
        weight_bytes + batch * embedding_row_bytes + kv_bytes / static_cast<double>(steps - 1);
    const double ideal_ms = step_bytes / (read_gbs * 1e9) * 1e3;
    std::printf("%5ld %8s %10.3f %10.1f %12.3f %8.2f\n", static_cast<long>(batch), "f16", ms_step,
                batch * 1e3 / ms_step, ideal_ms, ideal_ms / ms_step);
  }
  return 0;
}
