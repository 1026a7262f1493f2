// Where tests find fixtures that are fetched rather than staged.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace fsq::testing {

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

}  // namespace fsq::testing

// Skips the test with the reason when the SmolLM2 GGUF has not been fetched.
#define FSQ_REQUIRE_SMOLLM2()                                                                  \
  do {                                                                                         \
    if (!std::filesystem::exists(::fsq::testing::smollm2_gguf()))                              \
      GTEST_SKIP() << ::fsq::testing::smollm2_gguf().string()                                  \
                   << " absent; run scripts/fetch-model.sh smollm2-135m to fetch SmolLM2-135M"; \
  } while (0)
