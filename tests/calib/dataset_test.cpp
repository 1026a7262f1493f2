// Calibration sources (.txt, folder, .jsonl), seeded window draws and their errors.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "calib/dataset.h"
#include "common/error.h"
#include "formats/tokenizer.h"
#include "fixtures.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CalibDraw, SameSeedSameStartsDifferentSeedDifferentStarts) {
  auto a = draw_window_starts(128, 10'000, 42);
  auto b = draw_window_starts(128, 10'000, 42);
  auto c = draw_window_starts(128, 10'000, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (int64_t s : a) {
    EXPECT_GE(s, 0);
    EXPECT_LE(s, 10'000);
  }
  // Draws cover the range: 128 draws over 10k positions are spread, not clustered.
  std::set<int64_t> distinct(a.begin(), a.end());
  EXPECT_GT(distinct.size(), 120u);
  EXPECT_LT(*std::min_element(a.begin(), a.end()), 1'000);
  EXPECT_GT(*std::max_element(a.begin(), a.end()), 9'000);
}

TEST(CalibDraw, SinglePositionRangeAlwaysDrawsZero) {
  for (int64_t s : draw_window_starts(5, 0, 7)) EXPECT_EQ(s, 0);
}

TEST(CalibText, FileFolderAndJsonl) {
  const testing::TempDir scratch("fsq-calib-text");
  const auto& dir = scratch.path();
  write(dir / "one.txt", "hello world");
  auto file = read_calibration_text(dir / "one.txt");
  ASSERT_EQ(file.documents.size(), 1u);
  EXPECT_EQ(file.documents[0], "hello world");
  EXPECT_EQ(file.bytes, 11);
  EXPECT_EQ(file.sha256.size(), 64u);

  fs::create_directories(dir / "folder");
  write(dir / "folder" / "b.txt", "second");
  write(dir / "folder" / "a.txt", "first");
  write(dir / "folder" / "notes.md", "ignored");
  auto folder = read_calibration_text(dir / "folder");
  ASSERT_EQ(folder.documents.size(), 2u);
  EXPECT_EQ(folder.documents[0], "first");  // sorted by name
  EXPECT_EQ(folder.documents[1], "second");

  write(dir / "d.jsonl", "{\"text\": \"alpha\"}\n\n{\"text\": \"beta\", \"meta\": 1}\n{\"text\": \"\"}\n");
  auto jsonl = read_calibration_text(dir / "d.jsonl");
  ASSERT_EQ(jsonl.documents.size(), 2u);
  EXPECT_EQ(jsonl.documents[1], "beta");
}

TEST(CalibText, BadSourcesNameTheFileAndTheProblem) {
  const testing::TempDir scratch("fsq-calib-bad");
  const auto& dir = scratch.path();
  write(dir / "empty.txt", "");
  write(dir / "bad.jsonl", "{\"text\": \"ok\"}\nnot json\n");
  write(dir / "notext.jsonl", "{\"content\": \"x\"}\n");
  fs::create_directories(dir / "nofiles");
  struct Case {
    fs::path path;
    std::string expect;
  };
  for (const Case& c : {Case{dir / "empty.txt", "empty"}, Case{dir / "bad.jsonl", "bad.jsonl:2"},
                        Case{dir / "notext.jsonl", "\"text\""}, Case{dir / "nofiles", "no .txt files"},
                        Case{dir / "missing.txt", "not found"}}) {
    std::string msg = error_of([&] { read_calibration_text(c.path); });
    EXPECT_NE(msg.find(c.path.filename().string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

class CalibSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::stories260k_dir();
    FSQ_REQUIRE_FIXTURE(model_ / "tokenizer.model", testing::kHowToStageShared);
    tok_ = load_tokenizer(model_);
    text_.source = "memory";
    text_.documents = {"Once upon a time there was a little girl named Lily.",
                       "She liked to play outside in the sun with her dog."};
  }
  fs::path model_;
  std::unique_ptr<Tokenizer> tok_;
  CalibrationText text_;
};

TEST_F(CalibSetTest, WindowsAreSlicesOfTheStreamAtTheRecordedStarts) {
  std::vector<int32_t> stream;
  for (const auto& d : text_.documents) {
    auto ids = tok_->encode(d);
    stream.insert(stream.end(), ids.begin(), ids.end());
  }
  WindowDraw draw{6, 8, 5, /*allow_overlap=*/true};  // 6 x 7 tokens from a ~25-token text
  CalibrationSet set = make_calibration_set(*tok_, text_, draw);
  ASSERT_TRUE(tok_->add_bos());  // Llama-2 style SentencePiece: windows start with BOS
  EXPECT_TRUE(set.bos);
  EXPECT_EQ(set.stream_tokens, static_cast<int64_t>(stream.size()));
  ASSERT_EQ(set.windows.size(), 6u);
  for (size_t w = 0; w < set.windows.size(); ++w) {
    ASSERT_EQ(set.windows[w].size(), 8u);
    EXPECT_EQ(set.windows[w][0], tok_->bos_id());
    for (size_t t = 1; t < 8; ++t) EXPECT_EQ(set.windows[w][t], stream[static_cast<size_t>(set.starts[w]) + t - 1]);
  }
  EXPECT_EQ(make_calibration_set(*tok_, text_, draw).windows, set.windows);
  draw.seed = 6;
  EXPECT_NE(make_calibration_set(*tok_, text_, draw).starts, set.starts);
}

TEST_F(CalibSetTest, TooFewTokensForOneWindowIsAnError) {
  WindowDraw draw{4, 10'000, 1};
  std::string msg = error_of([&] { make_calibration_set(*tok_, text_, draw); });
  EXPECT_NE(msg.find("memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("too little text"), std::string::npos) << msg;
}

// Fewer tokens than samples x window tokens: the windows would have to repeat text, so the
// draw is refused with both counts and the ways out, unless allow_overlap (then a note).
TEST_F(CalibSetTest, TextShorterThanTheWindowsIsRefusedWithTheCounts) {
  const int64_t n = make_calibration_set(*tok_, text_, WindowDraw{1, 2, 1}).stream_tokens;
  ASSERT_GT(n, 8);
  WindowDraw draw{n, 8, 1};  // n windows of 7 text tokens (BOS first): 7n > n
  const std::string msg = error_of([&] { make_calibration_set(*tok_, text_, draw); });
  EXPECT_EQ(msg.rfind("memory: too little text for the calibration windows without overlap", 0), 0u) << msg;
  const std::string counts = "the text has " + std::to_string(n) + " tokens but " + std::to_string(n) +
                             " windows of 7 text tokens need " + std::to_string(7 * n);
  EXPECT_NE(msg.find(counts), std::string::npos) << msg;
  for (const char* way : {"shorter --seq-len", "fewer --samples", "more text", "--allow-overlap"})
    EXPECT_NE(msg.find(way), std::string::npos) << msg << " lacks " << way;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST_F(CalibSetTest, ExactlyEnoughTextIsAcceptedOneTokenMoreIsNot) {
  const int64_t n = make_calibration_set(*tok_, text_, WindowDraw{1, 2, 1}).stream_tokens;
  // --seq-len 2 with BOS: one text token per window, so n windows need exactly n tokens.
  const CalibrationSet exact = make_calibration_set(*tok_, text_, WindowDraw{n, 2, 1});
  EXPECT_EQ(exact.windows.size(), static_cast<size_t>(n));
  EXPECT_TRUE(exact.overlap_note.empty());
  const std::string msg = error_of([&] { make_calibration_set(*tok_, text_, WindowDraw{n + 1, 2, 1}); });
  EXPECT_NE(msg.find("need " + std::to_string(n + 1)), std::string::npos) << msg;
}

TEST_F(CalibSetTest, AllowOverlapDrawsTheSameWindowsAndSaysSo) {
  const int64_t n = make_calibration_set(*tok_, text_, WindowDraw{1, 2, 1}).stream_tokens;
  const CalibrationSet set = make_calibration_set(*tok_, text_, WindowDraw{n, 8, 9, /*allow_overlap=*/true});
  ASSERT_EQ(set.windows.size(), static_cast<size_t>(n));
  EXPECT_EQ(set.starts, draw_window_starts(n, n - 7, 9));  // the draw itself is unchanged
  EXPECT_EQ(set.overlap_note.rfind("memory: the text has " + std::to_string(n) + " tokens", 0), 0u) << set.overlap_note;
  EXPECT_NE(set.overlap_note.find("windows overlap (--allow-overlap)"), std::string::npos) << set.overlap_note;
  EXPECT_EQ(set.overlap_note.find('\n'), std::string::npos);
  // Enough text: allow_overlap changes nothing and notes nothing.
  const CalibrationSet plenty = make_calibration_set(*tok_, text_, WindowDraw{1, 8, 9, /*allow_overlap=*/true});
  EXPECT_TRUE(plenty.overlap_note.empty());
  EXPECT_EQ(plenty.windows, make_calibration_set(*tok_, text_, WindowDraw{1, 8, 9}).windows);
}

}  // namespace
}  // namespace fsq
