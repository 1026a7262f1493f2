// A tiny LLaMA GGUF file (2 layers, hidden 32, vocabulary 64, a SentencePiece-style "llama"
// tokenizer, random F32 weights) that fsq convert turns into a Hugging Face folder, for tests
// that need a GGUF input without the SmolLM2 download.
#pragma once

#include <filesystem>

namespace fsq::clitest {

void write_tiny_llama_gguf(const std::filesystem::path& path);

}  // namespace fsq::clitest
