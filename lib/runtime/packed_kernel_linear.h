// What the two kernel-backed linears share (QuantLinear: uniform types, cpu/uniform_kernels.h;
// LutLinear: SqueezeLLM LUTs, cpu/lut_kernels.h): a matrix kept packed as stored and run
// through one CPU kernel family, with its GEMV for up to cpu::kMaxGemvRows rows of x (f32 or,
// for decode, int8 activations), and for more rows the family's int8 GEMM or dequantized rows
// into an f32 GEMM (packed_forward.h); the bias, the kernel variant (ISA) and the int8 switches.
// A family plugs in its kernels through the protected hooks below.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/kernel_status.h"
#include "runtime/linear.h"

namespace fsq {

class PackedKernelLinear : public Linear {
 public:
  // forward: x [..., cols] in f32, bf16 or f16 on the CPU (computed in f32, returned in x's
  // dtype): the GEMV for up to cpu::kMaxGemvRows rows, else the int8 GEMM when int8_prefill(),
  // else blocks of dequantized weight rows and an f32 GEMM.
  at::Tensor forward(const at::Tensor& x) const final;
  bool supports_rows() const final { return true; }
  // The decode fast path: the int8 GEMV when int8_decode(), else the f32 GEMV; then the bias.
  // Under ScopedDecodeActivations(Int4PerToken) (QSpec's draft, runtime/activation_mode.h)
  // the W4A4 GEMV where draft_int4() and int4_supported(), as forward() then does for up to
  // kMaxGemvRows rows.
  void forward_rows(const float* x, int64_t m, float* y) const final;
  int64_t in_features() const final { return cols_; }
  int64_t out_features() const final { return rows_; }

  // The kernel variant forward() uses: cpu::selected_cpu_isa() unless set here (tests,
  // benchmarks). Throws fsq::Error when this CPU lacks `isa`.
  void set_cpu_isa(cpu::CpuIsa isa);
  cpu::CpuIsa cpu_isa() const { return isa_; }
  // Asks forward_rows (the decode fast path) to quantize x to int8 and multiply in integers.
  // It does so only where the family's kernel supports this matrix on this CPU; int8_decode()
  // says whether it does. forward() stays exact.
  void set_int8_decode(bool on);
  bool int8_decode() const { return int8_decode_; }
  // Asks forward() to multiply inputs of more than cpu::kMaxGemvRows rows (prompts,
  // perplexity windows) on int8 activations where the family's kernel supports this matrix on
  // this CPU; int8_prefill() says whether it does. Off: dequantize + f32 GEMM.
  void set_int8_prefill(bool on);
  bool int8_prefill() const { return int8_prefill_; }
  // Whether this linear takes 4-bit activations in QSpec's draft mode (off until set: the
  // QSpec proposer sets it for the linears whose input is the rotated residual stream).
  void set_draft_int4(bool on) { draft_int4_ = on; }
  bool draft_int4() const { return draft_int4_; }
  // Adds the bias (if any) to m rows of forward_rows' output y.
  void add_bias(int64_t m, float* y) const;
  bool has_bias() const { return bias_.has_value(); }

 protected:
  // `method` only labels describe().
  PackedKernelLinear(int64_t rows, int64_t cols, std::string method);
  // Keeps `bias` (any floating dtype, [rows]) as f32; throws fsq::Error(where, ...) otherwise.
  void adopt_bias(std::optional<at::Tensor> bias, const std::string& where);
  int64_t bias_bytes() const { return bias_ ? bias_->numel() * static_cast<int64_t>(sizeof(float)) : 0; }

  // The family's multiplications: the f32 GEMV (up to cpu::kMaxGemvRows rows of x), the GEMV
  // on int8 activations (decode), the GEMM on int8 activations (prefill, any rows).
  enum class Kernel { Gemv, GemvInt8, GemmInt8, GemvInt4 };
  // y [m, rows] (stride rows) = x [m, cols] (stride cols) W'^T with `kernel` at isa_.
  virtual cpu::KernelStatus multiply(Kernel kernel, const float* x, int64_t m, float* y) const = 0;
  // out [nrows, cols] = W' rows [row0, row0 + nrows), at isa_.
  virtual cpu::KernelStatus dequantize_rows(int64_t row0, int64_t nrows, float* out) const = 0;
  // Whether an int8 kernel (GemvInt8, GemmInt8) takes this matrix at isa_, and what they need
  // made before they run.
  virtual bool int8_supported(Kernel kernel) const = 0;
  // Whether multiply(Kernel::GemvInt4) takes this matrix at isa_ (families without one: no).
  virtual bool int4_supported() const { return false; }
  virtual void prepare_int8() {}

  int64_t rows_ = 0, cols_ = 0;
  std::optional<at::Tensor> bias_;  // f32 [rows]
  std::string method_;
  cpu::CpuIsa isa_;

 private:
  bool want_int8_decode_ = false, int8_decode_ = false;
  bool want_int8_prefill_ = false, int8_prefill_ = false;
  bool draft_int4_ = false;
};

}  // namespace fsq
