#include "quantize/plan_widths.h"

#include "common/error.h"
#include "formats/architectures.h"
#include "formats/quant/lut_quant.h"

namespace fsq {
namespace {

// A squeezellm plan's 8-bit linears are round-to-nearest int8 groups (see quantize_model.cpp).
bool storable(int bits, bool lut) {
  if (bits == 16 || bits == 8) return true;
  return lut ? lut_bits_supported(bits) : bits == 2 || bits == 3 || bits == 4;
}

void check_width(int bits, bool lut, const std::string& method, const char* what) {
  if (!storable(bits, lut))
    throw Error("--plan", "--method " + method + " cannot store " + std::to_string(bits) + "-bit " + what + " (" +
                              (lut ? "3, 4, 8 (as rtn int8)" : "2, 3, 4, 8") + " or 16)");
}

}  // namespace

std::vector<LayerWidths> expand_plan_widths(const std::vector<int>& layer_bits,
                                            const std::vector<LayerWidths>& linear_bits, const ArchSpec& arch,
                                            int64_t layers, const std::string& method, bool lut) {
  if (!layer_bits.empty() && !linear_bits.empty()) throw Error("--plan", "gives widths per layer and per linear; keep one");
  const size_t planned = layer_bits.empty() ? linear_bits.size() : layer_bits.size();
  if (planned == 0) return {};
  if (static_cast<int64_t>(planned) != layers)
    throw Error("--plan", "the plan has widths for " + std::to_string(planned) + " layers, the model has " +
                              std::to_string(layers) + " (a plan for another model?)");
  std::vector<LayerWidths> out(planned);
  for (size_t i = 0; i < planned; ++i) {
    if (!layer_bits.empty()) {
      check_width(layer_bits[i], lut, method, "layers");
      for (const auto& spec : arch.linears) out[i][spec.role] = layer_bits[i];
      continue;
    }
    for (const auto& [role, bits] : linear_bits[i]) {
      bool known = false;
      for (const auto& spec : arch.linears) known = known || spec.role == role;
      if (!known) throw Error("--plan", "layer " + std::to_string(i) + " names '" + role + "', which is not a linear of this architecture");
      check_width(bits, lut, method, "linears");
    }
    for (const auto& spec : arch.linears) {
      const auto it = linear_bits[i].find(spec.role);
      if (it == linear_bits[i].end())
        throw Error("--plan", "layer " + std::to_string(i) + " gives no width for " + spec.role);
      out[i][spec.role] = it->second;
    }
  }
  return out;
}

bool all_widths_are(const LayerWidths& widths, int bits) {
  for (const auto& [role, b] : widths)
    if (b != bits) return false;
  return !widths.empty();
}

bool any_width_is(const LayerWidths& widths, int bits) {
  for (const auto& [role, b] : widths)
    if (b == bits) return true;
  return false;
}

std::string count_widths(const std::vector<LayerWidths>& widths, bool per_linear) {
  std::map<int, int> count;
  for (const LayerWidths& layer : widths) {
    if (!per_linear) {
      if (!layer.empty()) count[layer.begin()->second] += 1;
      continue;
    }
    for (const auto& [role, bits] : layer) count[bits] += 1;
  }
  std::string out;
  for (const auto& [bits, n] : count) out += (out.empty() ? "" : ", ") + std::to_string(n) + " at " + std::to_string(bits) + " bits";
  return out;
}

}  // namespace fsq
