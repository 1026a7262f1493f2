// lut_gemv_q8: the int8 centroid tables, the scalar spec, and the dispatcher (the activation
// panel of q8_panel.h, a LUT row being one group, and the OpenMP split over output rows).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/half.h"
#include "runtime/cpu/gemv_batches.h"
#include "runtime/cpu/int8_kernels.h"  // cpu_has_avx512_vnni
#include "runtime/cpu/lut_q8_isa.h"
#include "runtime/cpu/lut_q8_kernels.h"
#include "runtime/cpu/packed_code.h"
#include "runtime/cpu/q8_panel.h"
#include "runtime/cpu/uniform_q8_kernels.h"

namespace fsq::cpu {
namespace {

constexpr int kTableBias = 128;
// The CSR part goes as one stream of nonzeros (lut_q8_loops.h) below this many per row on
// average: each row's sum is then one FMA chain, which long rows wait on. bench_lut_kernels,
// 1 thread: at LLaMA-7B's 18-50 per row the stream cost +44-62 % against +5-17 % row by row;
// at SmolLM2's ~2.6 it took sparse decode batch 8 from 278-289 to 338-340 tok/s.
constexpr int64_t kStreamMaxNonzerosPerRow = 8;

// The q8 panel's view of a LUT matrix, one group per row: 4-bit codes and the 3-bit bit
// planes (prepare_lut_q8_codes3) are read as the uniform 4-bit chunks (even, then odd
// columns), packed 3-bit codes in column order as 8-bit chunks.
UniformWeightsView panel_view(const LutWeightsView& w, const LutQ8Tables& t) {
  UniformWeightsView v;
  v.rows = w.rows;
  v.cols = w.cols;
  v.bits = w.bits == 4 || t.codes3 != nullptr ? 4 : 8;
  v.group_cols = w.cols;
  return v;
}

bool check_call(const LutWeightsView& w, const LutQ8Tables& t, const float* x, int64_t m, int64_t x_stride,
                const float* y, int64_t y_stride) {
  if (check_lut_view(w) != KernelStatus::Ok || t.tables == nullptr || t.scales == nullptr) return false;
  return m >= 0 && (m == 0 || (x != nullptr && y != nullptr)) && x_stride >= w.cols && y_stride >= w.rows;
}

}  // namespace

void prepare_lut_q8_tables(const LutWeightsView& w, uint8_t* tables, float* scales) {
  const int64_t levels = int64_t{1} << w.bits;
  for (int64_t n = 0; n < w.rows; ++n) {
    float c[16] = {}, top = 0.0f, poison = 0.0f;
    for (int64_t j = 0; j < levels; ++j) {
      c[j] = f16_to_f32(w.lut[n * levels + j]);
      top = std::max(top, std::fabs(c[j]));
      poison += c[j] * 0.0f;
    }
    const float s = poison == 0.0f ? top / 127.0f : NAN;
    scales[n] = s;
    for (int64_t j = 0; j < 16; ++j) {
      // A 3-bit table repeats its 8 entries (codes never reach the upper half).
      const float v = s > 0.0f ? std::nearbyint(c[j % levels] / s) : 0.0f;
      tables[n * 16 + j] = static_cast<uint8_t>(static_cast<int>(std::clamp(v, -127.0f, 127.0f)) + kTableBias);
    }
  }
}

bool lut_q8_sparse_rows_apply(const LutWeightsView& w) {
  return w.row_ptr != nullptr && w.rows <= 65536 && w.nnz < kStreamMaxNonzerosPerRow * w.rows;
}

void prepare_lut_q8_sparse_rows(const LutWeightsView& w, uint16_t* rows) {
  for (int64_t n = 0; n < w.rows; ++n)
    for (int64_t e = w.row_ptr[n]; e < w.row_ptr[n + 1]; ++e) rows[e] = static_cast<uint16_t>(n);
}

// Slices where they were measured to win (bench_lut_kernels, Zen 4, 1 thread, paired CSR
// cost, two runs): 4096 columns at 0.45 % (~18 per row) +11-13 % row by row -> +8-10 %. At
// 11008 columns they lost (+12-13 % -> +12-16 %): x no longer fits a 32 KiB L1, and the row
// by row loop walks it in column order. Below 8 per row (SmolLM2's ~2.6) the stream stays.
constexpr int64_t kSlicesMaxCols = 4096;

bool lut_q8_sparse_slices_apply(const LutWeightsView& w) {
  return w.row_ptr != nullptr && w.col_type == LutColType::U16 && w.cols <= kSlicesMaxCols &&
         w.nnz >= kStreamMaxNonzerosPerRow * w.rows;
}

namespace {

// Window by window, the rows sorted by count of nonzeros, most first (ties in row order);
// fn(slice, lane, row) for every lane of every slice (row -1 past the matrix's end).
template <typename Fn>
void for_each_slice_lane(const LutWeightsView& w, const Fn& fn) {
  std::vector<int32_t> order;
  for (int64_t w0 = 0; w0 < w.rows; w0 += kLutQ8SliceWindowRows) {
    const int64_t w1 = std::min(w.rows, w0 + kLutQ8SliceWindowRows);
    order.clear();
    for (int64_t n = w0; n < w1; ++n) order.push_back(static_cast<int32_t>(n));
    std::stable_sort(order.begin(), order.end(), [&w](int32_t a, int32_t b) {
      return w.row_ptr[a + 1] - w.row_ptr[a] > w.row_ptr[b + 1] - w.row_ptr[b];
    });
    const int64_t padded = (w1 - w0 + kLutQ8SliceRows - 1) / kLutQ8SliceRows * kLutQ8SliceRows;
    for (int64_t i = 0; i < padded; ++i)
      fn(w0 / kLutQ8SliceRows + i / kLutQ8SliceRows, i % kLutQ8SliceRows,
         i < w1 - w0 ? order[static_cast<size_t>(i)] : int32_t{-1});
  }
}

int64_t row_nonzeros(const LutWeightsView& w, int32_t row) {
  return row < 0 ? 0 : w.row_ptr[row + 1] - w.row_ptr[row];
}

}  // namespace

int64_t lut_q8_slice_count(int64_t rows) { return (rows + kLutQ8SliceRows - 1) / kLutQ8SliceRows; }

int64_t lut_q8_sparse_slice_steps(const LutWeightsView& w) {
  std::vector<int64_t> longest(static_cast<size_t>(lut_q8_slice_count(w.rows)), 0);
  for_each_slice_lane(w, [&](int64_t s, int64_t, int32_t row) {
    longest[static_cast<size_t>(s)] = std::max(longest[static_cast<size_t>(s)], row_nonzeros(w, row));
  });
  int64_t steps = 0;
  for (const int64_t l : longest) steps += l;
  return steps;
}

void prepare_lut_q8_sparse_slices(const LutWeightsView& w, int32_t* lane_rows, int32_t* lane_counts,
                                  int32_t* slice_steps, uint16_t* steps) {
  const int64_t slices = lut_q8_slice_count(w.rows);
  for_each_slice_lane(w, [&](int64_t s, int64_t l, int32_t row) {
    lane_rows[s * kLutQ8SliceRows + l] = row;
    lane_counts[s * kLutQ8SliceRows + l] = static_cast<int32_t>(row_nonzeros(w, row));
  });
  const auto* col = static_cast<const uint16_t*>(w.col);
  slice_steps[0] = 0;
  for (int64_t s = 0; s < slices; ++s) {
    const int32_t* counts = lane_counts + s * kLutQ8SliceRows;
    const int32_t length = *std::max_element(counts, counts + kLutQ8SliceRows);
    uint16_t* out = steps + int64_t{slice_steps[s]} * 2 * kLutQ8SliceRows;
    for (int32_t j = 0; j < length; ++j)
      for (int64_t l = 0; l < kLutQ8SliceRows; ++l) {
        const int32_t row = lane_rows[s * kLutQ8SliceRows + l];
        const bool in = j < counts[l];
        out[j * 2 * kLutQ8SliceRows + l] = in ? col[w.row_ptr[row] + j] : uint16_t{0};
        out[j * 2 * kLutQ8SliceRows + kLutQ8SliceRows + l] = in ? w.val[w.row_ptr[row] + j] : uint16_t{0};
      }
    slice_steps[s + 1] = slice_steps[s] + length;
  }
}

int64_t lut_q8_codes3_row_bytes(int64_t cols) {
  const int64_t full = cols / 128, rest = cols % 128;
  return full * 48 + (rest == 0 ? 0 : rest <= 64 ? 24 : 48);
}

int64_t lut_q8_codes3_bytes(const LutWeightsView& w) { return w.rows * lut_q8_codes3_row_bytes(w.cols); }

void prepare_lut_q8_codes3(const LutWeightsView& w, uint8_t* out) {
  const int64_t row_bytes = lut_q8_codes3_row_bytes(w.cols);
  std::fill(out, out + w.rows * row_bytes, uint8_t{0});
  for (int64_t n = 0; n < w.rows; ++n) {
    const uint32_t* words = w.words + n * w.words_per_row;
    uint8_t* chunk = out + n * row_bytes;
    for (int64_t k0 = 0; k0 < w.cols; k0 += 128) {
      const bool full = w.cols - k0 > 64;
      // Low bits in `qwords` qwords; column k0 + 2 b + odd sits in qword (b / 8) % qwords at
      // bit 16 * (b / (8 * qwords)) + 2 (b % 8) + 32 odd (the layout lut_q8_kernels.h gives).
      const int64_t qwords = full ? 4 : 2, high_bits = full ? 64 : 32;
      uint64_t low[4] = {}, high[2] = {};
      for (int64_t b = 0; b < high_bits; ++b)
        for (int odd = 0; odd < 2; ++odd) {
          const int64_t k = k0 + 2 * b + odd;
          if (k >= w.cols) continue;
          const uint64_t code = static_cast<uint64_t>(packed_code(words, k, 3));
          const int64_t bit = 16 * (b / (8 * qwords)) + 2 * (b % 8) + 32 * odd;
          low[(b / 8) % qwords] |= (code & 3) << bit;
          high[odd] |= (code >> 2) << b;
        }
      uint8_t* p = chunk;
      std::memcpy(p, low, static_cast<size_t>(qwords * 8));
      p += qwords * 8;
      if (full) {
        std::memcpy(p, high, 16);
      } else {
        const uint32_t even32 = static_cast<uint32_t>(high[0]), odd32 = static_cast<uint32_t>(high[1]);
        std::memcpy(p, &even32, 4);
        std::memcpy(p + 4, &odd32, 4);
      }
      chunk += full ? 48 : 24;
    }
  }
}

bool lut_q8_supported(const LutWeightsView& w, CpuIsa isa) {
  if (check_lut_view(w) != KernelStatus::Ok || w.cols % 8 != 0 || !cpu_supports(isa)) return false;
  if (isa == CpuIsa::Avx2) return w.bits == 4;
  return isa == CpuIsa::Avx512 && cpu_has_avx512_vnni() && (w.bits == 4 || cpu_has_avx512_vbmi());
}

KernelStatus lut_gemv_q8_reference(const LutWeightsView& w, const LutQ8Tables& t, const float* x, int64_t m,
                                   int64_t x_stride, float* y, int64_t y_stride) {
  if (!check_call(w, t, x, m, x_stride, y, y_stride) || check_lut_sparse(w) != KernelStatus::Ok)
    return KernelStatus::InvalidArgument;
  std::vector<int8_t> q(static_cast<size_t>(w.cols));
  std::vector<float> d(static_cast<size_t>(q8_block_count(w.cols)));
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * x_stride;
    quantize_q8_row(xi, w.cols, q.data(), d.data());
    for (int64_t n = 0; n < w.rows; ++n) {
      const uint32_t* codes = w.words + n * w.words_per_row;
      double dense = 0.0;
      for (int64_t b = 0; b < q8_block_count(w.cols); ++b) {
        int64_t dot = 0;
        for (int64_t k = b * kQ8BlockCols; k < std::min(w.cols, (b + 1) * kQ8BlockCols); ++k)
          dot += (int64_t{t.tables[n * 16 + packed_code(codes, k, w.bits)]} - kTableBias) * q[static_cast<size_t>(k)];
        dense += static_cast<double>(d[static_cast<size_t>(b)]) * static_cast<double>(dot);
      }
      double sum = static_cast<double>(t.scales[n]) * dense;
      if (w.row_ptr != nullptr)
        for (int64_t e = w.row_ptr[n]; e < w.row_ptr[n + 1]; ++e) {
          const int64_t k = w.col_type == LutColType::U16 ? static_cast<const uint16_t*>(w.col)[e]
                                                          : static_cast<const int32_t*>(w.col)[e];
          sum += static_cast<double>(xi[k]) * static_cast<double>(f16_to_f32(w.val[e]));
        }
      y[i * y_stride + n] = static_cast<float>(sum);
    }
  }
  return KernelStatus::Ok;
}

