// Window construction per protocol on synthetic streams: counts, scored positions, BOS.
#include <gtest/gtest.h>

#include <numeric>

#include "common/error.h"
#include "runtime/eval/windows.h"

namespace fsq {
namespace {

constexpr int32_t kBos = 1;

// Distinct ids 100, 101, ... so every token's origin is visible.
std::vector<int32_t> stream(size_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), 100);
  return v;
}

WindowOptions opts(Protocol p, int64_t seq_len, bool add_bos, int64_t max_windows = 0) {
  WindowOptions o;
  o.protocol = p;
  o.seq_len = seq_len;
  o.bos_id = kBos;
  o.add_bos = add_bos;
  o.max_windows = max_windows;
  o.source = "synthetic.txt";
  return o;
}

// The token ids a window scores, in order.
std::vector<int32_t> targets(const Window& w) {
  std::vector<int32_t> t;
  for (int64_t p = w.score_begin; p < w.score_end; ++p) t.push_back(w.ids[static_cast<size_t>(p + 1)]);
  return t;
}

TEST(Windows, ProtocolNamesRoundTrip) {
  for (const auto& n : protocol_names()) EXPECT_EQ(protocol_name(parse_protocol(n)), n);
  EXPECT_THROW(parse_protocol("wikitext"), Error);
}

TEST(Windows, GptqWithBosSmallExample) {
  // stream = [BOS, 100..108] (10 tokens), seq_len 4 -> 2 windows, 2 tokens dropped.
  WindowPlan p = make_windows(stream(9), opts(Protocol::Gptq, 4, true));
  ASSERT_EQ(p.windows.size(), 2u);
  EXPECT_EQ(p.stream_tokens, 10);
  EXPECT_EQ(p.stride, 4);
  EXPECT_EQ(p.windows[0].ids, (std::vector<int32_t>{kBos, 100, 101, 102}));
  EXPECT_EQ(p.windows[1].ids, (std::vector<int32_t>{103, 104, 105, 106}));
  EXPECT_EQ(targets(p.windows[0]), (std::vector<int32_t>{100, 101, 102}));
  EXPECT_EQ(targets(p.windows[1]), (std::vector<int32_t>{104, 105, 106}));
  EXPECT_EQ(p.scored_tokens(), 6);
}

TEST(Windows, GptqWithoutBos) {
  WindowPlan p = make_windows(stream(9), opts(Protocol::Gptq, 4, false));
  ASSERT_EQ(p.windows.size(), 2u);
  EXPECT_EQ(p.windows[0].ids, (std::vector<int32_t>{100, 101, 102, 103}));
  EXPECT_EQ(p.windows[1].ids, (std::vector<int32_t>{104, 105, 106, 107}));
  for (const auto& w : p.windows)
    for (int32_t id : w.ids) EXPECT_NE(id, kBos);
}

TEST(Windows, LlamaCppReplacesFirstTokenWithBosAndScoresSecondHalf) {
  // stream = [BOS, 100..110] (12 tokens), n_ctx 6 -> 2 windows; positions 3,4 score 4,5.
  WindowPlan p = make_windows(stream(11), opts(Protocol::LlamaCpp, 6, true));
  ASSERT_EQ(p.windows.size(), 2u);
  EXPECT_EQ(p.windows[0].ids, (std::vector<int32_t>{kBos, 100, 101, 102, 103, 104}));
  EXPECT_EQ(p.windows[1].ids, (std::vector<int32_t>{kBos, 106, 107, 108, 109, 110}));
  for (const auto& w : p.windows) {
    EXPECT_EQ(w.score_begin, 3);
    EXPECT_EQ(w.score_end, 5);
    EXPECT_EQ(w.scored(), 6 / 2 - 1);
  }
  EXPECT_EQ(targets(p.windows[0]), (std::vector<int32_t>{103, 104}));
  EXPECT_EQ(targets(p.windows[1]), (std::vector<int32_t>{109, 110}));
}

TEST(Windows, LlamaCppWithoutBosKeepsTokens) {
  WindowPlan p = make_windows(stream(12), opts(Protocol::LlamaCpp, 6, false));
  ASSERT_EQ(p.windows.size(), 2u);
  EXPECT_EQ(p.windows[1].ids, (std::vector<int32_t>{106, 107, 108, 109, 110, 111}));
}

TEST(Windows, BosWindowPrependsBosAndScoresEveryChunkToken) {
  // 10 tokens, seq_len 4 -> chunks of 3: [100..102], [103..105], [106..108]; 109 dropped.
  WindowPlan p = make_windows(stream(10), opts(Protocol::BosWindow, 4, true));
  ASSERT_EQ(p.windows.size(), 3u);
  EXPECT_EQ(p.stride, 3);
  EXPECT_EQ(p.stream_tokens, 10);
  EXPECT_EQ(p.windows[0].ids, (std::vector<int32_t>{kBos, 100, 101, 102}));
  EXPECT_EQ(p.windows[2].ids, (std::vector<int32_t>{kBos, 106, 107, 108}));
  EXPECT_EQ(targets(p.windows[0]), (std::vector<int32_t>{100, 101, 102}));
  EXPECT_EQ(p.scored_tokens(), 9);
}

