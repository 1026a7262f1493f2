// Sharded packed checkpoints and the streaming writer: shards planned as Hugging Face plans
// them, an index with its keys, a sharded folder that reads exactly as the single file does,
// the reader's refusals, at most one group in memory, and a full disk that leaves nothing.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/quant_types.h"
#include "formats/shard_plan.h"
#include "quant/packed_test_support.h"

namespace fsq::packed_shards_test {
namespace {

using test::TempDir;
namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int64_t kHidden = 64;
constexpr int kLayers = 12;  // layers 10 and 11 sort before 2: name order is not number order
// Small enough that the test checkpoint (about 40 KB) takes several shards, larger than most
// of its tensors so that shards hold several.
constexpr uint64_t kTinyShardBytes = 6000;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t lines_in(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(ShardPlan, FillsShardsInOrderAndGivesAnOversizeTensorItsOwn) {
  const ShardPlan p = plan_shards({40, 40, 30, 100, 10, 10}, 80);
  ASSERT_EQ(p.shards.size(), 4u);
  const std::vector<std::pair<size_t, size_t>> want = {{0, 2}, {2, 3}, {3, 4}, {4, 6}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(p.shards[i].begin, want[i].first) << i;
    EXPECT_EQ(p.shards[i].end, want[i].second) << i;
    EXPECT_EQ(p.shards[i].file, shard_file_name(i, 4));
  }
  EXPECT_EQ(p.shards[0].file, "model-00001-of-00004.safetensors");
  EXPECT_EQ(p.total_bytes, 230u);
}

TEST(ShardPlan, WhatFitsOneShardIsModelSafetensors) {
  const ShardPlan p = plan_shards({1, 2, 3}, 6);
  ASSERT_EQ(p.shards.size(), 1u);
  EXPECT_EQ(p.shards[0].file, "model.safetensors");
  EXPECT_EQ(p.shards[0].end, 3u);
}

TEST(ShardPlan, SizesCountAsHuggingFaceCountsThem) {
  EXPECT_EQ(parse_shard_size("5GB", "--max-shard-size"), 5'000'000'000u);
  EXPECT_EQ(parse_shard_size("500MB", "--max-shard-size"), 500'000'000u);
  EXPECT_EQ(parse_shard_size("2GiB", "--max-shard-size"), uint64_t{2} << 30);
  EXPECT_EQ(parse_shard_size("1.5kb", "--max-shard-size"), 1500u);
  EXPECT_EQ(parse_shard_size("4096", "--max-shard-size"), 4096u);
  for (const char* bad : {"0", "-1GB", "5XB", "GB", "", "5 GB"}) {
    try {
      parse_shard_size(bad, "--max-shard-size");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--max-shard-size: ", 0), 0u) << e.what();
      EXPECT_EQ(lines_in(e.what()), 0u) << e.what();
    }
  }
}

// A checkpoint of kLayers groups (two linears, a norm each) plus the embedding, written the
// way fsq quantize writes it: one group per layer, one per other tensor.
struct GroupedSource {
  std::vector<float> embed = test::gaussian(32, kHidden, 1);
  PackedCheckpointMeta meta;

  GroupedSource() {
    meta.source_config = json::parse(test::llama_config());
    meta.source_sha256 = std::string(64, 'b');
  }

  static std::string layer(int i) { return "model.layers." + std::to_string(i) + "."; }

  static PackedGroup layer_group(int i) {
    PackedGroup g;
    auto norm = std::make_shared<std::vector<float>>(test::gaussian(1, kHidden, 100 + i));
    g.dense.push_back({layer(i) + "input_layernorm.weight", DType::F32, {kHidden}, test::as_bytes(*norm)});
    g.storage.push_back(norm);
    g.linears.push_back({layer(i) + "self_attn.q_proj", test::quantized(kHidden, kHidden, find_uniform_quant("w4g32a"), i),
                         "rtn", json::object(), std::nullopt});
    g.linears.push_back({layer(i) + "mlp.down_proj", test::quantized(16, kHidden, find_uniform_quant("w3g64s"), 50 + i),
                         "rtn", json::object(), std::nullopt});
    return g;
  }

  std::vector<PackedGroupMaker> groups() const {
    std::vector<PackedGroupMaker> out;
    for (int i = 0; i < kLayers; ++i) out.push_back([i] { return layer_group(i); });
    out.push_back([this] {
      PackedGroup g;
      g.dense.push_back({"model.embed_tokens.weight", DType::F32, {32, kHidden}, test::as_bytes(embed)});
      return g;
    });
    return out;
  }
};

class PackedShardsTest : public ::testing::Test {
 protected:
  TempDir tmp;
  GroupedSource src;
  fs::path single = tmp / "single";
  fs::path sharded = tmp / "sharded";

  void write_both() {
    write_packed_checkpoint(src.meta, src.groups(), single);
    write_packed_checkpoint(src.meta, src.groups(), sharded, {kTinyShardBytes});
  }
  std::vector<fs::path> shard_files() const {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(sharded))
      if (e.path().extension() == ".safetensors") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
  }
};

TEST_F(PackedShardsTest, ShardedFolderReadsExactlyAsTheSingleFile) {
  write_both();
  EXPECT_TRUE(fs::exists(single / "model.safetensors"));
  EXPECT_FALSE(fs::exists(single / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(sharded / "model.safetensors"));
  const std::vector<fs::path> files = shard_files();
  ASSERT_GE(files.size(), 3u);
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(files[i].filename(), shard_file_name(i, files.size()));
    const auto shard = SafetensorsFile::open(files[i]);
    uint64_t bytes = 0;
    for (const TensorView& t : shard->tensors()) bytes += t.nbytes;
    EXPECT_TRUE(bytes <= kTinyShardBytes || shard->tensors().size() == 1) << files[i] << " holds " << bytes;
    for (size_t k = 1; k < shard->tensors().size(); ++k)  // in file order: sorted by name
      EXPECT_LT(shard->tensors()[k - 1].name, shard->tensors()[k].name);
  }

  const PackedCheckpoint a = PackedCheckpoint::open(single), b = PackedCheckpoint::open(sharded);
  EXPECT_TRUE(b.weights().sharded());
  EXPECT_EQ(a.manifest(), b.manifest());  // same linears, same tensor sha256
  EXPECT_EQ(a.config(), b.config());
  ASSERT_EQ(a.weights().tensors().size(), b.weights().tensors().size());
  for (const TensorView* t : a.weights().tensors()) {
    const TensorView* u = b.weights().find(t->name);
    ASSERT_NE(u, nullptr) << t->name;
    EXPECT_TRUE(u->nbytes == t->nbytes && std::memcmp(u->data, t->data, t->nbytes) == 0) << t->name;
  }
  ASSERT_EQ(b.linears().size(), 2u * kLayers);
  for (const PackedLinear& l : a.linears()) EXPECT_EQ(dequantize_linear(l), dequantize_linear(*b.find_linear(l.name)));
}

TEST_F(PackedShardsTest, IndexHasTheHuggingFaceKeys) {
  write_both();
  const std::string text = read_text(sharded / "model.safetensors.index.json");
  const json index = json::parse(text);
  EXPECT_EQ(text, index.dump(2) + "\n");  // json.dumps(indent=2, sort_keys=True) + "\n"
  ASSERT_TRUE(index.is_object());
  EXPECT_EQ(index.size(), 2u);
  ASSERT_TRUE(index.contains("metadata") && index.contains("weight_map"));
  EXPECT_EQ(index["metadata"].size(), 1u);
  const PackedCheckpoint b = PackedCheckpoint::open(sharded);
  uint64_t total = 0;
  for (const TensorView* t : b.weights().tensors()) {
    total += t->nbytes;
    EXPECT_EQ(index["weight_map"].value(t->name, ""), b.weights().file_of(t->name).filename().string()) << t->name;
  }
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), total);
  EXPECT_EQ(index["weight_map"].size(), b.weights().tensors().size());
}

// Opening `dir` fails with one line that starts with `file` and says `problem`.
void expect_refused(const fs::path& dir, const fs::path& file, const std::string& problem) {
  try {
    PackedCheckpoint::open(dir);
    ADD_FAILURE() << "opened, expected: " << problem;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(file.string() + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(problem), std::string::npos) << msg;
    EXPECT_EQ(lines_in(msg), 0u) << msg;
  }
}

TEST_F(PackedShardsTest, MissingShardIsRefusedInOneLine) {
  write_both();
  const std::vector<fs::path> files = shard_files();
  fs::remove(files[1]);
  expect_refused(sharded, sharded / "model.safetensors.index.json",
                 "shard \"" + files[1].filename().string() + "\" named in weight_map does not exist");
}

TEST_F(PackedShardsTest, IndexNamingATensorTwiceIsRefusedInOneLine) {
  write_both();
  const fs::path index = sharded / "model.safetensors.index.json";
  std::string text = read_text(index);
  // The same tensor mapped to two shards: a reader keeping the first or the last would differ.
  const std::string name = "model.layers.0.input_layernorm.weight";
  const std::string entry = "\"weight_map\": {";
  ASSERT_NE(text.find(entry), std::string::npos);
  text.insert(text.find(entry) + entry.size(), "\"" + name + "\": \"" + shard_file_name(0, shard_files().size()) + "\",");
  test::write_bytes(index, text);
  expect_refused(sharded, index, "names \"" + name + "\" twice");
}

TEST_F(PackedShardsTest, ShardHoldingAnUnlistedTensorIsRefused) {
  write_both();
  const fs::path index = sharded / "model.safetensors.index.json";
  json j = json::parse(read_text(index));
  const std::string name = "model.layers.0.input_layernorm.weight";  // its shard holds others
  j["weight_map"].erase(name);
  test::write_bytes(index, j.dump(2));
  expect_refused(sharded, index, "tensor \"" + name + "\" in shard");
}

// Counts the groups alive: each made group carries one token whose deleter counts it down.
struct GroupCounter {
  int alive = 0, most_alive_at_make = 0, made = 0;

