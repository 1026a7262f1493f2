#include "common/error.h"
#include "formats/quant/quant_types.h"
#include "quantize/pass.h"

namespace fsq {

UniformQuant PassContext::quant_for(int64_t cols) const { return quant_for_columns(quant, cols); }

int PassContext::bits_for(const std::string& role) const {
  const auto it = role_bits.find(role);
  return it == role_bits.end() ? quant.bits : it->second;
}

UniformQuant PassContext::quant_for(const std::string& role, int64_t cols) const {
  const int bits = bits_for(role);
  if (bits == 0) throw Error(role, "is not rounded to a uniform type in this layer (internal error)");
  UniformQuant q = quant;
  q.bits = bits;
  return quant_for_columns(q, cols);
}

bool PassContext::rounds(const std::string& role) const { return bits_for(role) != 0; }

}  // namespace fsq