TEST(Windows, BosWindowIgnoresAddBosFlag) {
  WindowPlan a = make_windows(stream(10), opts(Protocol::BosWindow, 4, true));
  WindowPlan b = make_windows(stream(10), opts(Protocol::BosWindow, 4, false));
  ASSERT_EQ(a.windows.size(), b.windows.size());
  for (size_t i = 0; i < a.windows.size(); ++i) EXPECT_EQ(a.windows[i].ids, b.windows[i].ids);
}

// Every protocol, every short stream length and seq_len, against the protocol definitions.
TEST(Windows, ExhaustiveSmallStreams) {
  for (Protocol proto : {Protocol::Gptq, Protocol::LlamaCpp, Protocol::BosWindow}) {
    for (bool add_bos : {false, true}) {
      for (int64_t L = 3; L <= 9; ++L) {
        for (size_t n = 0; n <= 40; ++n) {
          auto text = stream(n);
          std::vector<int32_t> full;  // the stream each protocol cuts
          if (add_bos && proto != Protocol::BosWindow) full.push_back(kBos);
          full.insert(full.end(), text.begin(), text.end());
          const int64_t stride = proto == Protocol::BosWindow ? L - 1 : L;
          const int64_t expect = static_cast<int64_t>(full.size()) / stride;
          SCOPED_TRACE(protocol_name(proto) + " add_bos=" + std::to_string(add_bos) +
                       " L=" + std::to_string(L) + " n=" + std::to_string(n));
          if (expect == 0) {
            EXPECT_THROW(make_windows(text, opts(proto, L, add_bos)), Error);
            continue;
          }
          WindowPlan p = make_windows(text, opts(proto, L, add_bos));
          ASSERT_EQ(static_cast<int64_t>(p.windows.size()), expect);
          EXPECT_EQ(p.total_windows, expect);
          EXPECT_EQ(p.stride, stride);
          for (int64_t w = 0; w < expect; ++w) {
            const Window& win = p.windows[static_cast<size_t>(w)];
            ASSERT_EQ(static_cast<int64_t>(win.ids.size()), L);
            const int64_t start = w * stride;
            for (int64_t i = 0; i < L; ++i) {
              int32_t want;
              if (proto == Protocol::BosWindow)
                want = i == 0 ? kBos : full[static_cast<size_t>(start + i - 1)];
              else if (proto == Protocol::LlamaCpp && add_bos && i == 0)
                want = kBos;
              else
                want = full[static_cast<size_t>(start + i)];
              EXPECT_EQ(win.ids[static_cast<size_t>(i)], want) << "window " << w << " pos " << i;
            }
            const int64_t begin = proto == Protocol::LlamaCpp ? L / 2 : 0;
            EXPECT_EQ(win.score_begin, begin);
            EXPECT_EQ(win.score_end, L - 1);
          }
          // bos-window scores each kept stream token exactly once, in order.
          if (proto == Protocol::BosWindow) {
            std::vector<int32_t> all;
            for (const auto& w : p.windows) {
              auto t = targets(w);
              all.insert(all.end(), t.begin(), t.end());
            }
            EXPECT_EQ(all, std::vector<int32_t>(text.begin(), text.begin() + expect * (L - 1)));
          }
        }
      }
    }
  }
}

TEST(Windows, MaxWindowsLimitsButKeepsTotal) {
  WindowPlan p = make_windows(stream(100), opts(Protocol::Gptq, 8, true, 3));
  EXPECT_EQ(p.windows.size(), 3u);
  EXPECT_EQ(p.total_windows, 101 / 8);
  EXPECT_EQ(p.scored_tokens(), 3 * 7);
}

TEST(Windows, ErrorsNameTheProblem) {
  try {
    make_windows(stream(5), opts(Protocol::BosWindow, 256, true));
    FAIL() << "expected fsq::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("synthetic.txt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("too few tokens"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_windows(stream(50), opts(Protocol::Gptq, 1, true)), Error);
  EXPECT_THROW(make_windows(stream(50), opts(Protocol::LlamaCpp, 2, true)), Error);
  WindowOptions no_bos = opts(Protocol::BosWindow, 4, false);
  no_bos.bos_id = -1;
  EXPECT_THROW(make_windows(stream(50), no_bos), Error);
  EXPECT_THROW(make_windows({}, opts(Protocol::Gptq, 4, false)), Error);
}

TEST(Windows, ResolveSeqLen) {
  EXPECT_EQ(resolve_seq_len(std::nullopt, 512), 512);
  EXPECT_EQ(resolve_seq_len(std::nullopt, 8192), kDefaultSeqLen);
  EXPECT_EQ(resolve_seq_len(256, 512), 256);
  EXPECT_THROW(resolve_seq_len(1024, 512), Error);
  EXPECT_THROW(resolve_seq_len(1, 512), Error);
}

}  // namespace
}  // namespace fsq
