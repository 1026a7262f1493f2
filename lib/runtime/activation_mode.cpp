#include "runtime/activation_mode.h"

namespace fsq {
namespace {
thread_local DecodeActivations t_decode_activations = DecodeActivations::AsSet;
}  // namespace

DecodeActivations decode_activations() { return t_decode_activations; }

ScopedDecodeActivations::ScopedDecodeActivations(DecodeActivations mode) : previous_(t_decode_activations) {
  t_decode_activations = mode;
}

ScopedDecodeActivations::~ScopedDecodeActivations() { t_decode_activations = previous_; }

}  // namespace fsq
