// DeviceDecoder (decode_model.h): the spec's weights uploaded to device 0 as they are, the
// step of decode_step.h on the ops' launchers, captured once in a CUDA graph and replayed.
// Host work per step: the ids and the position into device memory, one graph launch, the
// logits back.
#include <cuda_runtime.h>

#include <cstring>
#include <utility>
#include <vector>

#include "common/half.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/decode_step.h"
#include "runtime/cuda/gemv_common.cuh"

namespace fsq::cuda {
namespace {

// The launchers of decode_ops.h and quant_gemv.h on one stream, with decode_step.h's names.
struct DeviceOps {
  cudaStream_t stream = nullptr;

  std::string embed(const DecodeLinear& w, const int32_t* ids, int64_t batch, float* h) {
    if (w.kind == DecodeLinear::Kind::Half)
      return embed_half_rows(w.half.data, w.half.rows, w.half.cols, ids, batch, h, stream);
    return embed_uniform_rows(w.uniform, ids, batch, h, stream);
  }
  std::string rms_norm(const float* x, const float* w, int64_t rows, int64_t cols, float eps, uint16_t* y,
                       ActType act) {
    return rms_norm_to_act(x, w, rows, cols, eps, y, act, stream);
  }
  std::string gemv(const DecodeLinear& w, const uint16_t* x, int64_t m, int64_t x_stride, uint16_t* y,
                   int64_t y_stride, ActType act) {
    switch (w.kind) {
      case DecodeLinear::Kind::Lut: return lut_gemv(w.lut, x, m, x_stride, y, y_stride, act, stream);
      case DecodeLinear::Kind::Half: return dense_gemv_f16(w.half, x, m, x_stride, y, y_stride, act, stream);
      default: return uniform_gemv(w.uniform, x, m, x_stride, y, y_stride, act, stream);
    }
  }
  std::string rope_append(const AttentionShape& s, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                          int64_t stride, ActType act, const float* cos, const float* sin, const int32_t* pos,
                          float* q_out, float* k_cache, float* v_cache) {
    return cuda::rope_append(s, q, k, v, stride, act, cos, sin, pos, q_out, k_cache, v_cache, stream);
  }
  std::string attention(const AttentionShape& s, const float* q, const float* k_cache, const float* v_cache,
                        const int32_t* pos, float scale, uint16_t* out, ActType act) {
    return decode_attention(s, q, k_cache, v_cache, pos, scale, out, act, stream);
  }
  std::string silu_mul(const uint16_t* gate, const uint16_t* up, int64_t rows, int64_t cols, int64_t stride,
                       uint16_t* out, ActType act) {
    return silu_mul_act(gate, up, rows, cols, stride, out, act, stream);
  }
  std::string add(float* h, const uint16_t* y, int64_t count, ActType act) { return add_act(h, y, count, act, stream); }
};

class DeviceDecoder final : public Decoder {
 public:
  DeviceDecoder(int64_t batch, int64_t capacity, ActType act, bool use_graph) : use_graph_(use_graph) {
    shape_.batch = batch, shape_.capacity = capacity, shape_.act = act;
  }
  DeviceDecoder(const DeviceDecoder&) = delete;
  DeviceDecoder& operator=(const DeviceDecoder&) = delete;

  ~DeviceDecoder() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    if (ops_.stream) cudaStreamDestroy(ops_.stream);
    if (staging_) cudaFreeHost(staging_);
    for (void* p : allocations_) cudaFree(p);
  }

