#include "formats/quant/quant_types.h"

#include <algorithm>

#include "common/error.h"

namespace fsq {
namespace {

constexpr int kScaleBits = 16;     // fp16 scale per group
constexpr int kZeroPointBits = 8;  // uint8 zero point per group (asymmetric only)

template <typename T>
bool contains(const std::vector<T>& v, T x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

template <typename T>
std::string join(const std::vector<T>& v) {
  std::string s;
  for (T x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

}  // namespace

// The single table. A new uniform type is one line here plus the packers/kernels that
// must handle its bits and group size.
const std::vector<UniformQuantType>& uniform_quant_types() {
  // One line per (bits, group size): asymmetric, then symmetric.
  // clang-format off
  static const std::vector<UniformQuantType> table = {
      {"w2g32a", {2, 32, false}},   {"w2g32s", {2, 32, true}},
      {"w2g64a", {2, 64, false}},   {"w2g64s", {2, 64, true}},
      {"w2g128a", {2, 128, false}}, {"w2g128s", {2, 128, true}},
      {"w2pca", {2, 0, false}},     {"w2pcs", {2, 0, true}},
      {"w3g32a", {3, 32, false}},   {"w3g32s", {3, 32, true}},
      {"w3g64a", {3, 64, false}},   {"w3g64s", {3, 64, true}},
      {"w3g128a", {3, 128, false}}, {"w3g128s", {3, 128, true}},
      {"w3pca", {3, 0, false}},     {"w3pcs", {3, 0, true}},
      {"w4g32a", {4, 32, false}},   {"w4g32s", {4, 32, true}},
      {"w4g64a", {4, 64, false}},   {"w4g64s", {4, 64, true}},
      {"w4g128a", {4, 128, false}}, {"w4g128s", {4, 128, true}},
      {"w4pca", {4, 0, false}},     {"w4pcs", {4, 0, true}},
      {"w8g32a", {8, 32, false}},   {"w8g32s", {8, 32, true}},
      {"w8g64a", {8, 64, false}},   {"w8g64s", {8, 64, true}},
      {"w8g128a", {8, 128, false}}, {"w8g128s", {8, 128, true}},
      {"w8pca", {8, 0, false}},     {"w8pcs", {8, 0, true}},
  };
  // clang-format on
  return table;
}

const UniformQuant& find_uniform_quant(std::string_view name, const std::string& where) {
  std::string valid;
  for (const UniformQuantType& t : uniform_quant_types()) {
    if (t.name == name) return t.quant;
    valid += (valid.empty() ? "" : ", ") + std::string(t.name);
  }
  throw Error(where, "unknown quant type " + quote_name(name) + " (valid: " + valid + ")");
}

const std::vector<int>& supported_bits() {
  static const std::vector<int> bits = [] {
    std::vector<int> v;
    for (const UniformQuantType& t : uniform_quant_types())
      if (!contains(v, t.quant.bits)) v.push_back(t.quant.bits);
    std::sort(v.begin(), v.end());
    return v;
  }();
  return bits;
}

const std::vector<int64_t>& supported_group_sizes() {
  static const std::vector<int64_t> sizes = [] {
    std::vector<int64_t> v;
    for (const UniformQuantType& t : uniform_quant_types())
      if (!contains(v, t.quant.group_size)) v.push_back(t.quant.group_size);
    // Ascending, with 0 (per-channel: the whole row) last.
    std::sort(v.begin(), v.end(), [](int64_t a, int64_t b) { return (a == 0 ? INT64_MAX : a) < (b == 0 ? INT64_MAX : b); });
    return v;
  }();
  return sizes;
}

std::string supported_bits_text() { return join(supported_bits()); }

std::string supported_group_sizes_text() {
  std::string s = join(supported_group_sizes());
  if (contains(supported_group_sizes(), int64_t{0})) s += " = per-channel";
  return s;
}

void validate_bits(int bits, const std::string& where) {
  if (!contains(supported_bits(), bits))
    throw Error(where, "unsupported bits " + std::to_string(bits) + " (valid: " + supported_bits_text() + ")");
}

void validate_uniform_quant(const UniformQuant& q, const std::string& where) {
  validate_bits(q.bits, where);
  if (!contains(supported_group_sizes(), q.group_size))
    throw Error(where, "unsupported group size " + std::to_string(q.group_size) +
                           " (valid: " + supported_group_sizes_text() + ")");
}

std::string uniform_quant_name(const UniformQuant& q) {
  validate_uniform_quant(q);
  for (const UniformQuantType& t : uniform_quant_types())
    if (t.quant.bits == q.bits && t.quant.group_size == q.group_size && t.quant.symmetric == q.symmetric)
      return std::string(t.name);
  // validate_uniform_quant accepts exactly the table's combinations.
  throw Error("quant type", "valid combination missing from the registry table");
}

double bits_per_weight(const UniformQuant& q, int64_t cols) {
  validate_uniform_quant(q);
  const int64_t group = q.group_cols(cols);
  if (cols <= 0 || cols % group != 0)
    throw Error("quant type " + uniform_quant_name(q),
                std::to_string(cols) + " columns are not a positive multiple of the group size " +
                    std::to_string(group));
  const int per_group_bits = kScaleBits + (q.symmetric ? 0 : kZeroPointBits);
  return q.bits + static_cast<double>(per_group_bits) / static_cast<double>(group);
}

UniformQuant quant_for_columns(const UniformQuant& requested, int64_t cols) {
  UniformQuant q = requested;
  if (q.group_size == 0 || cols % q.group_size == 0) return q;
  const std::vector<int64_t>& sizes = supported_group_sizes();
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {  // largest first
    const int64_t g = *it;
    if (g != 0 && g < requested.group_size && cols % g == 0) {
      q.group_size = g;
      return q;
    }
  }
  q.group_size = 0;
  return q;
}

}  // namespace fsq
