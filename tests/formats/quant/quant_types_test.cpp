// The quant type registry: the naming scheme, look-ups and storage cost.
#include "formats/quant/quant_types.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/error.h"

namespace fsq {
namespace {

// The documented scheme, spelled out independently of the table.
std::string expected_name(const UniformQuant& q) {
  std::string name = "w";
  name += std::to_string(q.bits);
  if (q.group_size) {
    name += 'g';
    name += std::to_string(q.group_size);
  } else {
    name += "pc";
  }
  name += q.symmetric ? "s" : "a";
  return name;
}

TEST(QuantTypes, TableCoversEveryCombinationOnceWithSchemeNames) {
  constexpr size_t kBitWidths = 4, kGroupSizes = 4, kSymmetries = 2;
  std::set<std::string> names;
  for (const UniformQuantType& t : uniform_quant_types()) {
    EXPECT_EQ(t.name, expected_name(t.quant));
    EXPECT_NO_THROW(validate_uniform_quant(t.quant)) << t.name;
    names.insert(std::string(t.name));
  }
  EXPECT_EQ(names.size(), kBitWidths * kGroupSizes * kSymmetries);
  EXPECT_EQ(uniform_quant_types().size(), names.size());
}

TEST(QuantTypes, NamesRoundTrip) {
  for (const UniformQuantType& t : uniform_quant_types()) {
    const UniformQuant& q = find_uniform_quant(t.name);
    EXPECT_EQ(uniform_quant_name(q), t.name);
  }
  const UniformQuant& q = find_uniform_quant("w3g64s");
  EXPECT_EQ(q.bits, 3);
  EXPECT_EQ(q.group_size, 64);
  EXPECT_TRUE(q.symmetric);
  const UniformQuant& pc = find_uniform_quant("w8pca");
  EXPECT_EQ(pc.group_size, 0);
  EXPECT_FALSE(pc.symmetric);
}

TEST(QuantTypes, UnknownNameListsTheValidOnes) {
  try {
    find_uniform_quant("w5g128a", "--type");
    FAIL() << "no exception";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("--type: unknown quant type 'w5g128a'", 0), 0u) << msg;
    EXPECT_NE(msg.find("w4g128a"), std::string::npos) << msg;
    EXPECT_NE(msg.find("w8pcs"), std::string::npos) << msg;
  }
}

TEST(QuantTypes, ValidateRejectsUnsupportedBitsAndGroups) {
  EXPECT_THROW(validate_uniform_quant({5, 128, false}), Error);
  EXPECT_THROW(validate_uniform_quant({1, 128, false}), Error);
  EXPECT_THROW(validate_uniform_quant({4, 16, false}), Error);
  EXPECT_THROW(validate_uniform_quant({4, -1, true}), Error);
  EXPECT_THROW(uniform_quant_name({6, 32, true}), Error);
}

TEST(QuantTypes, BitsPerWeightByHand) {
  EXPECT_DOUBLE_EQ(bits_per_weight(find_uniform_quant("w4g128a"), 4096),
                   4.0 + 16.0 / 128 + 8.0 / 128);  // 4.1875
  EXPECT_DOUBLE_EQ(bits_per_weight(find_uniform_quant("w4g128s"), 4096), 4.125);
  EXPECT_DOUBLE_EQ(bits_per_weight(find_uniform_quant("w3g64a"), 256), 3.375);  // 3 + 24/64
  EXPECT_DOUBLE_EQ(bits_per_weight(find_uniform_quant("w2g32s"), 64), 2.5);     // 2 + 16/32
  EXPECT_DOUBLE_EQ(bits_per_weight(find_uniform_quant("w8pca"), 4096), 8.0 + 24.0 / 4096);
  EXPECT_DOUBLE_EQ(bits_per_weight(find_uniform_quant("w8pcs"), 16), 9.0);  // 8 + 16/16
}

TEST(QuantTypes, BitsPerWeightRejectsColsOffTheGroupGrid) {
  EXPECT_THROW(bits_per_weight(find_uniform_quant("w4g128a"), 100), Error);
  EXPECT_THROW(bits_per_weight(find_uniform_quant("w4pca"), 0), Error);
}

TEST(QuantTypes, SupportedBitsAndGroupSizesComeFromTheTable) {
  EXPECT_EQ(supported_bits(), (std::vector<int>{2, 3, 4, 8}));
  EXPECT_EQ(supported_group_sizes(), (std::vector<int64_t>{32, 64, 128, 0}));
  EXPECT_EQ(supported_bits_text(), "2, 3, 4, 8");
  EXPECT_EQ(supported_group_sizes_text(), "32, 64, 128, 0 = per-channel");
  for (const UniformQuantType& t : uniform_quant_types()) {
    EXPECT_NE(std::find(supported_bits().begin(), supported_bits().end(), t.quant.bits), supported_bits().end());
    EXPECT_NO_THROW(validate_uniform_quant(t.quant));
  }
  EXPECT_THROW(validate_bits(5, "test"), Error);
  EXPECT_THROW(validate_uniform_quant({4, 16, false}), Error);
}

}  // namespace
}  // namespace fsq