  // Uploads the weights and allocates the buffers; "" or the CUDA error.
  std::string init(const DecodeModelSpec& host) {
    const int64_t batch = shape_.batch, capacity = shape_.capacity;
    spec_ = host;
    std::string e;
    if (!(e = upload_linear(host.embedding, &spec_.embedding)).empty()) return e;
    const bool tied = host.head.kind == host.embedding.kind && host.head.data() == host.embedding.data();
    if (tied)
      spec_.head = spec_.embedding;
    else if (!(e = upload_linear(host.head, &spec_.head)).empty())
      return e;
    if (!(e = upload(host.final_norm, host.hidden, &spec_.final_norm)).empty()) return e;
    for (size_t i = 0; i < host.layers.size(); ++i) {
      const DecodeLayerSpec& from = host.layers[i];
      DecodeLayerSpec& to = spec_.layers[i];
      for (auto [src, dst] : {std::pair{&from.q, &to.q}, std::pair{&from.k, &to.k}, std::pair{&from.v, &to.v},
                              std::pair{&from.o, &to.o}, std::pair{&from.gate, &to.gate},
                              std::pair{&from.up, &to.up}, std::pair{&from.down, &to.down}})
        if (!(e = upload_linear(*src, dst)).empty()) return e;
      if (!(e = upload(from.input_norm, host.hidden, &to.input_norm)).empty()) return e;
      if (!(e = upload(from.post_attn_norm, host.hidden, &to.post_attn_norm)).empty()) return e;
    }
    // Only the positions the cache holds.
    if (!(e = upload(host.rope_cos, capacity * host.head_dim, &spec_.rope_cos)).empty()) return e;
    if (!(e = upload(host.rope_sin, capacity * host.head_dim, &spec_.rope_sin)).empty()) return e;

    const detail::BufferSizes n = detail::buffer_sizes(host, batch, capacity);
    if (!(e = zeroed(n.h, &buffers_.h)).empty() || !(e = zeroed(n.x, &buffers_.x)).empty() ||
        !(e = zeroed(n.qkv, &buffers_.qkv)).empty() || !(e = zeroed(n.q, &buffers_.q)).empty() ||
        !(e = zeroed(n.attn, &buffers_.attn)).empty() || !(e = zeroed(n.proj, &buffers_.proj)).empty() ||
        !(e = zeroed(n.gate_up, &buffers_.gate_up)).empty() || !(e = zeroed(n.mlp, &buffers_.mlp)).empty() ||
        !(e = zeroed(n.logits, &buffers_.logits)).empty())
      return e;
    buffers_.k_cache.assign(host.layers.size(), nullptr);
    buffers_.v_cache.assign(host.layers.size(), nullptr);
    for (size_t i = 0; i < host.layers.size(); ++i)
      if (!(e = zeroed(n.cache, &buffers_.k_cache[i])).empty() || !(e = zeroed(n.cache, &buffers_.v_cache[i])).empty())
        return e;
    int32_t* ids_and_pos = nullptr;  // [batch] ids, then the position
    if (!(e = zeroed(batch + 1, &ids_and_pos)).empty()) return e;
    buffers_.ids = ids_and_pos;
    buffers_.pos = ids_and_pos + batch;
    buffers_.cos = spec_.rope_cos;
    buffers_.sin = spec_.rope_sin;
    logits_bytes_ = static_cast<size_t>(n.logits) * sizeof(uint16_t);
    // Pinned staging: the ids and position in, the logits out, copied asynchronously.
    if (!(e = detail::error_text(cudaMallocHost(&staging_, (batch + 1) * sizeof(int32_t) + logits_bytes_))).empty())
      return e;
    if (!(e = detail::error_text(cudaStreamCreateWithFlags(&ops_.stream, cudaStreamNonBlocking))).empty()) return e;
    return detail::error_text(cudaDeviceSynchronize());
  }

  std::string step(const int32_t* ids, int64_t pos, float* logits) override {
    const int64_t batch = shape_.batch;
    if (pos < 0 || pos >= shape_.capacity) return "position " + std::to_string(pos) + " outside the cache";
    for (int64_t b = 0; b < batch; ++b)
      if (ids[b] < 0 || ids[b] >= spec_.vocab) return "token id " + std::to_string(ids[b]) + " outside the vocabulary";
    auto* staged = static_cast<int32_t*>(staging_);
    std::memcpy(staged, ids, static_cast<size_t>(batch) * sizeof(int32_t));
    staged[batch] = static_cast<int32_t>(pos);
    std::string e = detail::error_text(cudaMemcpyAsync(const_cast<int32_t*>(buffers_.ids), staged,
                                                       (batch + 1) * sizeof(int32_t), cudaMemcpyHostToDevice,
                                                       ops_.stream));
    if (!e.empty()) return e;
    if (!use_graph_) {
      e = detail::run_decode_step(spec_, buffers_, shape_, ops_);
    } else {
      if (exec_ == nullptr && !(e = capture()).empty()) return e;
      e = detail::error_text(cudaGraphLaunch(exec_, ops_.stream));
    }
    if (!e.empty()) return e;
    uint16_t* out = reinterpret_cast<uint16_t*>(staged + batch + 1);
    e = detail::error_text(cudaMemcpyAsync(out, buffers_.logits, logits_bytes_, cudaMemcpyDeviceToHost, ops_.stream));
    if (e.empty()) e = detail::error_text(cudaStreamSynchronize(ops_.stream));
    if (!e.empty()) return e;
    for (size_t i = 0; i < logits_bytes_ / sizeof(uint16_t); ++i) logits[i] = from_act_bits(out[i], shape_.act);
    return "";
  }

