// The reference cache: a second run reads exactly the rows the first computed, without
// calling the reference; any change in what the rows depend on changes the key; a bad file
// or an interrupted run never yields rows.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "common/error.h"
#include "runtime/eval/perplexity.h"
#include "runtime/eval/reference_cache.h"
#include "temp_dir.h"

namespace fsq {
namespace {
namespace fs = std::filesystem;

constexpr int64_t kVocab = 23;

WindowPlan small_plan() {
  std::vector<int32_t> text(200);
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<int32_t>(2 + (i * 7) % (kVocab - 2));
  WindowOptions o;
  o.protocol = Protocol::LlamaCpp;
  o.seq_len = 16;
  o.bos_id = 1;
  return make_windows(text, o);
}

at::Tensor ref_logits(const at::Tensor& ids) {
  return at::cos(ids.to(at::kFloat).unsqueeze(-1) * 0.9f + at::arange(kVocab, at::kFloat) * 0.4f) * 3.0f;
}

const ReferenceCacheKey kKey{"00ff", "float32", "cpu", "test"};

TEST(ReferenceCache, SecondRunReadsTheSameRowsWithoutTheReference) {
  const testing::TempDir scratch("fsq-refcache");
  const fs::path& dir = scratch.path();
  WindowPlan plan = small_plan();
  ASSERT_GE(plan.windows.size(), 3u);
  int ref_calls = 0;
  LogitsFn ref = [&](const at::Tensor& ids) { ++ref_calls; return ref_logits(ids); };
  LogitsFn model = [](const at::Tensor& ids) { return ref_logits(ids) * 0.8f + 0.05f; };
  EvalRunOptions ro;
  ro.batch_size = 2;
  ro.progress = ProgressMode::Off;
  const std::string key = reference_cache_key(kKey, plan, kVocab);
  const int64_t per_window = plan.windows.front().scored();

  EvalResult direct = run_eval(model, &ref, plan, ro);
  std::vector<EvalResult> cached;
  for (int run = 0; run < 2; ++run) {
    ref_calls = 0;
    ReferenceCache cache(dir, key, plan.scored_tokens(), kVocab);
    EXPECT_EQ(cache.hit(), run == 1);
    RefRowsFn rows = cached_reference_rows(cache, reference_rows(ref, plan), per_window);
    cached.push_back(run_eval_rows(model, &rows, plan, ro));
    cache.commit();
    EXPECT_EQ(ref_calls, run == 0 ? int((plan.windows.size() + 1) / 2) : 0);
  }
  for (const EvalResult& r : cached) {
    EXPECT_EQ(r.compare->kl, direct.compare->kl);  // bit for bit
    EXPECT_EQ(r.ref->nll_sum, direct.ref->nll_sum);
    EXPECT_EQ(r.compare->agree, direct.compare->agree);
  }
  EXPECT_EQ(fs::file_size(dir / ("ref-" + key + ".f32")), uint64_t(plan.scored_tokens() * kVocab * 4));
}

TEST(ReferenceCache, KeyCoversWeightsWindowsAndRuntime) {
  WindowPlan plan = small_plan();
  const std::string base = reference_cache_key(kKey, plan, kVocab);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, reference_cache_key(kKey, plan, kVocab));
  ReferenceCacheKey k = kKey;
  k.ref_weights_sha256 = "00fe";
  EXPECT_NE(base, reference_cache_key(k, plan, kVocab));
  k = kKey;
  k.dtype = "bfloat16";
  EXPECT_NE(base, reference_cache_key(k, plan, kVocab));
  k = kKey;
  k.fsq_build = "other";
  EXPECT_NE(base, reference_cache_key(k, plan, kVocab));
  WindowPlan changed = plan;
  changed.windows.back().ids.back() ^= 1;
  EXPECT_NE(base, reference_cache_key(kKey, changed, kVocab));
  WindowPlan fewer = plan;
  fewer.windows.pop_back();
  EXPECT_NE(base, reference_cache_key(kKey, fewer, kVocab));
  EXPECT_NE(base, reference_cache_key(kKey, plan, kVocab + 1));
}

TEST(ReferenceCache, WrongSizedFileIsRefusedNamingIt) {
  const testing::TempDir scratch("fsq-refcache-bad");
  const fs::path& dir = scratch.path();
  const std::string key = std::string(64, 'a');
  { std::ofstream(dir / ("ref-" + key + ".f32"), std::ios::binary) << "short"; }
  try {
    ReferenceCache cache(dir, key, 10, kVocab);
    FAIL() << "a truncated cache file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ref-" + key), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("wrong size"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ReferenceCache(dir / "missing", key, 10, kVocab), Error);
}

TEST(ReferenceCache, InterruptedRunLeavesNoFile) {
  const testing::TempDir scratch("fsq-refcache-int");
  const fs::path& dir = scratch.path();
  WindowPlan plan = small_plan();
  int calls = 0;
  LogitsFn ref = ref_logits;
  LogitsFn model = [&](const at::Tensor& ids) {
    if (++calls == 2) throw Error("model", "interrupted");
    return ref_logits(ids);
  };
  EvalRunOptions ro;
  ro.progress = ProgressMode::Off;
  {
    ReferenceCache cache(dir, reference_cache_key(kKey, plan, kVocab), plan.scored_tokens(), kVocab);
    RefRowsFn rows = cached_reference_rows(cache, reference_rows(ref, plan), plan.windows.front().scored());
    EXPECT_THROW(run_eval_rows(model, &rows, plan, ro), Error);
    EXPECT_THROW(cache.commit(), Error);  // fewer rows than planned
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

// The folder stays within its limit by deleting the least recently used ref-*.f32 files
// (a touch renews one), never the file the run used and never anything else.
TEST(ReferenceCache, TrimDeletesLeastRecentlyUsedFilesDownToTheLimit) {
  const testing::TempDir scratch("fsq-refcache-trim");
  const fs::path& dir = scratch.path();
  const auto make = [&](const std::string& name, size_t bytes, int age_s) {
    const fs::path p = dir / name;
    std::ofstream(p, std::ios::binary) << std::string(bytes, 'x');
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
    return p;
  };
  const fs::path a = make("ref-a.f32", 100, 400), b = make("ref-b.f32", 100, 300), c = make("ref-c.f32", 100, 200);
  const fs::path d = make("ref-d.f32", 100, 100), other = make("notes.txt", 1000, 500);
  EXPECT_EQ(trim_reference_cache(dir, 0, a).files, 0);  // 0: no limit
  touch(b);                                              // b is now the most recently used
  const ReferenceCacheTrim t = trim_reference_cache(dir, 250, a);
  EXPECT_EQ(t.files, 2);
  EXPECT_EQ(t.bytes, 200u);
  EXPECT_TRUE(fs::exists(a)) << "the file the run used stays";
  EXPECT_TRUE(fs::exists(b)) << "renewed by touch";
  EXPECT_FALSE(fs::exists(c));
  EXPECT_FALSE(fs::exists(d));
  EXPECT_TRUE(fs::exists(other)) << "not a cache file";
  EXPECT_EQ(trim_reference_cache(dir, 250, a).files, 0);  // within the limit already
}

}  // namespace
}  // namespace fsq