  std::vector<PackedGroupMaker> wrap(const std::vector<PackedGroupMaker>& groups) {
    std::vector<PackedGroupMaker> out;
    for (const PackedGroupMaker& make : groups)
      out.push_back([this, make] {
        most_alive_at_make = std::max(most_alive_at_make, alive);
        ++made;
        PackedGroup g = make();
        ++alive;
        g.storage.push_back(std::shared_ptr<const void>(nullptr, [this](const void*) { --alive; }));
        return g;
      });
    return out;
  }
};

TEST_F(PackedShardsTest, StreamingWriterHoldsOneGroupAtATime) {
  for (const uint64_t max_shard : {kDefaultMaxShardBytes, kTinyShardBytes}) {
    SCOPED_TRACE(max_shard);
    GroupCounter counter;
    const fs::path out = tmp / ("counted-" + std::to_string(max_shard));
    write_packed_checkpoint(src.meta, counter.wrap(src.groups()), out, {max_shard});
    EXPECT_EQ(counter.most_alive_at_make, 0);  // the previous group was dropped before each make
    EXPECT_EQ(counter.alive, 0);
    // Each layer's tensors are consecutive in name order: every group is made once per pass.
    EXPECT_EQ(counter.made, 2 * (kLayers + 1));
    EXPECT_NO_THROW(PackedCheckpoint::open(out));
  }
}

TEST_F(PackedShardsTest, GroupThatChangesBetweenPassesIsRefused) {
  int calls = 0;
  std::vector<PackedGroupMaker> groups = src.groups();
  groups[3] = [&calls] {
    PackedGroup g = GroupedSource::layer_group(3);
    if (++calls == 2) g.linears[0].matrix = test::quantized(kHidden, kHidden, find_uniform_quant("w8g32s"), 3);
    return g;
  };
  try {
    write_packed_checkpoint(src.meta, groups, sharded, {kTinyShardBytes});
    ADD_FAILURE() << "wrote a group that changed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("came out differently"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(sharded));
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()), 0);  // no staging left
}

// A full disk, without root: RLIMIT_FSIZE makes write() past the limit fail with EFBIG (the
// SIGXFSZ it also raises is ignored), in a child process so the limit stays there.
TEST_F(PackedShardsTest, FullDiskLeavesNothingAndSaysWhichFileInOneLine) {
  constexpr rlim_t kFileLimit = 8000;  // a fifth of model.safetensors
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{kFileLimit, kFileLimit};
    setrlimit(RLIMIT_FSIZE, &limit);
    std::string msg = "no error";
    try {
      write_packed_checkpoint(src.meta, src.groups(), single);
    } catch (const Error& e) {
      msg = e.what();
    }
    (void)!::write(pipe_fds[1], msg.data(), msg.size());
    _exit(0);
  }
  ::close(pipe_fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(msg.find("model.safetensors: write failed: File too large"), std::string::npos) << msg;
  EXPECT_EQ(lines_in(msg), 0u) << msg;
  EXPECT_FALSE(fs::exists(single));
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()), 0);  // no staging left

  // With room again the same groups write the folder.
  write_packed_checkpoint(src.meta, src.groups(), single);
  EXPECT_NO_THROW(PackedCheckpoint::open(single));
}

}  // namespace
}  // namespace fsq::packed_shards_test
