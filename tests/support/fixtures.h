// Where tests find fixtures that are staged (../shared) or fetched (SmolLM2), and what a
// test does when one is absent: FSQ_REQUIRE_FIXTURE skips it on a developer machine and
// fails it under CI, where every fixture is expected. Header-only (sanitizer builds use it).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace fsq::testing {

// ../shared beside the checkout (FSQ_SHARED_DIR): models/ and data/ staged by hand or CI.
inline std::filesystem::path shared_dir() { return std::filesystem::path(FSQ_SHARED_DIR); }
inline std::filesystem::path stories260k_dir() { return shared_dir() / "models" / "stories260K"; }
inline std::filesystem::path llama2_tokenizer() {
  return shared_dir() / "models" / "llama2-tokenizer" / "tokenizer.model";
}
inline std::filesystem::path tinystories_val() {
  return shared_dir() / "data" / "tinystories" / "tinystories_val.txt";
}
inline std::filesystem::path wikitext_test() { return shared_dir() / "data" / "wikitext-2-raw" / "wiki.test.raw"; }

// scripts/fetch-model.sh smollm2-135m puts the GGUF here ($FSQ_CACHE, default ~/.cache/fsq).
inline std::filesystem::path smollm2_gguf() {
  const char* cache = std::getenv("FSQ_CACHE");
  const char* home = std::getenv("HOME");
  std::filesystem::path root =
      cache && *cache ? std::filesystem::path(cache) : std::filesystem::path(home ? home : "/root") / ".cache" / "fsq";
  return root / "models" / "smollm2-135m" / "SmolLM2-135M-Instruct.Q4_1.gguf";
}

// The f32 Hugging Face folder fetch-model.sh converts the GGUF into (next to it).
inline std::filesystem::path smollm2_hf() { return smollm2_gguf().parent_path() / "hf"; }

// How to get the fixtures, for the messages.
inline constexpr const char* kHowToStageShared =
    "stage ../shared (models/stories260K, models/llama2-tokenizer, data/tinystories, data/wikitext-2-raw)";
inline constexpr const char* kHowToFetchSmolLM2 = "run scripts/fetch-model.sh smollm2-135m to fetch SmolLM2-135M";

// True when a missing fixture must fail the test rather than skip it: the environment
// variable CI is set to anything but "", "0" or "false" (any case), as CI services set it.
inline bool fixture_missing_is_failure() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  std::string v(ci);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return !v.empty() && v != "0" && v != "false";
}

}  // namespace fsq::testing

// Ends the calling test (or SetUp) when the path `fixture` does not exist: skipped with
// "<path> absent: <how>", or failed with "<path> absent under CI: <how>" when
// fixture_missing_is_failure(). Use it in a function returning void, like GTEST_SKIP; `how`
// says how to get the fixture.
#define FSQ_REQUIRE_FIXTURE(fixture, how)                                                    \
  do {                                                                                      \
    const std::filesystem::path fsq_fixture_path_(fixture);                                \
    if (!std::filesystem::exists(fsq_fixture_path_)) {                                      \
      if (::fsq::testing::fixture_missing_is_failure()) {                                   \
        GTEST_FAIL() << fsq_fixture_path_.string() << " absent under CI: " << (how);        \
      } else {                                                                              \
        GTEST_SKIP() << fsq_fixture_path_.string() << " absent: " << (how);                 \
      }                                                                                     \
    }                                                                                       \
  } while (0)

// The SmolLM2-135M GGUF (scripts/fetch-model.sh smollm2-135m).
#define FSQ_REQUIRE_SMOLLM2() FSQ_REQUIRE_FIXTURE(::fsq::testing::smollm2_gguf(), ::fsq::testing::kHowToFetchSmolLM2)

// The f32 Hugging Face folder converted from it.
#define FSQ_REQUIRE_SMOLLM2_HF() \
  FSQ_REQUIRE_FIXTURE(::fsq::testing::smollm2_hf() / "model.safetensors", ::fsq::testing::kHowToFetchSmolLM2)

// A file or folder under ../shared, e.g. FSQ_REQUIRE_SHARED("models/stories260K/tokenizer.model").
#define FSQ_REQUIRE_SHARED(rel) FSQ_REQUIRE_FIXTURE(::fsq::testing::shared_dir() / (rel), ::fsq::testing::kHowToStageShared)

// The stories260K model (weights and tokenizer) and the TinyStories validation text.
#define FSQ_REQUIRE_STORIES260K()                                                                           \
  do {                                                                                                      \
    FSQ_REQUIRE_FIXTURE(::fsq::testing::stories260k_dir() / "model.safetensors", ::fsq::testing::kHowToStageShared); \
    FSQ_REQUIRE_FIXTURE(::fsq::testing::stories260k_dir() / "tokenizer.model", ::fsq::testing::kHowToStageShared);   \
    FSQ_REQUIRE_FIXTURE(::fsq::testing::tinystories_val(), ::fsq::testing::kHowToStageShared);                      \
  } while (0)
