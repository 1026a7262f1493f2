#include "runtime/lut_linear.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/bitpack.h"
#include "runtime/cpu/lut_q8_kernels.h"
#include "runtime/packed_forward.h"
#include "runtime/torch_bridge.h"
#include "common/byte_view.h"

namespace fsq {
LutLinear::LutLinear(const LutMatrix& m, std::optional<at::Tensor> bias, std::string method)
    : PackedKernelLinear(m.rows, m.cols, std::move(method)), bits_(m.bits) {
  validate_lut_matrix(m, "LUT linear");
  const std::vector<uint32_t> words = pack_rows(m.codes, rows_, cols_, bits_);
  LutStoredBytes bytes{bytes_of(words), bytes_of(m.lut), {}, {}, {}, cpu::LutColType::U16};
  std::vector<uint16_t> narrow_col;
  if (m.has_sparse()) {
    bytes.row_ptr = bytes_of(m.row_ptr);
    bytes.val = bytes_of(m.val);
    // Column indices as FORMAT.md stores them: 16 bits while they fit.
    if (cols_ <= 65536) {
      narrow_col.assign(m.col.begin(), m.col.end());
      bytes.col = bytes_of(narrow_col);
    } else {
      bytes.col_type = cpu::LutColType::I32;
      bytes.col = bytes_of(m.col);
    }
  }
  adopt(bytes, std::move(bias));
}

LutLinear::LutLinear(int bits, int64_t rows, int64_t cols, const LutStoredBytes& bytes, std::optional<at::Tensor> bias,
                     std::string method)
    : PackedKernelLinear(rows, cols, std::move(method)), bits_(bits) {
  adopt(bytes, std::move(bias));
}

void LutLinear::adopt(const LutStoredBytes& bytes, std::optional<at::Tensor> bias) {
  if (!lut_bits_supported(bits_) || rows_ <= 0 || cols_ <= 0)
    throw Error(describe(), "LUT linear needs 3 or 4 bits and a positive shape");
  words_per_row_ = packed_words_per_row(bits_, cols_);
  const int64_t col_bytes = bytes.col_type == cpu::LutColType::U16 ? 2 : 4;
  nnz_ = static_cast<int64_t>(bytes.val.size() / 2);
  const bool sizes_agree =
      static_cast<int64_t>(bytes.words.size()) == rows_ * words_per_row_ * 4 &&
      static_cast<int64_t>(bytes.lut.size()) == rows_ * (int64_t{1} << bits_) * 2 &&
      (bytes.row_ptr.empty() ? bytes.col.empty() && bytes.val.empty()
                             : static_cast<int64_t>(bytes.row_ptr.size()) == (rows_ + 1) * 4 &&
                                   static_cast<int64_t>(bytes.col.size()) == nnz_ * col_bytes &&
                                   static_cast<int64_t>(bytes.val.size()) == nnz_ * 2);
  if (!sizes_agree) throw Error(describe(), "stored tensor sizes do not match the shape and code width");
  words_ = copy_aligned(bytes.words);
  lut_ = copy_aligned(bytes.lut);
  packed_bytes_ = static_cast<int64_t>(bytes.words.size() + bytes.lut.size());
  if (!bytes.row_ptr.empty()) {
    row_ptr_ = copy_aligned(bytes.row_ptr);
    col_ = copy_aligned(bytes.col);
    val_ = copy_aligned(bytes.val);
    col_type_ = bytes.col_type;
    packed_bytes_ += static_cast<int64_t>(bytes.row_ptr.size() + bytes.col.size() + bytes.val.size());
  }
  check_kernel_status(cpu::check_lut_view(weights_view()), describe());
  check_kernel_status(cpu::check_lut_sparse(weights_view()), describe());
  adopt_bias(std::move(bias), describe());
}

cpu::LutWeightsView LutLinear::weights_view() const {
  cpu::LutWeightsView v;
  v.words = aligned_as<uint32_t>(words_);
  v.rows = rows_;
  v.cols = cols_;
  v.words_per_row = words_per_row_;
  v.bits = bits_;
  v.lut = aligned_as<uint16_t>(lut_);
  if (row_ptr_) {
    v.row_ptr = aligned_as<int32_t>(row_ptr_);
    v.col = col_.get();
    v.col_type = col_type_;
    v.val = aligned_as<uint16_t>(val_);
    v.nnz = nnz_;
  }
  return v;
}

void LutLinear::prepare_int8() {
  if (!q8_scales_.empty()) return;
  q8_tables_.resize(static_cast<size_t>(rows_ * 16));
  q8_scales_.resize(static_cast<size_t>(rows_));
  cpu::prepare_lut_q8_tables(weights_view(), q8_tables_.data(), q8_scales_.data());
  if (cpu::lut_q8_sparse_rows_apply(weights_view())) {
    q8_sparse_rows_.resize(static_cast<size_t>(nnz_));
    cpu::prepare_lut_q8_sparse_rows(weights_view(), q8_sparse_rows_.data());
  }
  // Only a CPU with AVX-512 reads the slices (lut_q8_loops.h).
  if (cpu::cpu_supports(cpu::CpuIsa::Avx512)) q8_slices_ = cpu::LutQ8SliceCopy(weights_view());
}

cpu::LutQ8Tables LutLinear::q8_view() const {
  return {q8_tables_.data(), q8_scales_.data(), q8_sparse_rows_.empty() ? nullptr : q8_sparse_rows_.data(), nullptr,
          q8_slices_.view()};
}

LinearDeviceView LutLinear::device_view() const {
  return LinearDeviceView(weights_view(), has_bias());
}

// The LUT kernels: lut_gemv, and with int8 activations and centroids (the tables
// prepare_int8 made) lut_gemv_q8 (decode) and lut_gemm_q8 (prefill).
cpu::KernelStatus LutLinear::multiply(Kernel kernel, const float* x, int64_t m, float* y) const {
  if (kernel == Kernel::Gemv) return cpu::lut_gemv(weights_view(), x, m, cols_, y, rows_, isa_);
  const cpu::LutQ8Tables tables = q8_view();
  if (kernel == Kernel::GemvInt8) return cpu::lut_gemv_q8(weights_view(), tables, x, m, cols_, y, rows_, isa_);
  return cpu::lut_gemm_q8(weights_view(), tables, x, m, cols_, y, rows_, isa_);
}

bool LutLinear::int8_supported(Kernel kernel) const {
  const cpu::LutWeightsView w = weights_view();
  return kernel == Kernel::GemvInt8 ? cpu::lut_q8_supported(w, isa_) : cpu::lut_gemm_q8_supported(w, isa_);
}

cpu::KernelStatus LutLinear::dequantize_rows(int64_t row0, int64_t nrows, float* out) const {
  return cpu::lut_dequantize_rows(weights_view(), row0, nrows, out, isa_);
}

std::string LutLinear::describe() const {
  std::string s = lut_quant_name(bits_) + " [" + std::to_string(rows_) + " x " + std::to_string(cols_) + "]";
  if (!method_.empty()) s += " " + method_;
  if (nnz_ > 0) s += ", " + std::to_string(nnz_) + " sparse";
  return s;
}

int64_t LutLinear::weight_bytes() const { return packed_bytes_ + bias_bytes(); }

std::unique_ptr<LutLinear> make_lut_linear(const PackedLinear& packed) {
  std::optional<at::Tensor> bias;
  if (packed.bias) bias = tensor_from_view(*packed.bias, at::kFloat, c10::Device(c10::kCPU));
  auto span_of = [](const TensorView* v) {
    return v ? std::span<const std::byte>(v->data, v->nbytes) : std::span<const std::byte>{};
  };
  LutStoredBytes bytes{span_of(packed.qweight), span_of(packed.lut), span_of(packed.sparse_row_ptr),
                       span_of(packed.sparse_col), span_of(packed.sparse_val), cpu::LutColType::U16};
  if (packed.sparse_col && packed.sparse_col->dtype == DType::I32) bytes.col_type = cpu::LutColType::I32;
  return std::make_unique<LutLinear>(packed.lut_bits, packed.rows, packed.cols, bytes, std::move(bias),
                                     packed.method);
}

}  // namespace fsq
