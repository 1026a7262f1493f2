// Which activations the packed linears' decode path (forward_rows, the fast decode path)
// multiplies with: as each linear is set (f32, or int8 where set_int8_decode asked), or
// QSpec's draft mode, 4-bit codes per token (cpu/w4a4_kernels.h) in the linears marked for
// it (PackedKernelLinear::set_draft_int4) where the kernel takes the matrix. Set per call with a scope on the calling thread, so one loaded model serves
// both QSpec's draft steps and its verifier, sharing its weights and its KV cache; nothing
// else changes (forward() on more than cpu::kMaxGemvRows rows, attention, the head unless
// it is packed).
#pragma once

namespace fsq {

enum class DecodeActivations {
  AsSet,         // each linear's own setting (the verifier)
  Int4PerToken,  // QSpec's draft: per-token symmetric 4-bit codes
};

// The mode of the calling thread (AsSet unless a scope below is alive).
DecodeActivations decode_activations();

// Sets the calling thread's mode for its lifetime, then restores the previous one.
class ScopedDecodeActivations {
 public:
  explicit ScopedDecodeActivations(DecodeActivations mode);
  ~ScopedDecodeActivations();
  ScopedDecodeActivations(const ScopedDecodeActivations&) = delete;
  ScopedDecodeActivations& operator=(const ScopedDecodeActivations&) = delete;

 private:
  DecodeActivations previous_;
};

}  // namespace fsq
