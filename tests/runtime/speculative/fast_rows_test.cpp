// FastDecoder::step_rows (through LlamaModel::forward_positions), speculative decoding's
// verify pass: T positions of one sequence run as the T rows of every linear must give,
// bit for bit, the logits and the cached keys and values of T single decode steps. That is
// what makes speculative greedy output equal plain greedy output by construction.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "quantize/quantize_model.h"
#include "runtime/model.h"
#include "runtime/model_files.h"
#include "speculative_fixture.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

// The caches' copies: a verify pass and T single steps start from the same prefill.
KVCache clone(const KVCache& c) {
  KVCache out = c;
  for (auto& t : out.k) t = t.clone();
  for (auto& t : out.v) t = t.clone();
  return out;
}

// Prefills `prompt` random tokens, then for every T in 1..8 compares forward_positions on
// T tokens with T single forward() steps, from the same cache. Exact equality throughout.
void expect_rows_equal_steps(const LlamaModel& model, int64_t prompt) {
  ASSERT_EQ(model.fast_decode_unavailable(), "");
  const int64_t vocab = model.config().vocab_size;
  at::manual_seed(7);
  const at::Tensor ids = at::randint(0, vocab, {1, prompt}, at::kLong);
  KVCache base = model.new_cache(1, prompt + 8);
  model.forward(ids, &base);
  const at::Tensor more = at::randint(0, vocab, {8}, at::kLong).contiguous();
  const int64_t* next = more.data_ptr<int64_t>();
  for (int64_t T = 1; T <= 8; ++T) {
    SCOPED_TRACE("T = " + std::to_string(T));
    KVCache rows_cache = clone(base), steps_cache = clone(base);
    std::vector<float> rows(static_cast<size_t>(T * vocab));
    ASSERT_TRUE(model.forward_positions(next, T, rows_cache, rows.data()));
    EXPECT_EQ(rows_cache.length, prompt + T);
    for (int64_t r = 0; r < T; ++r) {
      const at::Tensor step = model.forward(at::full({1, 1}, next[r], at::kLong), &steps_cache).contiguous();
      EXPECT_EQ(std::memcmp(step.data_ptr<float>(), &rows[static_cast<size_t>(r * vocab)],
                            static_cast<size_t>(vocab) * sizeof(float)),
                0)
          << "row " << r << " differs from its single step";
    }
    for (size_t i = 0; i < base.k.size(); ++i) {
      EXPECT_TRUE(at::equal(rows_cache.k[i].narrow(2, 0, prompt + T), steps_cache.k[i].narrow(2, 0, prompt + T)));
      EXPECT_TRUE(at::equal(rows_cache.v[i].narrow(2, 0, prompt + T), steps_cache.v[i].narrow(2, 0, prompt + T)));
    }
  }
}

TEST(FastRows, DenseF32RowsEqualSingleStepsBitForBit) {
  const testing::TempDir scratch("fsq-spec-rows-dense");
  testing::write_tiny_model(scratch.path(), test::speculative_spec(1));
  const Checkpoint ckpt = Checkpoint::open(scratch.path());
  expect_rows_equal_steps(*LlamaModel::load(ckpt, RuntimeOptions{}), 5);
}

// Two threads, and a prompt long enough for the parallel attention (fast_decode.cpp's
// 1 << 15 multiply-adds): the rows' heads are then split across threads unlike a step's.
TEST(FastRows, DenseRowsEqualStepsWithParallelAttention) {
  testing::TinyModelSpec spec = test::speculative_spec(2);
  spec.heads = 9;
  spec.kv_heads = 3;
  spec.hidden = 144;
  const testing::TempDir scratch("fsq-spec-rows-threads");
  testing::write_tiny_model(scratch.path(), spec);
  const Checkpoint ckpt = Checkpoint::open(scratch.path());
  const int before = at::get_num_threads();
  at::set_num_threads(2);
  expect_rows_equal_steps(*LlamaModel::load(ckpt, RuntimeOptions{}), 200);
  at::set_num_threads(before);
}

// A packed 4-bit checkpoint (RTN, group 32), whose decode linears run on int8 activations.
TEST(FastRows, Packed4BitRowsEqualSingleStepsBitForBit) {
  const testing::TempDir scratch("fsq-spec-rows-w4");
  testing::write_tiny_model(scratch.path() / "f32", test::speculative_spec(1));
  test::quantize_rtn(scratch.path() / "f32", scratch.path() / "w4", 4);
  const ModelFiles files = ModelFiles::open(scratch.path() / "w4");
  const auto model = files.load(RuntimeOptions{});
  EXPECT_GT(model->int8_decode_linears().first, 0) << "the int8 decode kernels did not engage";
  expect_rows_equal_steps(*model, 5);
}

TEST(FastRows, RefusedWhenTheFastPathCannotTakeThem) {
  const testing::TempDir scratch("fsq-spec-rows-refused");
  testing::write_tiny_model(scratch.path(), test::speculative_spec(1));
  const Checkpoint ckpt = Checkpoint::open(scratch.path());
  const auto model = LlamaModel::load(ckpt, RuntimeOptions{});
  const int64_t ids[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> logits(static_cast<size_t>(9 * model->config().vocab_size));
  KVCache cache = model->new_cache(1, 8);
  EXPECT_FALSE(model->forward_positions(ids, 9, cache, logits.data()));  // more rows than 8
  KVCache two = model->new_cache(2, 8);
  EXPECT_FALSE(model->forward_positions(ids, 2, two, logits.data()));    // batch 2
  cache.length = 7;
  EXPECT_FALSE(model->forward_positions(ids, 2, cache, logits.data()));  // no room
  EXPECT_EQ(cache.length, 7);
  RuntimeOptions off;
  off.fast_decode = false;
  const auto slow = LlamaModel::load(ckpt, off);
  KVCache c = slow->new_cache(1, 8);
  EXPECT_FALSE(slow->forward_positions(ids, 2, c, logits.data()));
  EXPECT_EQ(c.length, 0);
}

}  // namespace
}  // namespace fsq