KernelStatus lut_gemv_q8(const LutWeightsView& w, const LutQ8Tables& t, const float* x, int64_t m, int64_t x_stride,
                         float* y, int64_t y_stride, CpuIsa isa) {
  if (!check_call(w, t, x, m, x_stride, y, y_stride) || w.cols % 8 != 0) return KernelStatus::InvalidArgument;
  if (!lut_q8_supported(w, isa)) return KernelStatus::IsaUnavailable;
  const auto rows_fn = isa == CpuIsa::Avx2 ? lut_q8_rows_avx2
                       : w.bits == 4      ? lut_q8_rows_avx512vnni
                                          : lut_q8_rows_avx512vbmi;
  Q8Panel panel(panel_view(w, t), std::min(m, kMaxGemvRows));
  const bool slices = t.sparse_slices != nullptr && isa == CpuIsa::Avx512;
  const bool stream = !slices && t.sparse_rows != nullptr && lut_q8_sparse_rows_apply(w);
  std::vector<float> sparse_sums(stream ? static_cast<size_t>(std::min(m, kMaxGemvRows) * w.rows) : 0);
  for (int64_t i0 = 0; i0 < m; i0 += kMaxGemvRows) {
    LutQ8Batch batch;
    batch.w = &w;
    batch.t = &t;
    batch.m = std::min(kMaxGemvRows, m - i0);
    if (stream) batch.sparse_sums = sparse_sums.data();
    panel.fill(x + i0 * x_stride, batch.m, x_stride);
    batch.q8 = panel.activations();
    batch.x = x + i0 * x_stride;
    batch.x_stride = x_stride;
    batch.y = y + i0 * y_stride;
    batch.y_stride = y_stride;
    for_each_thread_rows(w.rows, w.rows * w.cols * batch.m >= kGemvParallelMinWork,
                         [&](int64_t row0, int64_t row1) { rows_fn(batch, row0, row1); });
  }
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
