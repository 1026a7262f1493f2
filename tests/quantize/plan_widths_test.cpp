// expand_plan_widths: a plan's widths per layer or per linear, as the quantize pipeline
// applies them, and the plans it refuses.
#include <gtest/gtest.h>

#include "common/error.h"
#include "formats/architectures.h"
#include "quantize/plan_widths.h"

namespace fsq {
namespace {

const ArchSpec& llama() { return arch_spec_for("LlamaForCausalLM"); }

LayerWidths every_linear_at(int bits) {
  LayerWidths w;
  for (const auto& spec : llama().linears) w[spec.role] = bits;
  return w;
}

std::string error_of(const std::vector<int>& layer_bits, const std::vector<LayerWidths>& linear_bits, int64_t layers,
                     const std::string& method) {
  try {
    expand_plan_widths(layer_bits, linear_bits, llama(), layers, method, method == "squeezellm");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PlanWidths, PerLayerPlanGivesEveryLinearItsLayersWidth) {
  const std::vector<LayerWidths> w = expand_plan_widths({3, 16}, {}, llama(), 2, "awq", false);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], every_linear_at(3));
  EXPECT_EQ(w[1], every_linear_at(16));
  EXPECT_TRUE(all_widths_are(w[1], 16));
  EXPECT_FALSE(any_width_is(w[0], 16));
  EXPECT_EQ(count_widths(w, false), "1 at 3 bits, 1 at 16 bits");
  EXPECT_TRUE(expand_plan_widths({}, {}, llama(), 2, "rtn", false).empty());
}

TEST(PlanWidths, PerLinearPlanKeepsEachLinearsWidth) {
  LayerWidths mixed = every_linear_at(4);
  mixed["down_proj"] = 8;
  mixed["v_proj"] = 16;
  const std::vector<LayerWidths> w = expand_plan_widths({}, {mixed, every_linear_at(3)}, llama(), 2, "squeezellm", true);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], mixed);
  EXPECT_TRUE(any_width_is(w[0], 16));
  EXPECT_FALSE(all_widths_are(w[0], 16));
  EXPECT_EQ(count_widths(w, true), "7 at 3 bits, 5 at 4 bits, 1 at 8 bits, 1 at 16 bits");
}

TEST(PlanWidths, PlansTheMethodCannotApplyAreRefused) {
  LayerWidths missing = every_linear_at(4);
  missing.erase("up_proj");
  EXPECT_NE(error_of({}, {missing}, 1, "rtn").find("layer 0 gives no width for up_proj"), std::string::npos);
  LayerWidths unknown = every_linear_at(4);
  unknown["w_proj"] = 4;
  EXPECT_NE(error_of({}, {unknown}, 1, "rtn").find("names 'w_proj', which is not a linear"), std::string::npos);
  EXPECT_NE(error_of({}, {every_linear_at(2)}, 1, "squeezellm").find("cannot store 2-bit linears"), std::string::npos);
  EXPECT_NE(error_of({5}, {}, 1, "rtn").find("cannot store 5-bit layers"), std::string::npos);
  EXPECT_NE(error_of({4, 4}, {}, 3, "rtn").find("widths for 2 layers, the model has 3"), std::string::npos);
  EXPECT_NE(error_of({4}, {every_linear_at(4)}, 1, "rtn").find("per layer and per linear"), std::string::npos);
  EXPECT_EQ(error_of({}, {every_linear_at(2)}, 1, "rtn"), "");
  EXPECT_EQ(error_of({}, {every_linear_at(16)}, 1, "awq"), "");
}

}  // namespace
}  // namespace fsq
