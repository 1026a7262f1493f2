#include "tiny_gguf.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf/gguf_writer.h"

namespace fsq::clitest {
namespace {

constexpr int64_t kHidden = 32, kFfn = 48, kLayers = 2, kHeads = 4, kKvHeads = 2, kHeadDim = kHidden / kHeads;

template <class T>
GgufValue numbers(GgufType type, const std::vector<T>& values) {
  std::vector<std::byte> raw(values.size() * sizeof(T));
  std::memcpy(raw.data(), values.data(), raw.size());
  return GgufValue{GgufArray(type, values.size(), std::move(raw), {}, {})};
}

// "<unk>", "<s>", "</s>", then letters, "▁"-prefixed letters and digits: 64 pieces.
std::vector<std::string> tokens() {
  std::vector<std::string> t = {"<unk>", "<s>", "</s>", "\xe2\x96\x81"};
  for (char c = 'a'; c <= 'z'; ++c) t.push_back(std::string(1, c));
  for (char c = 'a'; c <= 'z'; ++c) t.push_back("\xe2\x96\x81" + std::string(1, c));
  for (char c = '0'; c <= '6'; ++c) t.push_back(std::string(1, c));
  return t;
}

}  // namespace

void write_tiny_llama_gguf(const std::filesystem::path& path) {
  const std::vector<std::string> vocab = tokens();
  const auto n_vocab = static_cast<int64_t>(vocab.size());
  GgufWriter w;
  w.set("general.architecture", GgufValue{std::string("llama")});
  w.set("llama.block_count", GgufValue{static_cast<uint32_t>(kLayers)});
  w.set("llama.context_length", GgufValue{uint32_t{128}});
  w.set("llama.embedding_length", GgufValue{static_cast<uint32_t>(kHidden)});
  w.set("llama.feed_forward_length", GgufValue{static_cast<uint32_t>(kFfn)});
  w.set("llama.attention.head_count", GgufValue{static_cast<uint32_t>(kHeads)});
  w.set("llama.attention.head_count_kv", GgufValue{static_cast<uint32_t>(kKvHeads)});
  w.set("llama.attention.layer_norm_rms_epsilon", GgufValue{1e-5f});
  w.set("llama.rope.freq_base", GgufValue{10000.0f});
  w.set("tokenizer.ggml.model", GgufValue{std::string("llama")});
  w.set("tokenizer.ggml.tokens", GgufValue{GgufArray(GgufType::STRING, vocab.size(), {}, vocab, {})});
  std::vector<float> scores(vocab.size());
  std::vector<int32_t> types(vocab.size(), 1);  // normal
  for (size_t i = 0; i < vocab.size(); ++i) scores[i] = -static_cast<float>(i);
  types[0] = 2;             // unknown
  types[1] = types[2] = 3;  // control
  w.set("tokenizer.ggml.scores", numbers(GgufType::FLOAT32, scores));
  w.set("tokenizer.ggml.token_type", numbers(GgufType::INT32, types));
  w.set("tokenizer.ggml.bos_token_id", GgufValue{uint32_t{1}});
  w.set("tokenizer.ggml.eos_token_id", GgufValue{uint32_t{2}});

  // ggml order: dims[0] is the input (contiguous) dimension.
  auto add = [&](const std::string& name, std::vector<int64_t> dims) { w.add_tensor({name, std::move(dims), GgmlType::F32}); };
  add("token_embd.weight", {kHidden, n_vocab});
  add("output_norm.weight", {kHidden});
  add("output.weight", {kHidden, n_vocab});
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_norm.weight", {kHidden});
    add(b + "ffn_norm.weight", {kHidden});
    add(b + "attn_q.weight", {kHidden, kHeads * kHeadDim});
    add(b + "attn_k.weight", {kHidden, kKvHeads * kHeadDim});
    add(b + "attn_v.weight", {kHidden, kKvHeads * kHeadDim});
    add(b + "attn_output.weight", {kHeads * kHeadDim, kHidden});
    add(b + "ffn_gate.weight", {kHidden, kFfn});
    add(b + "ffn_up.weight", {kHidden, kFfn});
    add(b + "ffn_down.weight", {kFfn, kHidden});
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> weight(0.0f, 0.2f);
  w.write(path, [&](size_t i, std::span<std::byte> out) {
    const bool norm = w.tensors()[i].name.find("norm") != std::string::npos;
    for (size_t at = 0; at + sizeof(float) <= out.size(); at += sizeof(float)) {
      const float v = norm ? 1.0f : weight(rng);
      std::memcpy(out.data() + at, &v, sizeof v);
    }
  });
}

}  // namespace fsq::clitest
