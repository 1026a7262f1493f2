// Memory and latency models against values computed by hand from the published configs.
#include <gtest/gtest.h>

#include "plan/cost_model.h"
#include "plan/gpu_specs.h"
#include "plan/model_spec.h"

namespace fsq::plan {
namespace {

// OPT-13b: h 5120, ffn 20480, 40 heads, vocab 50272, 2048 positions, biases, LayerNorms.
TEST(MemoryModel, Opt13bByHand) {
  ModelSpec m = model_preset("opt-13b");
  // Linears: q, k, v, out 4 * 5120^2 = 104,857,600; fc1 + fc2 2 * 5120 * 20480 = 209,715,200.
  EXPECT_EQ(layer_linear_params(m), 314572800);
  // Biases 3*5120 + 5120 + 20480 + 5120 = 46,080; two LayerNorms with bias 4 * 5120 = 20,480.
  EXPECT_EQ(layer_fp16_params(m), 66560);
  EXPECT_EQ(layer_weight_bytes(m, 16), (314572800 + 66560) * 2);
  // 8-bit: one byte per weight + an fp16 scale per output row (46,080 rows) + fp16 rest.
  EXPECT_EQ(layer_weight_bytes(m, 8), 314572800 + 46080 * 2 + 66560 * 2);
  // 4-bit: half a byte per weight + (scale, zero) fp16 per 128 inputs: q,k,v,out 40 * 5120 * 4
  // each, fc1 40 * 20480 * 4, fc2 160 * 5120 * 4: 9,830,400 in all.
  EXPECT_EQ(layer_weight_bytes(m, 4), 157286400 + 9830400 + 133120);
  // 3-bit: rows of 5120 inputs take 1920 bytes, fc2's rows of 20480 take 7680.
  EXPECT_EQ(layer_weight_bytes(m, 3), 4 * 5120 * 1920 + 20480 * 1920 + 5120 * 7680 + 9830400 + 133120);
  // Token table + (2048 + 2) positions, fp16.
  EXPECT_EQ(embedding_bytes(m), (50272LL + 2050) * 5120 * 2);
  // Final LayerNorm (weight, bias) + lm_head (a copy of the tied table on the last stage).
  EXPECT_EQ(head_bytes(m), (2LL * 5120 + 50272LL * 5120) * 2);

  Workload w;
  w.prompt_len = 512;
  w.new_tokens = 100;
  w.batch = 32;
  w.kv_bits = 16;
  w.prefill_microbatch = 4;
  w.decode_microbatch = 8;
  // K and V, 32 sequences, 612 positions, 5120 values, 2 bytes.
  EXPECT_EQ(layer_kv_cache_bytes(m, w), 2LL * 32 * 612 * 5120 * 2);
  // Prefill, 4 x 512 tokens: attention 2048 * (3*5120 + 2*5120) + 4 * 40 * 512^2 = 94,371,840
  // beats the MLP's 2048 * (2*5120 + 20480) = 62,914,560.
  EXPECT_EQ(prefill_temp_bytes(m, w), 94371840LL * 2);
  // Decode, 8 sequences over 612 positions: 8 * 25600 + 8 * 40 * 612 = 400,640 > 8 * 30720.
  EXPECT_EQ(decode_temp_bytes(m, w), 400640LL * 2);
  EXPECT_EQ(logits_bytes(m, w), 8LL * 50272 * 2);
}

// Llama-2-7b: h 4096, ffn 11008 (gated), 32 heads, no biases, RMSNorm, untied.
TEST(MemoryModel, Llama2_7bByHand) {
  ModelSpec m = model_preset("llama-2-7b");
  // 4 * 4096^2 + 3 * 4096 * 11008.
  EXPECT_EQ(layer_linear_params(m), 202375168);
  EXPECT_EQ(layer_fp16_params(m), 8192);
  EXPECT_EQ(layer_weight_bytes(m, 16), (202375168LL + 8192) * 2);
  // Output rows: 4 * 4096 + 2 * 11008 + 4096 = 42,496.
  EXPECT_EQ(layer_weight_bytes(m, 8), 202375168LL + 42496 * 2 + 16384);
  // Groups: q,k,v,o 4 * 32 * 4096 * 4; gate, up 2 * 32 * 11008 * 4; down ceil(11008/128) = 86
  // groups * 4096 * 4: 6,324,224 in all.
  EXPECT_EQ(layer_weight_bytes(m, 4), 101187584LL + 6324224 + 16384);
  // 3-bit rows: 4096 inputs -> 1536 bytes, 11008 -> 4128.
  EXPECT_EQ(layer_weight_bytes(m, 3), 4LL * 4096 * 1536 + 2LL * 11008 * 1536 + 4096LL * 4128 + 6324224 + 16384);
  EXPECT_EQ(embedding_bytes(m), 32000LL * 4096 * 2);
  EXPECT_EQ(head_bytes(m), (4096LL + 32000LL * 4096) * 2);

  Workload w;
  w.prompt_len = 1024;
  w.new_tokens = 128;
  w.batch = 8;
  w.kv_bits = 8;
  w.prefill_microbatch = 2;
  w.decode_microbatch = 4;
  EXPECT_EQ(layer_kv_cache_bytes(m, w), 2LL * 8 * 1152 * 4096 * 1);
  // 2048 * (5 * 4096) + 2 * 32 * 1024^2 = 109,051,904 > MLP 2048 * (8192 + 2 * 11008).
  EXPECT_EQ(prefill_temp_bytes(m, w), 109051904LL * 2);
  // 4 * 20480 + 4 * 32 * 1152 = 229,376 > MLP 4 * 30208.
  EXPECT_EQ(decode_temp_bytes(m, w), 229376LL * 2);
}

TEST(MemoryModel, GroupedQueryAttentionShrinksTheKvCache) {
  ModelSpec m = model_preset("llama-2-70b");  // 64 heads, 8 KV heads of 128
  Workload w;
  w.prompt_len = 100;
  w.new_tokens = 28;
  w.batch = 1;
  EXPECT_EQ(m.kv_dim(), 1024);
  EXPECT_EQ(layer_kv_cache_bytes(m, w), 2LL * 128 * 1024 * 2);
  // q 8192^2, k and v 8192 * 1024, o 8192^2, three MLP linears 8192 * 28672.
  EXPECT_EQ(layer_linear_params(m), 2LL * 8192 * 8192 + 2LL * 8192 * 1024 + 3LL * 8192 * 28672);
}

// Decode of one sequence is bound by the bytes read: weights plus the KV cache at the
// mean context; prefill of a long prompt by FLOPs.
TEST(LatencyModel, RooflineByHand) {
  ModelSpec m = model_preset("llama-2-7b");
  GpuSpec a100 = GpuSpecTable::builtin().find("A100-80G", "test");
  Workload w;
  w.prompt_len = 2048;
  w.new_tokens = 100;
  w.batch = 1;
  Efficiency e;  // 0.6 of peak FLOPs, 0.8 of peak bandwidth
  PhaseSeconds t = layer_seconds(m, w, a100, 16, e);
  const double kv_token_bytes = 2.0 * 4096 * 2;
  const double decode_bytes = 404766720.0 + (2048 + 50) * kv_token_bytes;
  // Relative tolerance: a handful of double operations on values below 2^53.
  constexpr double kRel = 1e-12;
  EXPECT_NEAR(t.decode, decode_bytes / (2039e9 * 0.8), decode_bytes / (2039e9 * 0.8) * kRel);
  const double prefill_flops = 2.0 * 202375168 * 2048 + 2.0 * 2048.0 * 2048 * 4096;
  EXPECT_NEAR(t.prefill, prefill_flops / (312e12 * 0.6), prefill_flops / (312e12 * 0.6) * kRel);
  // Fewer bits move fewer bytes: decode gets faster, prefill stays FLOP-bound.
  PhaseSeconds t4 = layer_seconds(m, w, a100, 4, e);
  EXPECT_LT(t4.decode, t.decode / 2.5);
  EXPECT_DOUBLE_EQ(t4.prefill, t.prefill);
}

TEST(GpuSpecs, BuiltinTableHasThePapersDevicesAndRejectsUnknownOnes) {
  GpuSpecTable t = GpuSpecTable::builtin();
  for (const char* name : {"V100-32G", "P100-12G", "T4-16G", "A10", "A100-40G", "A100-80G", "A800-80G", "L4", "A6000",
                           "RTX3090", "RTX4090", "H100-80G", "H200"})
    EXPECT_NO_THROW(t.find(name, "test")) << name;
  EXPECT_EQ(t.find("t4-16g", "test").memory_bytes(), 16LL << 30);
  try {
    t.find("B300", "cluster.json: devices[2]");
    FAIL() << "no error";
  } catch (const std::exception& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cluster.json: devices[2]: unknown GPU type 'B300'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("T4-16G"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fsq::plan