 private:
  // Records the step's launches into graph_ and instantiates it.
  std::string capture() {
    std::string e = detail::error_text(cudaStreamBeginCapture(ops_.stream, cudaStreamCaptureModeRelaxed));
    if (!e.empty()) return e;
    const std::string ops = detail::run_decode_step(spec_, buffers_, shape_, ops_);
    e = detail::error_text(cudaStreamEndCapture(ops_.stream, &graph_));
    if (!ops.empty()) return "while capturing the decode step: " + ops;
    if (!e.empty()) return e;
    return detail::error_text(cudaGraphInstantiate(&exec_, graph_, 0));
  }

  template <class T>
  std::string zeroed(int64_t count, T** out) {
    void* p = nullptr;
    const size_t bytes = static_cast<size_t>(count) * sizeof(T);
    std::string e = detail::error_text(cudaMalloc(&p, bytes));
    if (!e.empty()) return e;
    allocations_.push_back(p);
    *out = static_cast<T*>(p);
    return detail::error_text(cudaMemset(p, 0, bytes));
  }

  template <class T>
  std::string upload(const T* host, int64_t count, const T** out) {
    T* p = nullptr;
    if (std::string e = zeroed(count, &p); !e.empty()) return e;
    *out = p;
    return detail::error_text(cudaMemcpy(p, host, static_cast<size_t>(count) * sizeof(T), cudaMemcpyHostToDevice));
  }

  std::string upload_linear(const DecodeLinear& host, DecodeLinear* dev) {
    *dev = host;
    if (host.kind == DecodeLinear::Kind::Half) return upload(host.half.data, host.half.rows * host.half.cols, &dev->half.data);
    if (host.kind == DecodeLinear::Kind::Uniform) return upload_view(host.uniform, &dev->uniform);
    const cpu::LutWeightsView& w = host.lut;
    cpu::LutWeightsView& d = dev->lut;
    std::string e = upload(w.words, w.rows * w.words_per_row, &d.words);
    if (e.empty()) e = upload(w.lut, w.rows << w.bits, &d.lut);
    if (e.empty() && w.row_ptr != nullptr) e = upload(w.row_ptr, w.rows + 1, &d.row_ptr);
    if (e.empty() && w.nnz > 0) e = upload(w.val, w.nnz, &d.val);
    if (e.empty() && w.nnz > 0) {
      const int64_t col_bytes = w.nnz * (w.col_type == cpu::LutColType::U16 ? 2 : 4);
      const uint8_t* col = nullptr;
      e = upload(static_cast<const uint8_t*>(w.col), col_bytes, &col);
      d.col = col;
    }
    return e;
  }

  std::string upload_view(const cpu::UniformWeightsView& host, cpu::UniformWeightsView* dev) {
    *dev = host;
    const int64_t groups = host.rows * (host.cols / host.group_cols);
    std::string e = upload(host.words, host.rows * host.words_per_row, &dev->words);
    if (e.empty()) e = upload(host.scales, groups, &dev->scales);
    if (e.empty() && host.zeros != nullptr) e = upload(host.zeros, groups, &dev->zeros);
    return e;
  }

  bool use_graph_;
  detail::StepShape shape_;
  DecodeModelSpec spec_;  // device pointers
  detail::StepBuffers buffers_;
  DeviceOps ops_;
  void* staging_ = nullptr;
  size_t logits_bytes_ = 0;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<void*> allocations_;
};

}  // namespace

std::string make_device_decoder(const DecodeModelSpec& spec, int64_t batch, int64_t capacity, ActType act,
                                bool use_graph, std::unique_ptr<Decoder>* out) {
  if (std::string why = decode_spec_problem(spec, batch, capacity); !why.empty()) return why;
  if (device_count() == 0) return "no GPU: " + describe();
  auto decoder = std::make_unique<DeviceDecoder>(batch, capacity, act, use_graph);
  if (std::string e = decoder->init(spec); !e.empty()) return "uploading the model: " + e;
  *out = std::move(decoder);
  return "";
}

}  // namespace fsq::cuda
