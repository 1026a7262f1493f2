// The per-instruction-set halves of decode_attention (decode_attention.h), called with
// arguments the dispatcher (decode_attention.cpp) has checked; the rules of uniform_isa.h
// apply to their files.
#pragma once

#include "runtime/cpu/decode_attention.h"

namespace fsq::cpu {

void decode_attention_avx2(const DecodeAttentionArgs& args);
void decode_attention_avx512(const DecodeAttentionArgs& args);

}  // namespace fsq::cpu
