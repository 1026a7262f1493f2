#include "runtime/lut_linear.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/bitpack.h"
#include "runtime/packed_forward.h"
#include "runtime/torch_bridge.h"

namespace fsq {
namespace {

template <typename T>
AlignedBytes aligned_copy_of(const std::vector<T>& v) {
  return copy_aligned(std::as_bytes(std::span(v)));
}

}  // namespace

LutLinear::LutLinear(const LutMatrix& m, std::optional<at::Tensor> bias, std::string method)
    : bits_(m.bits), rows_(m.rows), cols_(m.cols), nnz_(m.nnz()), method_(std::move(method)),
      isa_(cpu::selected_cpu_isa()) {
  validate_lut_matrix(m, "LUT linear");
  words_per_row_ = packed_words_per_row(bits_, cols_);
  const std::vector<uint32_t> words = pack_rows(m.codes, rows_, cols_, bits_);
  words_ = aligned_copy_of(words);
  lut_ = aligned_copy_of(m.lut);
  packed_bytes_ = static_cast<int64_t>(words.size() * 4 + m.lut.size() * 2);
  if (m.has_sparse()) {
    row_ptr_ = aligned_copy_of(m.row_ptr);
    val_ = aligned_copy_of(m.val);
    // Column indices as FORMAT.md stores them: 16 bits while they fit.
    col_type_ = cols_ <= 65536 ? cpu::LutColType::U16 : cpu::LutColType::I32;
    if (col_type_ == cpu::LutColType::U16) {
      const std::vector<uint16_t> narrow(m.col.begin(), m.col.end());
      col_ = aligned_copy_of(narrow);
    } else {
      col_ = aligned_copy_of(m.col);
    }
    packed_bytes_ += (rows_ + 1) * 4 + nnz_ * (2 + (col_type_ == cpu::LutColType::U16 ? 2 : 4));
  }
  check_kernel_status(cpu::check_lut_view(weights_view()), describe());
  check_kernel_status(cpu::check_lut_sparse(weights_view()), describe());
  if (bias) {
    if (bias->dim() != 1 || bias->size(0) != rows_ || !at::isFloatingType(bias->scalar_type()))
      throw Error(describe(), "bias must be a floating tensor of shape [" + std::to_string(rows_) + "]");
    bias_ = bias->to(at::kFloat).contiguous().cpu();
  }
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

void LutLinear::set_cpu_isa(cpu::CpuIsa isa) {
  if (!cpu::cpu_supports(isa))
    throw Error(describe(), std::string("this CPU does not support ") + cpu::cpu_isa_name(isa));
  isa_ = isa;
}

at::Tensor LutLinear::forward(const at::Tensor& x) const {
  const cpu::LutWeightsView view = weights_view();
  const PackedKernels kernels{
      [&](const float* in, int64_t m, float* y) { return cpu::lut_gemv(view, in, m, cols_, y, rows_, isa_); },
      [&](int64_t row0, int64_t n, float* out) { return cpu::lut_dequantize_rows(view, row0, n, out, isa_); }};
  return packed_forward(x, rows_, cols_, bias_, kernels, describe());
}

std::string LutLinear::describe() const {
  std::string s = lut_quant_name(bits_) + " [" + std::to_string(rows_) + " x " + std::to_string(cols_) + "]";
  if (!method_.empty()) s += " " + method_;
  if (nnz_ > 0) s += ", " + std::to_string(nnz_) + " sparse";
  return s;
}

int64_t LutLinear::weight_bytes() const { return packed_bytes_ + (bias_ ? rows_ * 4 : 0); }

std::unique_ptr<Linear> make_lut_linear(const PackedLinear& packed) {
  std::optional<at::Tensor> bias;
  if (packed.bias) bias = tensor_from_view(*packed.bias, at::kFloat, c10::Device(c10::kCPU));
  return std::make_unique<LutLinear>(unpack_lut_linear(packed), std::move(bias), packed.method);
}

}  // namespace fsq
